/**
 * Red team: `shouldRetry` answering `{ retryAfter }` (a server-timed retry) and `retry.pauseDimensions`,
 * against a real node:http server on 127.0.0.1, the limiters and retries in virtual time. The server
 * stamps every arrival with the virtual clock, so "nobody was sent during the pause" is counted where
 * it matters: at the server.
 */
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, expect, test } from "vitest";
import {
  combine,
  ConcurrencyLimiter,
  createThrottledFetch,
  KeyedLimiter,
  ManualClock,
  RetryBudget,
  WindowLimiter,
} from "../../src/index.ts";

let server: Server;
let origin = "";
let clock = new ManualClock();
let inFlight = 0;
let arrivals: { path: string; at: number }[] = [];
let answer: (path: string, seen: number) => { status: number; headers?: Record<string, string>; body?: string } = () => ({ status: 200 });

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? "/";
    inFlight++;
    const seen = arrivals.filter((a) => a.path === path).length;
    arrivals.push({ path, at: clock.now() });
    const a = answer(path, seen);
    res.writeHead(a.status, a.headers ?? {});
    res.end(a.body ?? "ok", () => inFlight--);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  origin = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function reset(): void {
  clock = new ManualClock();
  arrivals = [];
}

/** Real I/O and virtual time together: advance the clock only while the server holds no request. */
async function drive<T>(promise: Promise<T>): Promise<T> {
  let done = false;
  const settled = promise.finally(() => (done = true));
  settled.catch(() => {});
  for (let i = 0; i < 2000 && !done; i++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (!done && inFlight === 0 && clock.nextTimerAt !== undefined) await clock.advanceTo(clock.nextTimerAt);
  }
  return promise;
}

const body403 = JSON.stringify({ message: "You have exceeded a secondary rate limit" });

test("{ retryAfter } pauses the limiter: no other caller reaches the server before it ends; retried without budget; onThrottle told", async () => {
  reset();
  answer = (path, seen) => (path === "/a" && seen === 0 ? { status: 403, body: body403 } : { status: 200 });
  const throttles: { delay: number; paused: number; reason: string }[] = [];
  const others: Promise<Response>[] = [];
  let api!: typeof fetch;
  api = createThrottledFetch({
    limiter: new WindowLimiter({ limit: 100, interval: 1000, clock }),
    clock,
    wallClock: () => 1_700_000_000_000 + clock.now(),
    retry: {
      budget: new RetryBudget({ ratio: 0, reserve: 0 }),
      shouldRetry: ({ response }) => (response?.status === 403 ? { retryAfter: 30_000 } : undefined),
    },
    onThrottle: (e) => {
      throttles.push({ delay: e.delay, paused: e.paused, reason: e.reason });
      for (let i = 0; i < 3; i++) others.push(api(`${origin}/b`));
    },
  }) as typeof fetch;
  const first = await drive(api(`${origin}/a`));
  expect(first.status).toBe(200);
  await drive(Promise.all(others));
  expect(throttles).toEqual([{ delay: 30_000, paused: 30_000, reason: "throttled" }]);
  const a = arrivals.filter((x) => x.path === "/a");
  expect(a.map((x) => x.at)).toEqual([0, expect.any(Number)]);
  expect(a[1]!.at).toBeGreaterThanOrEqual(30_000);
  const b = arrivals.filter((x) => x.path === "/b");
  expect(b).toHaveLength(3);
  for (const x of b) expect(x.at).toBeGreaterThanOrEqual(30_000);
});

test("control: with the same empty budget, a plain `true` verdict on a 500 is NOT retried (the budget is real)", async () => {
  reset();
  answer = () => ({ status: 500 });
  const api = createThrottledFetch({
    limiter: new WindowLimiter({ limit: 100, interval: 1000, clock }),
    clock,
    retry: { budget: new RetryBudget({ ratio: 0, reserve: 0 }), shouldRetry: () => true },
  });
  const r = await drive(api(`${origin}/c`));
  expect(r.status).toBe(500);
  expect(arrivals.filter((x) => x.path === "/c")).toHaveLength(1);
});

test("{ retryAfter } past maxRetryAfter: the caller gets the response, nobody is paused", async () => {
  reset();
  answer = (path) => (path === "/a" ? { status: 403, body: body403 } : { status: 200 });
  const throttles: number[] = [];
  const api = createThrottledFetch({
    limiter: new WindowLimiter({ limit: 100, interval: 1000, clock }),
    clock,
    retry: { maxRetryAfter: 60_000, shouldRetry: ({ response }) => (response?.status === 403 ? { retryAfter: 120_000 } : undefined) },
    onThrottle: (e) => throttles.push(e.paused),
  });
  const r = await drive(api(`${origin}/a`));
  expect(r.status).toBe(403);
  expect(await r.text()).toBe(body403);
  const b = await drive(api(`${origin}/b`));
  expect(b.status).toBe(200);
  expect(arrivals).toEqual([{ path: "/a", at: 0 }, { path: "/b", at: 0 }]);
  expect(throttles.every((p) => p === 0)).toBe(true);
});

test("bad { retryAfter } values fail the call with an error naming the option and the value", async () => {
  for (const bad of [-1, Number.NaN, Infinity, "5"]) {
    reset();
    answer = () => ({ status: 403 });
    const api = createThrottledFetch({
      limiter: new WindowLimiter({ limit: 100, interval: 1000, clock }),
      clock,
      retry: { shouldRetry: () => ({ retryAfter: bad as number }) },
    });
    const error = await drive(api(`${origin}/x`)).then(() => undefined, (e: unknown) => e);
    expect(error, String(bad)).toBeInstanceOf(Error);
    expect(["TypeError", "RangeError"]).toContain((error as Error).name);
    expect((error as Error).message).toContain("retryAfter");
    expect((error as Error).message).toContain(String(bad));
  }
});

