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

test("in virtual time, 4 callers on a reported quota: no 429 when responses come back to back (red-team, 2026-11-27)", async () => {
  // Before the fix, two responses read back to back could each see the same one request of room,
  // and both callers sent: 35 × 429 in these 3840 requests. Latency 0 never raced; 0–2 and 0–5 ms did.
  const { ManualClock } = await import("../../src/clock.ts");
  const { createSimulatedFetch, FixedWindowServer, serveModel } = await import("../../src/testing.ts");
  let refused = 0;
  let requests = 0;
  let pauses = 0;
  let reported = 0;
  for (let seed = 1; seed <= 20; seed++) {
    for (const latency of [0, 2, 5]) {
      const clock = new ManualClock();
      const server = new FixedWindowServer({ limit: 6, interval: 250, headers: ["x-ratelimit"] });
      const fetch = createSimulatedFetch({ server: serveModel(server), clock, latency: { min: 0, max: latency }, seed });
      const limiter = new SmoothLimiter({ limit: 10_000, clock });
      limiter.events.addEventListener("pause", () => pauses++);
      const api = createThrottledFetch({
        limiter, retry: { limit: 0 }, fetch, clock, wallClock: () => clock.now(), onThrottle: () => reported++,
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
  expect(refused).toBe(0);
  // Both pauses are reached: on a response that reports the quota used up (told to onThrottle), and
  // at the send that takes the last room a response reported (a limiter pause, no response to show).
  expect(reported).toBeGreaterThan(100);
  expect(pauses - reported).toBeGreaterThan(100);
});

test("in-flight: requests sent after an answer count against it; the send that takes the last reported room pauses until the reset", async () => {
  const { noteSpare, startFlight } = await import("../../src/http/in-flight.ts");
  const limiter = {};
  const answered = startFlight(limiter, 0);
  const other = startFlight(limiter, 0);
  answered.end();
  expect(answered.others()).toBe(1); // `other`, in flight when it ended
  other.end();
  expect(answered.others()).toBe(1); // still counted: it may have reached the server after the snapshot
  startFlight(limiter, 1).end();
  expect(answered.others()).toBe(2); // sent since: it was sent without knowing this answer
  // A report of 2 requests of room until t=250: the second send after it takes the last.
  noteSpare(limiter, 2, 250, 10);
  expect(startFlight(limiter, 20).quotaOut).toBe(0);
  expect(startFlight(limiter, 30).quotaOut).toBe(220);
  expect(startFlight(limiter, 40).quotaOut).toBe(0); // taken: the pause holds the rest
  // The same window reported again with more room (an older snapshot read late): the smaller room stays.
  noteSpare(limiter, 1, 300, 100);
  noteSpare(limiter, 5, 310, 101);
  expect(startFlight(limiter, 102).quotaOut).toBe(208);
  // Another window (its reset well past the held one) replaces it; a room past its reset is forgotten.
  noteSpare(limiter, 1, 400, 200);
  noteSpare(limiter, 3, 700, 450);
  expect(startFlight(limiter, 460).quotaOut).toBe(0);
  expect(startFlight(limiter, 800).quotaOut).toBe(0);
  expect(startFlight(limiter, 801).quotaOut).toBe(0);
});
