/**
 * Regressions from a red-team pass over sluice/redis (2026-11-27): each failed before its fix.
 */
import type { Redis } from "ioredis";
import { expect, test, vi } from "vitest";
import { ManualClock, QueueFullError } from "../../src/index.ts";
import { fromIoredis, type RedisLimiter, RedisSmoothLimiter, RedisStore, RedisWindowLimiter } from "../../src/redis.ts";
import { clientCause } from "../../src/integrations/redis/errors.ts";
import { describeRedis, useRedis } from "./server.ts";

const T0 = 1_760_000_000_000_000;
/** A store that is never called (validation happens before any call). */
const offline = () => new RedisStore({ client: { evalsha: () => Promise.reject(new Error("offline")), eval: () => Promise.reject(new Error("offline")) }, name: "offline" });

test("a limiter's own failure policy is checked as the store's (before: { local: 5 } let one process take 5× the fleet's limit)", () => {
  const store = offline();
  expect(() => new RedisWindowLimiter({ store, key: "w", limit: 10, interval: 1000, failure: { local: 5 } })).toThrow(new RangeError("`failure.local` must be at most 1, got 5"));
  expect(() => new RedisSmoothLimiter({ store, key: "s", limit: 10, failure: "Closed" as never })).toThrow(TypeError);
  expect(() => new RedisWindowLimiter({ store, key: "w2", limit: 10, interval: 1000, failure: { local: 0.5 } })).not.toThrow();
});

test("spans the scripts cannot hold are refused at construction (before: every acquire failed with ERR value is not an integer)", () => {
  const store = offline();
  expect(() => new RedisWindowLimiter({ store, key: "w", limit: 10, interval: 1e300 })).toThrow(/`interval` must be at most 1e12 ms/);
  expect(() => new RedisWindowLimiter({ store, key: "w", limit: 10, interval: 1e13 })).toThrow(RangeError);
  expect(() => new RedisSmoothLimiter({ store, key: "s", limit: 1e-300 })).toThrow(/`limit` must allow a permit at least every 1e12 ms/);
  expect(() => new RedisWindowLimiter({ store, key: "w", limit: 10, interval: 31_536_000_000 })).not.toThrow(); // a year
});

test("a client error's cause keeps its name, message and code, not the command's arguments (ioredis puts AUTH's password there)", () => {
  const error = Object.assign(new Error("WRONGPASS invalid username-password pair"), { name: "ReplyError", code: "WRONGPASS", command: { name: "auth", args: ["default", "hunter2"] } });
  const cause = clientCause(error) as Error & { code?: string; command?: unknown };
  expect(cause).toMatchObject({ name: "ReplyError", message: "WRONGPASS invalid username-password pair", code: "WRONGPASS" });
  expect(cause.command).toBeUndefined();
  expect(JSON.stringify(Object.entries(cause))).not.toContain("hunter2");
  expect(clientCause("text")).toBe("text");
});

describeRedis("sluice/redis red-team regressions on a real server", () => {
  let redis: Redis;
  let family = 0;
  useRedis((_s, r) => {
    redis = r;
  });

  function setup(options: { maxPending?: number } = {}) {
    const clock = new ManualClock();
    const store = new RedisStore({
      client: fromIoredis(redis), name: `redteam-${family++}`, clock, now: () => T0 + Math.round(clock.now() * 1000), timeout: 60_000, ...options,
    });
    return { clock, store };
  }

  async function replies(...limiters: RedisLimiter[]): Promise<void> {
    await vi.waitFor(() => expect(limiters.reduce((n, l) => n + l.inFlight, 0)).toBe(0), { timeout: 5000, interval: 2 });
  }

  test("a refusal for maxPending names maxPending (before: 'maxQueue 3', an option nobody set)", async () => {
    const { store } = setup({ maxPending: 1 });
    const limiter = new RedisSmoothLimiter({ store, key: "s", limit: 1, interval: 1000 });
    const calls = [limiter.acquire(), limiter.acquire(), limiter.acquire()].map((p) => p.then(() => "granted", (e: Error) => e));
    await replies(limiter);
    const refused = (await Promise.race([Promise.all(calls.slice(2)), new Promise((r) => setTimeout(r, 2000, ["timeout"]))])) as unknown[];
    expect(refused[0]).toBeInstanceOf(QueueFullError);
    expect((refused[0] as Error).message).toBe("limiter queue is full (maxPending 1)");
  });

  test("a smooth key keeps its stored burst while it fills (before: it expired when the debt was paid and came back with initialPermits 0)", async () => {
    const { clock, store } = setup();
    const limiter = new RedisSmoothLimiter({ store, key: "s", limit: 10, interval: 1000, burst: 50, initialPermits: 0 });
    const first = limiter.acquire();
    await replies(limiter);
    await clock.advance(0);
    await first;
    // Idle 1.5 s, in real time too (Redis expires keys by its own clock). The key's TTL was set at the
    // grant: before, the debt (0.1 s) + keyTtlMargin (1 s) — gone by now, whatever the load; now, until
    // the burst of 50 fills (5 s) + 1 s, so only a stall of over 4.5 s could expire it.
    await new Promise((r) => setTimeout(r, 1500));
    await clock.advance(1500);
    const granted: number[] = [];
    const start = clock.now();
    const five = Array.from({ length: 5 }, () => limiter.acquire().then(() => granted.push(clock.now() - start)));
    await replies(limiter);
    await clock.advance(500); // enough for all five even without a burst, so a failure shows the times
    await Promise.all(five);
    expect(granted).toEqual([0, 0, 0, 0, 0]); // before: [0, 100, 200, 300, 400]
  });
});
