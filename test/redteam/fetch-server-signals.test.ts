// Red team (fetch): the retry rule's hard limits and server signals, in virtual time, and attempt
// timeouts against a real server that never answers (lean vs full vs caller signal).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, test } from "vitest";
import { createThrottledFetch, ManualClock, RetryBudget, TimeoutError, WindowLimiter } from "../../src/index.ts";
import { resolveOptions } from "../../src/http/options.ts";
import { throttledFetchOf } from "../../src/http/throttled-fetch.ts";

const flush = async (turns = 10) => {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
};

describe("red team: server delays", () => {
  test("Retry-After above maxRetryAfter: the caller gets the 429 at once, nobody is paused, onThrottle says paused 0", async () => {
    const clock = new ManualClock();
    const sent: string[] = [];
    const throttles: { delay: number; paused: number }[] = [];
    const api = createThrottledFetch({
      limiter: new WindowLimiter({ limit: 100, interval: 1000, clock }),
      clock,
      onThrottle: ({ delay, paused }) => void throttles.push({ delay, paused }),
      fetch: async (input) => {
        sent.push(`${clock.now()} ${new URL(String(input)).pathname}`);
        return String(input).endsWith("/long") ? new Response("x", { status: 429, headers: { "Retry-After": "3600" } }) : new Response("ok");
      },
    });
    const r = await api("https://s.test/long");
    expect(r.status).toBe(429);
    expect(await r.text()).toBe("x");
    expect((await api("https://s.test/next")).status).toBe(200);
    expect(sent).toEqual(["0 /long", "0 /next"]);
    expect(throttles).toEqual([{ delay: 3_600_000, paused: 0 }]);
  });

  test("a 429 without any delay pauses everyone for the full backoff step, and the 429'd call waits just that", async () => {
    const clock = new ManualClock();
    const sent: string[] = [];
    let first = true;
    const api = createThrottledFetch({
      limiter: new WindowLimiter({ limit: 100, interval: 1000, clock }),
      clock,
      random: () => 0.99, // jitter must not apply to a throttled retry
      fetch: async (input) => {
        const path = new URL(String(input)).pathname;
        sent.push(`${clock.now()} ${path}`);
        if (first) {
          first = false;
          return new Response("x", { status: 429 });
        }
        return new Response("ok");
      },
    });
    const a = api("https://s.test/a");
    await flush();
    const b = api("https://s.test/b");
    for (let i = 0; i < 30; i++) {
      await flush(3);
      await clock.advance(100);
    }
    expect((await a).status).toBe(200);
    expect((await b).status).toBe(200);
    expect(sent).toEqual(["0 /a", "1000 /a", "1000 /b"]);
  });

  test("retry budget shared by two fetches: retries ≤ reserve + ratio × calls under a total failure", async () => {
    const clock = new ManualClock();
    const budget = new RetryBudget({ ratio: 0.2, reserve: 3 });
    let requests = 0;
    const options = {
      limiter: new WindowLimiter({ limit: 1000, interval: 1000, clock }),
      clock,
      random: () => 0,
      retry: { budget, limit: 5 },
      fetch: async () => (requests++, new Response("x", { status: 500 })),
    };
    const a = createThrottledFetch(options);
    const b = createThrottledFetch(options);
    const calls = 40;
    for (let i = 0; i < calls; i++) {
      const p = (i % 2 === 0 ? a : b)("https://s.test/x");
      for (let k = 0; k < 10; k++) await flush(1);
      await clock.advance(1);
      expect((await p).status).toBe(500);
    }
    const retries = requests - calls;
    expect(retries).toBeGreaterThan(3); // reach: the budget was spent, and refilled
    expect(retries).toBeLessThanOrEqual(3 + 0.2 * calls);
  });
});

describe("red team: attempt timeouts against a server that never answers", () => {
  const variants = ["lean", "full", "signal"] as const;
  for (const variant of variants) {
    test(`${variant}: GET retried after each timeout, then TimeoutError (scope attempt); POST not retried`, async () => {
      let arrivals = 0;
      let open = 0;
      const server = createServer((req) => {
        arrivals++;
        req.resume(); // never answers
      });
      server.on("connection", (socket) => {
        open++;
        socket.on("close", () => open--);
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      try {
        const options = { limit: 100, timeout: 150, random: () => 0, retry: { limit: 2, budget: false as const } };
        const api = variant === "full" ? throttledFetchOf(resolveOptions(options), true) : createThrottledFetch(options);
        const init = variant === "signal" ? { signal: new AbortController().signal } : {};
        const get = await api(`${url}/g`, init).then(() => undefined, (e: unknown) => e);
        expect(get).toBeInstanceOf(TimeoutError);
        expect([(get as TimeoutError).scope, (get as TimeoutError).attempts]).toEqual(["attempt", 3]);
        expect(arrivals).toBe(3);
        const post = await api(`${url}/p`, { ...init, method: "POST", body: "x" }).then(() => undefined, (e: unknown) => e);
        expect(post).toBeInstanceOf(TimeoutError);
        expect((post as TimeoutError).attempts).toBe(1);
        expect(arrivals).toBe(4);
        // (Sockets: Node's own fetch, aborted the same way without sluice, leaves 2 of these 4
        // connections open too — an undici matter, so no socket assertion here.)
        expect(open).toBeLessThanOrEqual(arrivals);
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    }, 20_000);
  }
});
