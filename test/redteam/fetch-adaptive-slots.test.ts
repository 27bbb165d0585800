// Red team (fetch): README "adaptive — Alone, the fetch discovers the rate; with limit/limiter, that
// limit is the ceiling and the starting rate", combined with "maxConcurrent … alone or with
// limit/limiter". Reference: adding a concurrency cap that is never reached (bodies end at once)
// must not change when requests are sent.
import { describe, expect, test } from "vitest";
import { createThrottledFetch, ManualClock } from "../../src/index.ts";

const flush = async (turns = 10) => {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
};

async function sendTimes(maxConcurrent: number | undefined): Promise<number[]> {
  const clock = new ManualClock();
  const sent: number[] = [];
  const api = createThrottledFetch({
    limit: 100,
    interval: 1000,
    adaptive: true,
    ...(maxConcurrent !== undefined && { maxConcurrent }),
    clock,
    fetch: async () => {
      sent.push(clock.now());
      return new Response(null, { status: 204 }); // no body: the slot frees at the headers
    },
  });
  const calls = Array.from({ length: 20 }, () => api("https://a.test/x"));
  for (let i = 0; i < 300 && sent.length < 20; i++) {
    await flush(3);
    await clock.advance(100);
  }
  await Promise.all(calls.slice(0, sent.length));
  return sent;
}

describe("red team: adaptive + maxConcurrent", () => {
  // Told 100/s, 20 calls start at the told rate: spaced 10 ms apart until the server confirms the
  // limit (adaptive spreads a told window's burst; README "Told a limit"), so all 20 leave within
  // 200 ms (the clock steps 100 ms) — from `initialRate`, 1/s, they would take 19 s.
  test("control: adaptive with limit 100/s sends 20 calls at the told rate (the told limit is the starting rate)", async () => {
    const times = await sendTimes(undefined);
    expect(times).toHaveLength(20);
    expect(Math.max(...times)).toBeLessThanOrEqual(200);
  });

  test("adding maxConcurrent: 10 (never full: bodies end at once) keeps the told limit as the starting rate", async () => {
    // Regression (was paced from adaptive's `initialRate`, 1/s, the told limit lost). Root cause: src/http/attempts.ts asks `config.ceiling(limiter)` of the
    // limiter the attempt goes through, which with maxConcurrent is the slots combination
    // (src/http/slots.ts); `toldRate` (src/adaptive/rates.ts) finds no limit/interval on a
    // CombinedLimiter and answers Infinity, i.e. "nothing told": discovery from 1 request/s.
    // Fixed: the ceiling is asked of the rate limiter inside the combination (slots.ts `rateOf`).
    const times = await sendTimes(10);
    expect(times).toHaveLength(20);
    expect(Math.max(...times)).toBeLessThanOrEqual(200);
    expect(times).toEqual(await sendTimes(undefined)); // the cap never reached changes nothing
  });
});

describe("red team: sluice/undici adaptive + maxConcurrent", () => {
  test("throttle({ limit: 100, adaptive, maxConcurrent: 10 }) lets 10 requests be in flight at once", async () => {
    // The server holds every response until 10 requests are in flight (or 5 s passed, a safety
    // release). Told 100/s, 10 slots: all 10 go at once. Regression: the learned rate started at
    // adaptive's initialRate (1/s) — src/integrations/undici/throttle.ts read `toldRate(limiter)`
    // of the slots combination, which has no limit/interval (same root cause as the fetch).
    const { createServer } = await import("node:http");
    const { Agent, fetch: ufetch } = await import("undici");
    const { throttle } = await import("../../src/undici.ts");
    const held: (() => void)[] = [];
    let maxHeld = 0;
    let safety: ReturnType<typeof setTimeout> | undefined;
    const releaseAll = () => {
      clearTimeout(safety);
      while (held.length > 0) held.shift()!();
    };
    const server = createServer((req, res) => {
      req.resume();
      held.push(() => res.end("ok"));
      maxHeld = Math.max(maxHeld, held.length);
      if (held.length >= 10) releaseAll();
      else if (safety === undefined) safety = setTimeout(() => (safety = undefined, releaseAll()), 5000);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as import("node:net").AddressInfo).port}`;
    const agent = new Agent().compose(throttle({ limit: 100, interval: 1000, adaptive: true, maxConcurrent: 10 }));
    try {
      const first = await Promise.all(Array.from({ length: 10 }, async () => (await ufetch(`${url}/x`, { dispatcher: agent })).text()));
      expect(first).toHaveLength(10);
      expect(maxHeld).toBe(10);
    } finally {
      releaseAll();
      await agent.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }, 60_000);
});
