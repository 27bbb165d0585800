/**
 * Red team: `retry.pauseDimensions` on a Redis named combination (`combineRedis({ requests, tokens })`)
 * behind the throttled fetch, against a real node:http server and a real redis-server, in virtual
 * time (ManualClock + the store's injected `now`). Counted at the server: requests that arrived
 * during the pause a 429 asked for.
 */
import { createServer, type Server } from "node:http";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { combine, createThrottledFetch, ManualClock, WindowLimiter } from "../../src/index.ts";
import type { Limiter } from "../../src/index.ts";
import { combineRedis, fromIoredis, RedisStore, RedisWindowLimiter } from "../../src/redis.ts";
import { describeRedis, useRedis } from "../redis/server.ts";

const T0 = 1_760_000_000_000_000;
let http: Server;
let origin = "";
let clock = new ManualClock();
let busy = 0;
let arrivals: { path: string; at: number }[] = [];

beforeAll(async () => {
  http = createServer((req, res) => {
    busy++;
    const path = req.url ?? "/";
    const first = !arrivals.some((a) => a.path === path);
    arrivals.push({ path, at: clock.now() });
    if (first) res.writeHead(429, { "retry-after": "10" });
    else res.writeHead(200);
    res.end("x", () => busy--);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const a = http.address();
  origin = `http://127.0.0.1:${typeof a === "object" && a !== null ? a.port : 0}`;
});
afterAll(() => new Promise<void>((resolve) => http.close(() => resolve())));

let pending = 0;
/** The real fetch, counted until its response is in the throttled fetch's hands. */
const counted: typeof fetch = async (input, init) => {
  pending++;
  try {
    return await fetch(input, init);
  } finally {
    pending--;
  }
};

/**
 * Real I/O and virtual time together: the clock moves only when no HTTP request, no response and
 * no Redis reserve is outstanding, and that stayed so for three real ticks (cancels, pauses).
 */
async function drive<T>(promise: Promise<T>, limiters: readonly { inFlight?: number }[] = []): Promise<T> {
  let done = false;
  const settled = promise.finally(() => (done = true));
  settled.catch(() => {});
  let quiet = 0;
  for (let i = 0; i < 4000 && !done; i++) {
    await new Promise((resolve) => setTimeout(resolve, 3));
    const idle = busy === 0 && pending === 0 && limiters.every((l) => (l.inFlight ?? 0) === 0);
    quiet = idle ? quiet + 1 : 0;
    if (!done && quiet >= 3 && clock.nextTimerAt !== undefined) {
      await clock.advanceTo(clock.nextTimerAt);
      quiet = 0;
    }
  }
  return promise;
}

/** Four callers on one limiter (1 request a second): the first is refused with Retry-After 10 s. */
async function run(limiter: Limiter, pauseDimensions: string[] | undefined): Promise<number[]> {
  arrivals = [];
  const api = createThrottledFetch({ limiter, clock, fetch: counted, retry: pauseDimensions === undefined ? {} : { pauseDimensions } });
  const calls = [0, 1, 2, 3].map(() => api(`${origin}/A`));
  const members = (limiter as { members?: readonly { inFlight?: number }[] }).members ?? [];
  const responses = await drive(Promise.all(calls), [limiter as { inFlight?: number }, ...members]);
  expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200]);
  return arrivals.map((a) => a.at);
}

describeRedis("red team: pauseDimensions on a Redis named combination", () => {
  let redis: Redis;
  let family = 0;
  useRedis((_, r) => {
    redis = r;
  });

  function redisCombo() {
    clock = new ManualClock();
    const store = new RedisStore({
      client: fromIoredis(redis), name: `rp-${family++}`, clock,
      now: () => T0 + Math.round(clock.now() * 1000), timeout: 60_000, keyTtlMargin: 600_000,
    });
    return combineRedis({
      requests: new RedisWindowLimiter({ store, key: "rpm", limit: 1, interval: 1000 }),
      tokens: new RedisWindowLimiter({ store, key: "tpm", limit: 1000, interval: 1000 }),
    });
  }

  /** Arrivals after the 429 (at 0) that came before its Retry-After ended. */
  const during = (at: number[]) => at.slice(1).filter((t) => t < 10_000);

  test("control (in memory): combine({ requests, tokens }) + pauseDimensions ['requests']: nobody during the pause", async () => {
    clock = new ManualClock();
    const limiter = combine({
      requests: new WindowLimiter({ limit: 1, interval: 1000, clock }),
      tokens: new WindowLimiter({ limit: 1000, interval: 1000, clock }),
    });
    expect(during(await run(limiter, ["requests"]))).toEqual([]);
  });

  test("the first pause after Redis lost its script cache (fresh server, restart, SCRIPT FLUSH) holds every caller until it ends", async () => {
    await redis.script("FLUSH");
    // regression: arrivals were [0 (429), 4000, 10000, …] — the retry's reserve overtook the pause's NOSCRIPT resend
    expect(during(await run(redisCombo(), undefined))).toEqual([]);
  });

  test("control (Redis, scripts cached): the whole combination paused (no pauseDimensions): nobody during the pause", async () => {
    await redisCombo().pauseOnce(1); // the pause script is in Redis's cache now
    expect(during(await run(redisCombo(), undefined))).toEqual([]);
  });

  test("pauseDimensions ['requests'] on combineRedis({ requests, tokens }) holds the callers already queued until the pause ends", async () => {
    // regression: arrivals were [0 (429), 1000, 2000, 3000] — only the members paused, not the combination's queue
    expect(during(await run(redisCombo(), ["requests"]))).toEqual([]);
  });
});
