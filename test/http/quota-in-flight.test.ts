/**
 * The proactive pause with several callers, against a real node:http fixed-window server that
 * reports its quota (X-RateLimit-Remaining and -Reset-After). `remaining` is a snapshot taken when
 * the server answered: requests still in flight will consume it, so the client pauses until the
 * reset as soon as remaining ≤ its own other requests in flight. Counted server-side: no 429.
 */
import { afterEach, expect, test } from "vitest";
import { createThrottledFetch } from "../../src/http/throttled-fetch.ts";
import { SmoothLimiter } from "../../src/limiters/smooth.ts";
import { throttle } from "../../src/undici.ts";
import { startServer, type TestServer } from "./support/servers.ts";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const LIMIT = 6;
const WINDOW = 250;

/** A fixed-window server: LIMIT requests per WINDOW ms (aligned to its start), 429 beyond; reports its quota. */
async function fixedWindowServer(): Promise<{ refused: () => number; served: () => number }> {
  const start = performance.now();
  let window = -1;
  let used = 0;
  let refused = 0;
  let served = 0;
  server = await startServer((_req, res) => {
    const now = performance.now();
    const index = Math.floor((now - start) / WINDOW);
    if (index !== window) {
      window = index;
      used = 0;
    }
    const resetAfter = ((start + (index + 1) * WINDOW - now) / 1000).toFixed(3);
    if (used >= LIMIT) {
      refused++;
      res.writeHead(429, { "retry-after": "1", "x-ratelimit-remaining": "0", "x-ratelimit-reset-after": resetAfter });
      res.end("slow down");
      return;
    }
    used++;
    served++;
    // A little server latency, so that several requests are in flight when a snapshot is taken.
    setTimeout(() => {
      res.writeHead(200, { "x-ratelimit-limit": String(LIMIT), "x-ratelimit-remaining": String(LIMIT - used), "x-ratelimit-reset-after": resetAfter });
      res.end("ok");
    }, 5);
  });
  return { refused: () => refused, served: () => served };
}

test("createThrottledFetch: 4 concurrent callers against a fixed window that reports its quota get no 429", async () => {
  const counts = await fixedWindowServer();
  const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 10_000 }), retry: { limit: 0 } });
  let next = 0;
  const statuses: number[] = [];
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (next < 32) {
      next++;
      const response = await api(`${server!.url}/item`);
      await response.text();
      statuses.push(response.status);
    }
  }));
  expect(statuses).toHaveLength(32);
  expect(counts.refused()).toBe(0);
  expect(counts.served()).toBe(32);
});

test("sluice/undici: 4 concurrent callers against the same server get no 429", async () => {
  const { Agent, request } = await import("undici");
  const counts = await fixedWindowServer();
  const agent = new Agent().compose(throttle({ limiter: new SmoothLimiter({ limit: 10_000 }) }));
  let next = 0;
  try {
    await Promise.all(Array.from({ length: 4 }, async () => {
      while (next < 32) {
        next++;
        const response = await request(`${server!.url}/item`, { dispatcher: agent });
        await response.body.text();
      }
    }));
  } finally {
    await agent.close();
  }
  expect(counts.refused()).toBe(0);
  expect(counts.served()).toBe(32);
});

test("readServerSignals: a remaining quota no larger than the other requests in flight counts as exhausted", async () => {
  const { readServerSignals } = await import("../../src/http/throttle.ts");
  const now = Date.UTC(2025, 0, 15);
  const read = (remaining: number, inFlight: number) =>
    readServerSignals(
      { status: 200, headers: new Headers({ "x-ratelimit-remaining": String(remaining), "x-ratelimit-reset-after": "2" }) },
      { now, lenient: true, rateLimitHeaders: true, inFlight },
    ).exhausted;
  expect(read(0, 0)).toEqual({ resetMs: 2000, source: "x-ratelimit" });
  expect(read(3, 3)).toEqual({ resetMs: 2000, source: "x-ratelimit" });
  expect(read(3, 5)).toEqual({ resetMs: 2000, source: "x-ratelimit" });
  expect(read(4, 3)).toBeUndefined();
  expect(read(1, 0)).toBeUndefined();
});

test("startFlight counts the other requests in flight per limiter, and end() is idempotent", async () => {
  const { startFlight } = await import("../../src/http/in-flight.ts");
  const a = {};
  const b = {};
  const first = startFlight(a);
  const second = startFlight(a);
  const other = startFlight(b);
  expect(first.others()).toBe(1);
  expect(other.others()).toBe(0);
  second.end();
  second.end();
  expect(first.others()).toBe(0);
  first.end();
  expect(startFlight(a).others()).toBe(0);
});

test("in virtual time, 4 callers on a reported quota with answers back to back: a few 429s remain (pinned, a known gap)", async () => {
  // Two answers read before either caller sends again can each see the same one request of room
  // (red-team, 2026-11-27). Pinned at today's figure so a change is noticed and the README updated:
  // latency 0 never races; 0–2 and 0–5 ms do. The in-memory count still prevents nearly all of them.
  const { ManualClock } = await import("../../src/clock.ts");
  const { createSimulatedFetch, FixedWindowServer, serveModel } = await import("../../src/testing.ts");
  let refused = 0;
  let requests = 0;
  let exhausted = 0;
  for (let seed = 1; seed <= 20; seed++) {
    for (const latency of [0, 2, 5]) {
      const clock = new ManualClock();
      const server = new FixedWindowServer({ limit: 6, interval: 250, headers: ["x-ratelimit"] });
      const fetch = createSimulatedFetch({ server: serveModel(server), clock, latency: { min: 0, max: latency }, seed });
      const api = createThrottledFetch({
        limiter: new SmoothLimiter({ limit: 10_000, clock }), retry: { limit: 0 }, fetch, clock, wallClock: () => clock.now(),
        onThrottle: (e) => void (e.reason === "quota-exhausted" && exhausted++),
      });
      let next = 0;
      const done = Promise.all(Array.from({ length: 4 }, async () => {
        while (next < 64) {
          next++;
          const response = await api("https://api.example.com/items");
          requests++;
          if (response.status === 429) refused++;
          await response.text();
        }
      }));
      await clock.runAll(100_000);
      await done;
    }
  }
  expect(requests).toBe(3840);
  expect(exhausted).toBeGreaterThan(300); // the proactive pause is what runs here
  expect(refused).toBeGreaterThan(0);
  expect(refused).toBeLessThanOrEqual(35);
});