test("pauseDimensions: a 429 on resource A pauses A's requests only; B keeps the shared slots and reaches the server during A's pause", async () => {
  reset();
  answer = (path, seen) => (path === "/A" && seen === 0 ? { status: 429, headers: { "retry-after": "20" } } : { status: 200 });
  const slots = new ConcurrencyLimiter({ limit: 4, clock });
  const limiter = new KeyedLimiter<string>({
    create: () => combine({ requests: new WindowLimiter({ limit: 50, interval: 1000, clock }), concurrent: slots }),
  });
  const others: Promise<Response>[] = [];
  let api!: typeof fetch;
  api = createThrottledFetch({
    limiter,
    key: (request) => new URL(request.url).pathname,
    clock,
    retry: { pauseDimensions: ["requests"] },
    onThrottle: () => {
      for (let i = 0; i < 3; i++) others.push(api(`${origin}/A`), api(`${origin}/B`));
    },
  }) as typeof fetch;
  const first = await drive(api(`${origin}/A`));
  expect(first.status).toBe(200);
  await drive(Promise.all(others));
  const A = arrivals.filter((x) => x.path === "/A");
  const B = arrivals.filter((x) => x.path === "/B");
  expect(A).toHaveLength(5);
  expect(B).toHaveLength(3);
  // A: nothing between the 429 and its end
  expect(A.filter((x) => x.at > 0 && x.at < 20_000)).toEqual([]);
  for (const x of A.slice(1)) expect(x.at).toBeGreaterThanOrEqual(20_000);
  // B: served during A's pause (the shared slots were not paused)
  for (const x of B) expect(x.at).toBeLessThan(20_000);
  expect(slots.stats().inFlight ?? 0).toBe(0);
});

test("pauseDimensions without a match (a plain limiter) pauses the whole limiter", async () => {
  reset();
  answer = (path, seen) => (path === "/A" && seen === 0 ? { status: 429, headers: { "retry-after": "20" } } : { status: 200 });
  const others: Promise<Response>[] = [];
  let api!: typeof fetch;
  api = createThrottledFetch({
    limiter: new WindowLimiter({ limit: 50, interval: 1000, clock }),
    clock,
    retry: { pauseDimensions: ["requests"] },
    onThrottle: () => others.push(api(`${origin}/B`)),
  }) as typeof fetch;
  await drive(api(`${origin}/A`));
  await drive(Promise.all(others));
  const B = arrivals.filter((x) => x.path === "/B");
  expect(B).toHaveLength(1);
  expect(B[0]!.at).toBeGreaterThanOrEqual(20_000);
});

test("bad pauseDimensions: TypeError naming the option and the value", () => {
  for (const bad of [[], "requests", [""], [3]]) {
    expect(() => createThrottledFetch({ limit: 10, interval: 1000, retry: { pauseDimensions: bad as never } }), JSON.stringify(bad)).toThrow(/retry\.pauseDimensions/);
  }
});

test("{ retryAfter } keeps the hard retry limit: limit 1 → two attempts at the server, the last 403 returned", async () => {
  reset();
  answer = () => ({ status: 403, body: body403 });
  const api = createThrottledFetch({
    limiter: new WindowLimiter({ limit: 100, interval: 1000, clock }),
    clock,
    retry: { limit: 1, shouldRetry: () => ({ retryAfter: 1000 }) },
  });
  const r = await drive(api(`${origin}/l`));
  expect(r.status).toBe(403);
  expect(arrivals.map((a) => a.at)).toEqual([0, expect.any(Number)]);
  expect(arrivals[1]!.at).toBeGreaterThanOrEqual(1000);
});

test("{ retryAfter } at exactly maxRetryAfter is retried; 1 ms past it is not", async () => {
  for (const [wait, attempts] of [[60_000, 2], [60_001, 1]] as const) {
    reset();
    answer = (_, seen) => (seen === 0 ? { status: 403 } : { status: 200 });
    const api = createThrottledFetch({
      limiter: new WindowLimiter({ limit: 100, interval: 1000, clock }),
      clock,
      retry: { maxRetryAfter: 60_000, shouldRetry: ({ response }) => (response?.status === 403 ? { retryAfter: wait } : undefined) },
    });
    const r = await drive(api(`${origin}/m`));
    expect(arrivals, String(wait)).toHaveLength(attempts);
    expect(r.status).toBe(attempts === 2 ? 200 : 403);
  }
});

test("{ retryAfter } on a POST with a replayable body is retried once, the body resent intact", async () => {
  reset();
  const bodies: string[] = [];
  answer = (_, seen) => (seen === 0 ? { status: 403 } : { status: 201 });
  const api = createThrottledFetch({
    limiter: new WindowLimiter({ limit: 100, interval: 1000, clock }),
    clock,
    fetch: async (input, init) => {
      const request = new Request(input, init);
      bodies.push(await request.clone().text());
      return fetch(request);
    },
    retry: { shouldRetry: ({ response }) => (response?.status === 403 ? { retryAfter: 500 } : undefined) },
  });
  const r = await drive(api(`${origin}/p`, { method: "POST", body: "payload-1" }));
  expect(r.status).toBe(201);
  expect(bodies).toEqual(["payload-1", "payload-1"]);
});
