/**
 * Reservations that settle on Redis, through `reserve()` and its handle, in virtual time (ManualClock
 * + injected `now`) against a real redis-server: the same grant times as the in-memory limiters for
 * the same reserve/settle sequence, idempotency by id (a resent settle, settle vs cancel: the first
 * wins), and the bounded life of a reservation never settled.
 */
import { Redis } from "ioredis";
import { expect, test, vi } from "vitest";
import { ManualClock, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import {
  fromIoredis,
  type RedisLimiter,
  RedisSmoothLimiter,
  RedisStore,
  type RedisStoreOptions,
  RedisWindowLimiter,
} from "../../src/redis.ts";
import { describeRedis, recordOf, useRedis } from "./server.ts";

const T0 = 1_760_000_000_000_000; // µs

describeRedis("reservations that settle on Redis", () => {
  let redis: Redis;
  let family = 0;

  useRedis((_, r) => {
    redis = r;
  });

  function setup(options: Partial<RedisStoreOptions> = {}): { clock: ManualClock; store: RedisStore } {
    const clock = new ManualClock();
    const store = new RedisStore({
      client: fromIoredis(redis),
      name: `settle-${family++}`,
      clock,
      now: () => T0 + Math.round(clock.now() * 1000),
      timeout: 60_000,
      ...options,
    });
    return { clock, store };
  }

  /** Waits (in real time) until every script call of `limiter` was answered. */
  async function replies(limiter: RedisLimiter): Promise<void> {
    await vi.waitFor(() => expect(limiter.inFlight).toBe(0), { timeout: 5000, interval: 2 });
  }

  /** The grant time (virtual ms) of `acquire(n)` asked now. */
  async function grantOf(limiter: { acquire(n: number): Promise<void> }, clock: ManualClock, n = 1): Promise<number> {
    let at = -1;
    const done = limiter.acquire(n).then(() => (at = clock.now()));
    if (limiter instanceof RedisWindowLimiter || limiter instanceof RedisSmoothLimiter) await replies(limiter);
    await Promise.resolve();
    while (at < 0 && clock.nextTimerAt !== undefined) await clock.advanceTo(clock.nextTimerAt);
    await done;
    return at;
  }

  test("window: a refund comes off the grant's own entry, debt counts from the settle; grant times as in memory", async () => {
    const { clock, store } = setup();
    const remote = new RedisWindowLimiter({ store, key: "w", limit: 10, interval: 1000 });
    const times: number[][] = [];
    // Redis
    const r1 = await remote.reserve(8);
    await clock.advance(100);
    expect(r1.settle(3)).toBe(true);
    expect(await r1.applied).toBe(true);
    const r2p = remote.reserve(7);
    await replies(remote);
    const r2 = await r2p;
    const afterRefund = r2.grantedAt;
    await clock.advance(100);
    r2.settle(9); // 2 of debt at 200
    expect(await r2.applied).toBe(true);
    await clock.advance(100);
    times.push([afterRefund, await grantOf(remote, clock)]);
    // in memory, the same steps
    const mclock = new ManualClock();
    const mem = new WindowLimiter({ limit: 10, interval: 1000, clock: mclock });
    const m1 = await mem.reserve(8);
    await mclock.advance(100);
    m1.settle(3);
    const m2 = await mem.reserve(7);
    await mclock.advance(100);
    m2.settle(9);
    await mclock.advance(100);
    times.push([m2.grantedAt, await grantOf(mem, mclock)]);
    expect(times[0]).toEqual([100, 1000]); // the refund let 7 through at 100; the debt holds the next until 1000
    expect(times[0]).toEqual(times[1]);
  });

  test("smooth: a refund moves the next free time back, debt is a take at the settle; grant times as in memory", async () => {
    const { clock, store } = setup();
    const remote = new RedisSmoothLimiter({ store, key: "s", limit: 10, interval: 1000 }); // 100 ms a permit
    const mclock = new ManualClock();
    const mem = new SmoothLimiter({ limit: 10, interval: 1000, clock: mclock });
    const got: number[][] = [];
    for (const [limiter, c] of [[remote, clock], [mem, mclock]] as const) {
      const r1 = await limiter.reserve(5); // next free at 500
      await c.advance(100);
      r1.settle(2); // 3 back: next free at 200
      const a = await grantOf(limiter, c); // 200; next free 300
      await c.advance(300 - c.now());
      const r2 = await limiter.reserve(1); // at 300; next free 400
      r2.settle(4); // 3 of debt: next free 700
      if ("applied" in r2) await (r2 as { applied?: Promise<boolean> }).applied;
      const b = await grantOf(limiter, c);
      got.push([a, b]);
    }
    expect(got[0]).toEqual([200, 700]);
    expect(got[0]).toEqual(got[1]);
  });

  test("a refund goes back to the whole fleet: another process's limiter on the key can take it at once", async () => {
    const { store } = setup();
    const a = new RedisWindowLimiter({ store, key: "w", limit: 10, interval: 60_000 });
    const b = new RedisWindowLimiter({ store, key: "w", limit: 10, interval: 60_000 }); // another process
    const r = await a.reserve(10);
    expect(await b.tryAcquireAsync(1)).toBe(60_000); // full until the reservation leaves the window
    r.settle(4);
    expect(await r.applied).toBe(true);
    expect(await b.tryAcquireAsync(7)).toBe(60_000); // only 6 came back
    expect(await b.tryAcquireAsync(6)).toBe(0);
  });

  test("idempotent by id: a resent settle applies once; settle and cancel of one reservation — the first wins", async () => {
    const { store } = setup();
    const limiter = new RedisWindowLimiter({ store, key: "w", limit: 10, interval: 1000 });
    const key = `${store.prefix}w:w`;
    const r = await limiter.reserve(4);
    const id = r.id!;
    expect(await recordOf(redis, store.prefix, id)).toMatch(/^\d+\|4\|0$/); // with its mark: settleable
    // the client resends the same settle (a reconnect): applied once
    const [first, again] = await limiter.settleBatch([id, id], [1, 1]);
    expect([first!.code, again!.code]).toEqual([1, 0]);
    expect(await redis.zrange(key, "0", "-1")).toEqual([`${T0}|1|${id}`]);
    // a cancel after the settle (an ambiguous timeout's) changes nothing
    expect((await limiter.cancelOnce(id)).code).toBe(0);
    expect(await redis.zrange(key, "0", "-1")).toEqual([`${T0}|1|${id}`]);
    // a cancel first: the settle after it changes nothing (no debt on a cancelled reservation)
    const s = await limiter.reserve(2);
    expect((await limiter.cancelOnce(s.id!)).code).toBe(1);
    expect((await limiter.settleBatch([s.id!], [9]))[0]!.code).toBe(0);
    expect(await redis.zrange(key, "0", "-1")).toEqual([`${T0}|1|${id}`]);
    // the handle: the first call wins, later ones return false and send nothing
    expect(s.settle(5)).toBe(true);
    expect(await s.applied).toBe(false); // Redis had it cancelled already
    expect(s.cancel()).toBe(false);
    expect(s.release()).toBe(false);
    // a resent reserve of a settled reservation still replays its grant (never taken twice)
    const batch = id.slice(0, id.lastIndexOf("/"));
    expect((await limiter.reserveOnce(batch, 4)).code).toBe(5);
  });

  test("settle validates `actual` like the in-memory handle, changing nothing when it throws", async () => {
    const { store } = setup();
    const limiter = new RedisSmoothLimiter({ store, key: "s", limit: 10 });
    const r = await limiter.reserve(3);
    expect(() => r.settle(-1)).toThrow(new RangeError("`actual` must be a non-negative integer, got -1"));
    expect(() => r.settle(1.5)).toThrow(RangeError);
    expect(() => r.settle({ tokens: 1 })).toThrow(TypeError);
    expect(r.settled).toBe(false);
    expect(r.cancel()).toBe(true);
    expect(await r.applied).toBe(true);
    expect(() => limiter.reserve({ tokens: 1 })).toThrow(TypeError); // as acquire: at once, no dimensions on Redis
  });

  test("release and a settle at the reserved amount send nothing (the record expires on its own)", async () => {
    const calls: string[] = [];
    const client = fromIoredis(redis);
    const { store } = setup({
      client: { evalsha: (sha, keys, args) => (calls.push(args[2]!), client.evalsha(sha, keys, args)), eval: client.eval },
    });
    const limiter = new RedisWindowLimiter({ store, key: "w", limit: 10, interval: 1000 });
    const r = await limiter.reserve(3);
    const before = calls.length;
    expect(r.release()).toBe(true);
    expect(await r.applied).toBe(true);
    const q = await limiter.reserve(2);
    const sent = calls.length;
    expect(q.settle(2)).toBe(true);
    expect(await q.applied).toBe(true);
    expect(calls.length).toBe(sent);
    expect(sent).toBe(before + 1); // only q's reserve
  });

  test("an unsettled reservation counts in full, and its record is dropped after settleTtl: a later settle changes nothing", async () => {
    const { store } = setup({ settleTtl: 150, cancelGrace: 0 });
    const limiter = new RedisWindowLimiter({ store, key: "w", limit: 5, interval: 60_000 });
    const r = await limiter.reserve(5);
    const id = r.id!;
    const recordKey = store.recordKey(id.slice(0, id.lastIndexOf("/")));
    const ttl = await redis.pttl(recordKey);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(150); // settleTtl past the grant (granted at once)
    // never settled: the record goes after settleTtl (real time: Redis expires it), memory stays bounded
    await vi.waitFor(async () => expect(await redis.exists(recordKey)).toBe(0), { timeout: 5000, interval: 10 });
    expect(r.settle(0)).toBe(true);
    expect(await r.applied).toBe(false); // expired: nothing refunded
    expect(await limiter.tryAcquireAsync(1)).toBeGreaterThan(0); // still counted in full (as reserved)
  });

  test("an acquire's record is not kept for a settle (cancelGrace only)", async () => {
    const { store } = setup({ settleTtl: 600_000, cancelGrace: 200 });
    const limiter = new RedisWindowLimiter({ store, key: "w", limit: 5, interval: 1000 });
    await limiter.reserveOnce("plain", 1);
    const ttl = await redis.pttl(store.recordKey("plain"));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(200);
    expect(await recordOf(redis, store.prefix, "plain/1")).toMatch(/^\d+\|1$/); // no marks: not settleable
    expect((await limiter.settleBatch(["plain/1"], [0]))[0]!.code).toBe(0);
  });

  test("smooth: a refund after the key expired at rest (and was created again) gives nothing back, as in memory", async () => {
    const { clock, store } = setup();
    const remote = new RedisSmoothLimiter({ store, key: "s", limit: 10, interval: 1000 }); // 100 ms a permit
    const mclock = new ManualClock();
    const mem = new SmoothLimiter({ limit: 10, interval: 1000, clock: mclock });
    const got: number[] = [];
    for (const [limiter, c] of [[remote, clock], [mem, mclock]] as const) {
      const r = await limiter.reserve(5); // next free at 500
      await c.advance(600);
      if (limiter === remote) await redis.del(`${store.prefix}s:s`); // expired at rest (its TTL, without the wait)
      expect(await grantOf(limiter, c)).toBe(600); // another caller: a fresh state on Redis, next free at 700
      r.settle(0); // the 5 were paid off long ago: nothing to give back
      if ("applied" in r) await (r as { applied?: Promise<boolean> }).applied;
      got.push(await grantOf(limiter, c));
    }
    expect(got).toEqual([700, 700]);
  });

  test("a smooth state written before reservations settled (8 fields) is read, and rewritten with tk, lt and its epoch", async () => {
    const { store } = setup();
    const limiter = new RedisSmoothLimiter({ store, key: "s", limit: 10 }); // 100 ms a permit
    const key = `${store.prefix}s:s`;
    await redis.set(key, `${T0 + 300_000} 0 0 0 0   `, "PX", 60_000); // next free at 300 ms, nothing queued
    expect(await limiter.reserveOnce("old", 2)).toEqual({ code: 1, delay: 300_000, at: T0 + 300_000 });
    expect((await redis.get(key))!.split(" ").slice(8)).toEqual(["2", String(T0 + 300_000), "0"]); // tk, lt, epoch
  });

  test("a reservation granted by the failure policy settles locally: nothing is sent to Redis", async () => {
    const failing = {
      evalsha: () => Promise.reject(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })),
      eval: () => Promise.reject(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })),
    };
    const { store } = setup({ client: failing, failure: "open" });
    const limiter = new RedisSmoothLimiter({ store, key: "s", limit: 10 });
    const r = await limiter.reserve(3);
    expect(r.id).toBeUndefined();
    expect(r.settle(1)).toBe(true);
    expect(await r.applied).toBe(false);
    const again = await limiter.reserve(2); // store marked down: straight to the policy
    expect(again.id).toBeUndefined();
  });
});
