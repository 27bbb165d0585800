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
