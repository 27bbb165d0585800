/**
 * The in-process side of the Redis limiters, in virtual time (ManualClock + injected `now`) against
 * a real Redis: FIFO grants at the server's times, one timer, abort gives permits back to the fleet,
 * maxWait/maxQueue, pause across processes, tryAcquire, validation, both client adapters.
 */
import { Redis } from "ioredis";
import { createClient } from "redis";
import { afterAll, beforeAll, expect, test, vi } from "vitest";
import { ManualClock, MaxWaitExceededError, QueueFullError } from "../../src/index.ts";
import {
  combineRedis,
  fromIoredis,
  fromNodeRedis,
  type RedisLimiter,
  RedisSmoothLimiter,
  RedisStore,
  type RedisStoreOptions,
  RedisUnavailableError,
  RedisWindowLimiter,
} from "../../src/redis.ts";
import { SCRIPTS } from "../../src/integrations/redis/scripts.ts";
import { Unstarted } from "../../src/limiters/settle.ts";
import { describeRedis, type RedisServer, startRedis, useRedis } from "./server.ts";

const T0 = 1_760_000_000_000_000;

describeRedis("Redis limiters: the local queue in virtual time", () => {
  let server: RedisServer;
  let redis: Redis;
  let family = 0;

  useRedis((s, r) => {
    server = s;
    redis = r;
  });

  /** A store whose `now` is the ManualClock's (µs); each test gets its own family. */
  function setup(options: Partial<RedisStoreOptions> = {}): { clock: ManualClock; store: RedisStore; name: string } {
    const clock = new ManualClock();
    const name = `lim-${family++}`;
    const store = new RedisStore({
      client: fromIoredis(redis),
      name,
      clock,
      now: () => T0 + Math.round(clock.now() * 1000),
      timeout: 60_000, // virtual ms: real replies always beat it
      ...options,
    });
    return { clock, store, name };
  }

  /** Waits (in real time) until every reserve call of `limiters` has its reply. */
  async function replies(...limiters: RedisLimiter[]): Promise<void> {
    await vi.waitFor(() => expect(limiters.reduce((n, l) => n + l.inFlight, 0)).toBe(0), { timeout: 5000, interval: 2 });
  }

  test("acquire() grants first come, first served at the times Redis decided", async () => {
    const { clock, store } = setup();
    const limiter = new RedisSmoothLimiter({ store, key: "api", limit: 10 }); // one per 100 ms
    const granted: number[] = [];
    const all = [0, 1, 2, 3].map((i) => limiter.acquire().then(() => granted.push(clock.now()) && i));
    await replies(limiter);
    await clock.advance(1000);
    await Promise.all(all);
    expect(granted).toEqual([0, 100, 200, 300]);
  });

  test("callers arriving together share script calls: 300 acquires take 3 calls, granted FIFO at the exact times", async () => {
    const { clock } = setup();
    const calls: number[] = [];
    const client = fromIoredis(redis);
    const counting = {
      evalsha: (sha: string, keys: readonly string[], args: readonly string[]) => {
        calls.push(Number(args[1])); // the reserve's request count (cancel/pause: their id)
        return client.evalsha(sha, keys, args);
      },
      eval: client.eval,
    };
    const store = new RedisStore({
      client: counting,
      name: `lim-${family++}`,
      clock,
      now: () => T0 + Math.round(clock.now() * 1000),
      timeout: 60_000,
    });
    const limiter = new RedisSmoothLimiter({ store, key: "api", limit: 100 }); // one per 10 ms
    const granted: number[] = [];
    const all = Array.from({ length: 300 }, (_, i) => limiter.acquire().then(() => granted.push(i * 1000 + clock.now())));
    expect(calls).toEqual([]); // sent one microtask later, together
    await replies(limiter);
    expect(calls).toEqual([128, 128, 44]); // at most MAX_BATCH per call, in arrival order
    await clock.advance(3000);
    await Promise.all(all);
    expect(granted).toEqual(Array.from({ length: 300 }, (_, i) => i * 1000 + i * 10));
  });

  test("waiters aborted together send their cancels together: 200 aborts take 2 cancel calls and give every slot back", async () => {
    const { clock } = setup();
    const cancels: number[] = [];
    const client = fromIoredis(redis);
    const counting = {
      evalsha: (sha: string, keys: readonly string[], args: readonly string[]) => {
        const answer = client.evalsha(sha, keys, args);
        // how many cancels a call carried, once answered (the first one is answered NOSCRIPT, then sent by EVAL)
        if (sha === SCRIPTS.cancel.sha) void answer.then(() => cancels.push(Number(args[1])), () => {});
        return answer;
      },
      eval: (script: string, keys: readonly string[], args: readonly string[]) => {
        const answer = client.eval(script, keys, args);
        if (script === SCRIPTS.cancel.source) void answer.then(() => cancels.push(Number(args[1])), () => {});
        return answer;
      },
    };
    const store = new RedisStore({
      client: counting,
      name: `lim-${family++}`,
      clock,
      now: () => T0 + Math.round(clock.now() * 1000),
      timeout: 60_000,
    });
    const limiter = new RedisSmoothLimiter({ store, key: "api", limit: 100 }); // one per 10 ms
    await limiter.acquire(); // t = 0: the next slot is at 10 ms
    const controller = new AbortController(); // one deadline for a whole burst (e.g. a request's timeout)
    const waits = Array.from({ length: 200 }, () => limiter.acquire(1, { signal: controller.signal }).catch(() => "aborted"));
    await replies(limiter);
    controller.abort();
    expect(await Promise.all(waits)).toEqual(Array(200).fill("aborted"));
    await vi.waitFor(() => expect(cancels).toEqual([128, 72]), { timeout: 5000, interval: 2 }); // at most MAX_BATCH per call
    const next = limiter.acquire().then(() => clock.now());
    await replies(limiter);
    await clock.advance(10);
    expect(await next).toBe(10); // all 200 slots came back: the next caller takes the first of them
  });

  test("a caller aborted while its reserve is still queued costs no call and no cancel", async () => {
    const { clock, store, name } = setup();
    const limiter = new RedisWindowLimiter({ store, key: "w", limit: 5, interval: 1000 });
    const controller = new AbortController();
    const aborted = limiter.acquire(1, { signal: controller.signal });
    const kept = limiter.acquire(2);
    controller.abort(new Error("gone"));
    await expect(aborted).rejects.toThrow("gone");
    await kept;
    expect(await redis.zrange(`{sluice:${name}}:w:w`, "0", "-1", "WITHSCORES")).toEqual([expect.stringMatching(/\|2\|/), "2"]);
    expect(await redis.keys(`{sluice:${name}}:r:*`)).toHaveLength(1); // no tombstone for the unsent one
    expect(limiter.queued).toBe(0);
    void clock;
  });

  test("requests queued behind calls that time out go to the failure policy at that moment, without a call of their own", async () => {
    const clock = new ManualClock();
    const sent: string[] = [];
    const silent = { evalsha: (sha: string) => (sent.push(sha), new Promise<never>(() => {})), eval: () => new Promise<never>(() => {}) };
    const store = new RedisStore({ client: silent, name: `lim-${family++}`, clock, timeout: 100 });
    const limiter = new RedisWindowLimiter({ store, key: "w", limit: 5, interval: 1000 });
    const first = limiter.acquire().catch((e: unknown) => e);
    await Promise.resolve();
    const second = limiter.acquire().catch((e: unknown) => e);
    await Promise.resolve();
    const queued = limiter.acquire().catch((e: unknown) => e); // two calls are out: it waits for the next
    await Promise.resolve();
    expect(sent).toHaveLength(2);
    await clock.advance(100);
    const errors = await Promise.all([first, second, queued]);
    for (const error of errors) expect(error).toBeInstanceOf(RedisUnavailableError);
    expect((errors[2] as Error).message).toMatch(/recent failure/);
    expect(clock.now()).toBe(100);
    expect(sent.filter((sha) => sha !== sent[0])).toHaveLength(2); // only the two cancels followed
    expect(limiter.queued).toBe(0);
  });

  test("many waiters share ONE timer, and an idle limiter holds none", async () => {
    const { clock, store } = setup();
    const limiter = new RedisWindowLimiter({ store, key: "w", limit: 2, interval: 1000 });
    const all = Array.from({ length: 10 }, () => limiter.acquire());
    await replies(limiter);
    await clock.advance(0);
    expect(limiter.queued).toBe(8);
    expect(clock.pendingTimers).toBe(1);
    expect(limiter.hasTimer).toBe(true);
    await clock.advance(4000);
    await Promise.all(all);
    expect(limiter.queued).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    expect(limiter.hasTimer).toBe(false);
  });

  test("a waiter aborted before its grant rejects with the signal's reason and gives its permits back to the fleet", async () => {
    const { clock, store } = setup();
    const a = new RedisWindowLimiter({ store, key: "w", limit: 1, interval: 1000 });
    const b = new RedisWindowLimiter({ store, key: "w", limit: 1, interval: 1000 }); // "another process"
    await a.acquire();
    const controller = new AbortController();
    const waiting = a.acquire(1, { signal: controller.signal });
    await replies(a);
    controller.abort(new Error("user left"));
    await expect(waiting).rejects.toThrow("user left");
    await vi.waitFor(async () => expect(await redis.zcard(`{sluice:${store.name}}:w:w`)).toBe(1));
    const times: number[] = [];
    const next = b.acquire().then(() => times.push(clock.now()));
    await replies(b);
    await clock.advance(1000);
    await next;
    expect(times).toEqual([1000]); // the aborted waiter's slot at t = 1000 went to the other process
    expect(clock.pendingTimers).toBe(0);
  });

  test("an aborted signal rejects at once and writes nothing", async () => {
    const { store, name } = setup();
    const limiter = new RedisWindowLimiter({ store, key: "w", limit: 1, interval: 1000 });
    const reason = new Error("already aborted");
    await expect(limiter.acquire(1, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(await redis.keys(`{sluice:${name}}*`)).toEqual([]);
  });

  test("maxWait is decided by the script up front: MaxWaitExceededError with retryAfter, nothing taken", async () => {
    const { store, name } = setup();
    const limiter = new RedisSmoothLimiter({ store, key: "s", limit: 1, interval: 1000 });
    await limiter.acquire();
    const before = await redis.get(`{sluice:${name}}:s:s`);
    const error = await limiter.acquire(1, { maxWait: 500 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MaxWaitExceededError);
    expect((error as MaxWaitExceededError).retryAfter).toBe(1000);
    expect((error as MaxWaitExceededError).maxWait).toBe(500);
    expect(await redis.get(`{sluice:${name}}:s:s`)).toEqual(before);
  });

  test("maxQueue bounds this process's waiters; maxPending bounds a key's reservations across the fleet", async () => {
    const { clock, store } = setup({ maxPending: 3 });
    const local = new RedisSmoothLimiter({ store, key: "s", limit: 10, maxQueue: 2 });
    const first = [local.acquire(), local.acquire()];
    await expect(local.acquire()).rejects.toBeInstanceOf(QueueFullError);
    await replies(local);
    const other = new RedisSmoothLimiter({ store, key: "s", limit: 10 });
    const more = [other.acquire(), other.acquire(), other.acquire()];
    await expect(more[2]).rejects.toMatchObject({ name: "QueueFullError", maxQueue: 3 });
    await clock.advance(1000);
    await Promise.all([...first, more[0], more[1]]);
  });

  test("pause() stops the whole fleet: new reservations anywhere start after it; local waiters keep their order and the pace", async () => {
    const { clock, store } = setup();
    const a = new RedisSmoothLimiter({ store, key: "s", limit: 10 });
    const b = new RedisSmoothLimiter({ store, key: "s", limit: 10 }); // another process
    const granted: string[] = [];
    const mine = ["a1", "a2", "a3"].map((tag) => a.acquire().then(() => granted.push(`${tag}@${clock.now()}`)));
    await replies(a);
    await clock.advance(0);
    a.pause(1000); // e.g. a 429 with Retry-After: 1
    await vi.waitFor(() => expect(a.inFlight).toBe(0)); // the re-reservations are back
    const theirs = b.acquire().then(() => granted.push(`b1@${clock.now()}`));
    await replies(b);
    await clock.advance(5000);
    await Promise.all([...mine, theirs]);
    expect(granted).toEqual(["a1@0", "a2@1000", "a3@1100", "b1@1200"]);
  });

  test("tryAcquire() (synchronous) never takes: it returns a hint ≥ 1 ms; tryAcquireAsync() is the exact, atomic try", async () => {
    const { store, name } = setup();
    const limiter = new RedisWindowLimiter({ store, key: "w", limit: 2, interval: 1000 });
    expect(limiter.tryAcquire()).toBeGreaterThanOrEqual(1);
    expect(await redis.keys(`{sluice:${name}}*`)).toEqual([]);
    expect(await limiter.tryAcquireAsync()).toBe(0);
    expect(await limiter.tryAcquireAsync()).toBe(0);
    expect(await limiter.tryAcquireAsync()).toBe(1000);
    expect(await redis.zcard(`{sluice:${name}}:w:w`)).toBe(2);
    expect(limiter.tryAcquire()).toBe(1000);
  });

  test("schedule() runs the task once granted and passes its result through", async () => {
    const { store } = setup();
    const limiter = new RedisSmoothLimiter({ store, key: "s", limit: 5 });
    await expect(limiter.schedule(() => "done", { permits: 3 })).resolves.toBe("done");
  });

  test("a scheduled task that never started (Unstarted: its caller left between the grant and the send) gives its reservation back to the fleet", async () => {
    const { store } = setup();
    const reason = new Error("caller aborted");
    let key = 0;
    for (const Kind of [RedisWindowLimiter, RedisSmoothLimiter]) {
      for (const thrown of [true, false]) {
        const name = `k${key++}`;
        const limiter = new Kind({ store, key: name, limit: 1, interval: 10_000 });
        const otherProcess = new Kind({ store, key: name, limit: 1, interval: 10_000 });
        const unstarted = new Unstarted(reason);
        const task = thrown ? () => { throw unstarted; } : () => Promise.reject(unstarted);
        await expect(limiter.schedule(task)).rejects.toBe(unstarted);
        // The grant went back to the fleet (the cancel is best effort and asynchronous: wait for it).
        await vi.waitFor(async () => expect(await otherProcess.tryAcquireAsync()).toBe(0), { timeout: 5000, interval: 5 });
      }
    }
    // Any other failure of a task that ran keeps its permits: the request was made.
    const w2 = new RedisWindowLimiter({ store, key: "w2", limit: 1, interval: 10_000 });
    await expect(w2.schedule(() => { throw new Error("sent, then failed"); })).rejects.toThrow("sent, then failed");
    expect(await w2.tryAcquireAsync()).toBe(10_000);
  });

  test("combineRedis() takes every key at one instant and refuses limiters from two stores", async () => {
    const { clock, store, name } = setup();
    const overall = new RedisWindowLimiter({ store, key: "overall", limit: 3, interval: 1000 });
    const search = combineRedis(overall, new RedisSmoothLimiter({ store, key: "search", limit: 2 }));
    const times: number[] = [];
    const all = [search.acquire(), search.acquire(), overall.acquire()].map((p) => p.then(() => times.push(clock.now())));
    await replies(search, overall);
    await clock.advance(2000);
    await Promise.all(all);
    expect(times).toEqual([0, 500, 500]);
    const members = await redis.zrange(`{sluice:${name}}:w:overall`, "0", "-1", "WITHSCORES");
    expect(members.filter((_, i) => i % 2 === 1)).toEqual(["1", "2", "3"]);
    const other = setup().store;
    expect(() => combineRedis(overall, new RedisWindowLimiter({ store: other, key: "x", limit: 1, interval: 1 })))
      .toThrow(TypeError);
  });

  test("bad arguments throw TypeError/RangeError naming the option and the value", () => {
    const { store } = setup();
    expect(() => new RedisStore({ client: fromIoredis(redis), name: "a{b}" })).toThrow(/`name` must be .* got "a\{b\}"/);
    expect(() => new RedisStore({ client: {} as never, name: "x" })).toThrow(TypeError);
    expect(() => new RedisStore({ client: fromIoredis(redis), name: "x", timeout: -1 })).toThrow("`timeout` must be a positive finite number, got -1");
    expect(() => new RedisStore({ client: fromIoredis(redis), name: "x", failure: { local: 2 } })).toThrow("`failure.local` must be at most 1, got 2");
    expect(() => new RedisWindowLimiter({ store, key: "w", limit: 0, interval: 1000 })).toThrow("`limit` must be a positive integer, got 0");
    expect(() => new RedisSmoothLimiter({ store, key: "s", limit: 1, burst: 1, initialPermits: 2 })).toThrow(RangeError);
    const w = new RedisWindowLimiter({ store, key: "w", limit: 3, interval: 1000 });
    expect(() => w.acquire(4)).toThrow("`permits` must be at most 3 for this limiter (it can never grant more), got 4");
    expect(() => w.acquire(1.5)).toThrow("`permits` must be a positive integer, got 1.5");
    expect(() => w.pause(-1)).toThrow(RangeError);
    // Past what the scripts can hold (red-team: each broke the key for every process, `unexpected value in a sluice script reply`).
    expect(() => w.pause(8e12)).toThrow("`ms` must be at most 1e12 (about 31 years) in Redis, got 8000000000000");
    const s = new RedisSmoothLimiter({ store, key: "s", limit: 30_000, interval: 60_000 });
    expect(() => s.acquire(4e12)).toThrow("`permits` must be at most 500000000000 for this limiter (it can never grant more), got 4000000000000");
    expect(() => s.acquire(2 ** 53 - 1)).toThrow(RangeError);
    // A key ending like another key's companions (smooth `y:q` would be `y`'s queue; window `x:m` its pause).
    for (const key of ["y:q", "y:b"]) {
      expect(() => new RedisSmoothLimiter({ store, key, limit: 1 })).toThrow(`\`key\` must not end with ":q" or ":b" (a smooth key's companions), got "${key}"`);
      expect(() => new RedisWindowLimiter({ store, key, limit: 1, interval: 1000 })).not.toThrow(); // windows live apart
    }
    expect(() => new RedisWindowLimiter({ store, key: "x:m", limit: 1, interval: 1000 })).toThrow(`\`key\` must not end with ":m" (a window's pause), got "x:m"`);
    expect(() => new RedisSmoothLimiter({ store, key: "x:m", limit: 1 })).not.toThrow();
    expect(() => new RedisWindowLimiter({ store, key: "api:users", limit: 1, interval: 1000 })).not.toThrow();
  });

  test("debt piled up past 1e12 ms by many asks is refused with a RangeError, nothing taken: the key keeps working for everyone (it broke)", async () => {
    const { store, name, clock } = setup();
    const smooth = new RedisSmoothLimiter({ store, key: "s", limit: 1, interval: 1000 });
    await smooth.acquire(1e9); // granted at once: the next caller pays 1e12 ms
    const controller = new AbortController();
    const first = smooth.acquire(1e9, { signal: controller.signal }).catch((e: unknown) => e); // booked 1e12 ms ahead: allowed
    const errors = await Promise.all(Array.from({ length: 9 }, () => smooth.acquire(1e9).catch((e: unknown) => e)));
    for (const error of errors) expect(String(error)).toMatch(/past the 1e12 ms \(about 31 years\) a Redis key can hold: debt piled up on this key; nothing was taken/);
    controller.abort();
    await first;
    // A fresh process still reads the key.
    const again = new RedisStore({ client: fromIoredis(redis), name, clock, now: () => T0 + Math.round(clock.now() * 1000) });
    const fresh = new RedisSmoothLimiter({ store: again, key: "s", limit: 1, interval: 1000 });
    expect(typeof (await fresh.tryAcquireAsync(1))).toBe("number");
  });

  test("the node-redis adapter runs the same scripts (EVALSHA, EVAL after NOSCRIPT)", async () => {
    const client = await createClient({ url: server.url }).connect();
    try {
      const clock = new ManualClock();
      const store = new RedisStore({ client: fromNodeRedis(client), name: `nr-${family++}`, clock, now: () => T0 });
      const limiter = new RedisWindowLimiter({ store, key: "w", limit: 1, interval: 1000 });
      await client.scriptFlush();
      expect(await limiter.tryAcquireAsync()).toBe(0);
      expect(await limiter.tryAcquireAsync()).toBe(1000);
      await expect(limiter.reserveOnce("id", 1, 0)).resolves.toEqual({ code: 2, delay: 1_000_000, at: T0 + 1_000_000 });
    } finally {
      await client.close();
    }
  });
});
