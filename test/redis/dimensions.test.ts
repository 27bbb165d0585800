/**
 * Named dimensions on Redis — `combineRedis({ requests, tokens })`, `reserve({ requests: 1, tokens: 900 })`,
 * `settle({ tokens: 640 })` — against a real redis-server, in virtual time (ManualClock + injected
 * `now`): the same API and the same grant times as the in-memory `combine({ … })` for the same
 * reserve/settle/cancel sequences (examples, then random sequences), atomic across the dimensions,
 * idempotent by reservation id, validated as in memory.
 */
import fc from "fast-check";
import { Redis } from "ioredis";
import { expect, test, vi } from "vitest";
import { combine, createThrottledFetch, ManualClock, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import type { GatedLimiter, Permits } from "../../src/index.ts";
import {
  combineRedis,
  fromIoredis,
  RedisCombinedLimiter,
  type RedisLimiter,
  RedisSmoothLimiter,
  RedisStore,
  RedisWindowLimiter,
} from "../../src/redis.ts";
import { Reach } from "../reach.ts";
import { describeRedis, recordOf, useRedis } from "./server.ts";

const T0 = 1_760_000_000_000_000; // µs

type Spec = { kind: "s" | "w"; limit: number; interval: number };

describeRedis("named dimensions on Redis", () => {
  let redis: Redis;
  let family = 0;

  useRedis((_, r) => {
    redis = r;
  });

  function setup(): { clock: ManualClock; store: RedisStore } {
    const clock = new ManualClock();
    const store = new RedisStore({
      client: fromIoredis(redis),
      name: `dims-${family++}`,
      clock,
      now: () => T0 + Math.round(clock.now() * 1000),
      timeout: 60_000,
      keyTtlMargin: 600_000,
    });
    return { clock, store };
  }

  /** The same dimensions on Redis and in memory. */
  function both(specs: Record<string, Spec>): { clock: ManualClock; remote: RedisCombinedLimiter; mclock: ManualClock; mem: GatedLimiter; store: RedisStore } {
    const { clock, store } = setup();
    const mclock = new ManualClock();
    const remote: Record<string, RedisLimiter> = {};
    const local: Record<string, GatedLimiter> = {};
    for (const [name, s] of Object.entries(specs)) {
      remote[name] = s.kind === "s"
        ? new RedisSmoothLimiter({ store, key: name, limit: s.limit, interval: s.interval })
        : new RedisWindowLimiter({ store, key: name, limit: s.limit, interval: s.interval });
      local[name] = s.kind === "s"
        ? new SmoothLimiter({ limit: s.limit, interval: s.interval, clock: mclock })
        : new WindowLimiter({ limit: s.limit, interval: s.interval, clock: mclock });
    }
    return { clock, remote: combineRedis(remote), mclock, mem: combine(local), store };
  }

  /** Runs virtual time until `promise` settles; returns the time it resolved at (or the error). */
  async function until<T>(promise: Promise<T>, clock: ManualClock, limiter?: RedisLimiter): Promise<{ at: number; value?: T; error?: unknown }> {
    let out: { at: number; value?: T; error?: unknown } | undefined;
    promise.then((value) => (out = { at: clock.now(), value }), (error: unknown) => (out = { at: clock.now(), error }));
    if (limiter !== undefined) await vi.waitFor(() => expect(limiter.inFlight).toBe(0), { timeout: 5000, interval: 1 });
    for (let i = 0; i < 5; i++) await Promise.resolve();
    while (out === undefined && clock.nextTimerAt !== undefined) {
      await clock.advanceTo(clock.nextTimerAt);
      for (let i = 0; i < 5; i++) await Promise.resolve();
    }
    await vi.waitFor(() => expect(out).toBeDefined(), { timeout: 5000, interval: 1 });
    return out!;
  }

  test("the issue's example: reserve({ requests: 1, tokens: 900 }), settle({ tokens: 640 }) — grant times as in memory", async () => {
    // 2 requests/s (500 ms apart), 1000 tokens per second (1 ms a token)
    const { clock, remote, mclock, mem } = both({
      requests: { kind: "s", limit: 2, interval: 1000 },
      tokens: { kind: "s", limit: 1000, interval: 1000 },
    });
    expect(remote.dimensionNames).toEqual(["requests", "tokens"]);
    const got: number[][] = [];
    for (const [limiter, c] of [[remote, clock], [mem, mclock]] as const) {
      const lim = limiter as RedisCombinedLimiter | GatedLimiter;
      const r = await lim.reserve!({ requests: 1, tokens: 900 }); // tokens next free at 900
      expect(r.permits).toEqual({ requests: 1, tokens: 900 });
      expect(r.settle({ tokens: 640 })).toBe(true); // 260 back: tokens next free at 640
      if ("applied" in r) expect(await (r as { applied: Promise<boolean> }).applied).toBe(true);
      const a = await until(lim.reserve!({ requests: 1, tokens: 100 }), c, limiter === remote ? remote : undefined);
      // the requests dimension (500 ms) binds now; tokens alone are asked next: free at 740
      const b = await until(lim.reserve!({ tokens: 50 }), c, limiter === remote ? remote : undefined);
      got.push([a.at, b.at]);
    }
    expect(got[0]).toEqual([640, 740]);
    expect(got[0]).toEqual(got[1]);
  });

  test("atomic across the dimensions: refused by maxWait, nothing is taken on any of them", async () => {
    const { store } = setup();
    const requests = new RedisWindowLimiter({ store, key: "rpm", limit: 10, interval: 60_000 });
    const tokens = new RedisWindowLimiter({ store, key: "tpm", limit: 1000, interval: 60_000 });
    const llm = combineRedis({ requests, tokens });
    const first = await llm.reserve({ requests: 1, tokens: 800 });
    await expect(llm.reserve({ requests: 1, tokens: 300 }, { maxWait: 1000 })).rejects.toThrow(/maxWait/);
    expect(await requests.tryAcquireAsync(9)).toBe(0); // 1 + 9 = 10: the refused request took nothing
    expect(await tokens.tryAcquireAsync(201)).toBeGreaterThan(0);
    expect(await tokens.tryAcquireAsync(200)).toBe(0);
    // both dimensions of one reservation in one record: a cancel gives both back in one call
    expect(await recordOf(redis, store.prefix, first.id!)).toMatch(/^\d+\|1;800;\|/);
    expect(first.cancel()).toBe(true);
    expect(await first.applied).toBe(true);
    expect(await tokens.tryAcquireAsync(800)).toBe(0);
  });

  test("a dimension left out asks 0 and takes no part; acquire(n) still takes n of each", async () => {
    const { store } = setup();
    const requests = new RedisWindowLimiter({ store, key: "rpm", limit: 2, interval: 60_000 });
    const tokens = new RedisWindowLimiter({ store, key: "tpm", limit: 100, interval: 60_000 });
    const llm = new RedisCombinedLimiter({ requests, tokens });
    await llm.reserve({ tokens: 40 });
    await llm.reserve({ tokens: 40 });
    await llm.reserve({ tokens: 19 });
    expect(await redis.exists(`${store.prefix}w:rpm`)).toBe(0); // no entry on a dimension asked 0
    await llm.acquire(1); // 1 of each: the last token and a request
    expect(await redis.zcard(`${store.prefix}w:rpm`)).toBe(1);
    await expect(llm.acquire(1, { maxWait: 0 })).rejects.toThrow(/maxWait/); // no token left
    expect(await requests.tryAcquireAsync(1)).toBe(0); // the refused acquire took no request
  });

  test("idempotent by id: a resent settle per dimension applies once; settle vs cancel — the first wins", async () => {
    const { store } = setup();
    const requests = new RedisWindowLimiter({ store, key: "rpm", limit: 10, interval: 1000 });
    const tokens = new RedisWindowLimiter({ store, key: "tpm", limit: 1000, interval: 1000 });
    const llm = combineRedis({ requests, tokens });
    const r = await llm.reserve({ requests: 1, tokens: 900 });
    const id = r.id!;
    const [first, again] = await llm.settleBatch([id, id], [[1, 640], [1, 640]]);
    expect([first!.code, again!.code]).toEqual([1, 0]);
    expect(await redis.zrange(`${store.prefix}w:tpm`, "0", "-1")).toEqual([`${T0}|640|${id}`]);
    expect(await redis.zrange(`${store.prefix}w:rpm`, "0", "-1")).toEqual([`${T0}|1|${id}`]);
    expect((await llm.cancelOnce(id)).code).toBe(0); // after the settle: nothing
    expect(await redis.zrange(`${store.prefix}w:tpm`, "0", "-1")).toEqual([`${T0}|640|${id}`]);
    // the handle: first call wins
    expect(r.settle({ tokens: 100 })).toBe(true);
    expect(await r.applied).toBe(false); // Redis had it settled already
    expect(r.cancel()).toBe(false);
  });

  test("a settle as reserved sends nothing; a number settles every dimension; a numeric reserve settles per dimension", async () => {
    const calls: string[][] = [];
    const client = fromIoredis(redis);
    const { store } = setup();
    const spy = new RedisStore({
      client: { evalsha: (sha, keys, args) => (calls.push([...args]), client.evalsha(sha, keys, args)), eval: client.eval },
      name: store.name,
      now: () => T0,
    });
    const llm = combineRedis({
      requests: new RedisWindowLimiter({ store: spy, key: "rpm", limit: 10, interval: 1000 }),
      tokens: new RedisWindowLimiter({ store: spy, key: "tpm", limit: 1000, interval: 1000 }),
    });
    const r = await llm.reserve({ requests: 1, tokens: 900 });
    const sent = calls.length;
    expect(r.settle({ requests: 1 })).toBe(true); // tokens left out: as reserved — nothing changes
    expect(await r.applied).toBe(true);
    expect(calls.length).toBe(sent);
    const n = await llm.reserve(3); // 3 of each
    expect(n.settle({ tokens: 1 })).toBe(true); // requests as reserved (3), tokens 1
    expect(await n.applied).toBe(true);
    expect(calls.at(-1)!.at(-1)).toBe("3;1;");
    expect(await redis.zrange(`${spy.prefix}w:tpm`, "0", "-1")).toEqual([`${T0}|900|${r.id}`, `${T0}|1|${n.id}`]);
    const m = await llm.reserve({ requests: 1, tokens: 5 });
    expect(m.settle(2)).toBe(true); // a number: every dimension
    expect(await m.applied).toBe(true);
    // requests 1 → 2: one of debt, an entry at now; tokens 5 → 2: a refund off its own entry
    expect(await redis.zrange(`${spy.prefix}w:rpm`, "0", "-1", "WITHSCORES")).toEqual([
      `${T0}|1|${r.id}`, "1", `${T0}|3|${n.id}`, "4", `${T0}|1|${m.id}`, "5", `${T0}|1|${m.id}+`, "6",
    ]);
    expect(await redis.zrange(`${spy.prefix}w:tpm`, "0", "-1")).toEqual([`${T0}|900|${r.id}`, `${T0}|1|${n.id}`, `${T0}|2|${m.id}`]);
  });

  test("validated as in memory: unknown or bad amounts throw at once, nothing is sent", async () => {
    const { store } = setup();
    const requests = new RedisWindowLimiter({ store, key: "rpm", limit: 10, interval: 1000 });
    const tokens = new RedisSmoothLimiter({ store, key: "tpm", limit: 1000 });
    const llm = combineRedis({ requests, tokens });
    const mem = combine({ requests: new WindowLimiter({ limit: 10, interval: 1000 }), tokens: new SmoothLimiter({ limit: 1000 }) });
    const cases: unknown[] = [{ input: 1 }, { tokens: -1 }, { tokens: 1.5 }, { requests: 11 }, "3", [1, 2], 0];
    for (const bad of cases) {
      let memError: unknown;
      try {
        void mem.reserve(bad as Permits);
      } catch (error) {
        memError = error;
      }
      expect(() => llm.reserve(bad as Permits), String(bad)).toThrow(memError as Error);
    }
    expect(llm.inFlight).toBe(0);
    const r = await llm.reserve({ requests: 1, tokens: 10 });
    expect(() => r.settle({ input: 1 })).toThrow(new TypeError("`actual.input` is not a dimension of this limiter (requests, tokens)"));
    expect(() => r.settle({ tokens: -1 })).toThrow(RangeError);
    expect(() => r.settle("1" as unknown as number)).toThrow(TypeError);
    expect(r.settled).toBe(false);
    // a positional combination has no dimensions, as in memory
    expect(() => combineRedis(requests, tokens).reserve({ tokens: 1 })).toThrow(TypeError);
    expect(combineRedis(requests, tokens).dimensionNames).toBeNull();
    // dimensions must not share a key
    const both = combineRedis(requests, tokens);
    expect(() => combineRedis({ a: both, b: tokens })).toThrow(/shares the key "tpm" with `limiters.a`/);
    expect(() => new RedisCombinedLimiter({ a: requests, b: 3 as unknown as RedisLimiter })).toThrow(/`limiters.b` must be a Redis limiter/);
  });

  test("the throttled fetch's cost and settle options reserve and settle per dimension on Redis (what vendor profiles use)", async () => {
    const { store } = setup();
    const llm = combineRedis({
      requests: new RedisWindowLimiter({ store, key: "rpm", limit: 10, interval: 60_000 }),
      tokens: new RedisWindowLimiter({ store, key: "tpm", limit: 1000, interval: 60_000 }),
    });
    const throttled = createThrottledFetch({
      limiter: llm,
      cost: { requests: 1, tokens: 900 },
      settle: async (response) => ({ tokens: Number(await response.clone().text()) }),
      fetch: async () => new Response("640"),
      retry: 0,
    });
    expect(await (await throttled("https://llm.example/v1/chat")).text()).toBe("640");
    await vi.waitFor(async () => {
      const [entry] = await redis.zrange(`${store.prefix}w:tpm`, "0", "-1");
      expect(entry).toMatch(/\|640\|/); // settled: 260 tokens back to the fleet
    }, { timeout: 5000, interval: 5 });
    expect(await redis.zcard(`${store.prefix}w:rpm`)).toBe(1);
  });

  test("under the local failure policy a reservation per dimension falls back per dimension", async () => {
    const failing = {
      evalsha: () => Promise.reject(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })),
      eval: () => Promise.reject(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })),
    };
    const clock = new ManualClock();
    const store = new RedisStore({ client: failing, name: "dims-down", clock, failure: { local: 1 }, now: () => T0 });
    const llm = combineRedis({
      requests: new RedisWindowLimiter({ store, key: "rpm", limit: 10, interval: 1000 }),
      tokens: new RedisWindowLimiter({ store, key: "tpm", limit: 100, interval: 1000 }),
    });
    const r = await llm.reserve({ requests: 1, tokens: 90 });
    expect(r.id).toBeUndefined();
    expect(llm.fallbackLimiter()!.reserve).toBeTypeOf("function"); // a named in-process combination
    const [requests, tokens] = llm.members.map((m) => m.localFallback(1));
    expect(tokens!.tryAcquire(11)).toBeGreaterThan(0); // 90 tokens counted locally, as reserved
    expect(tokens!.tryAcquire(10)).toBe(0);
    expect(requests!.tryAcquire(9)).toBe(0); // and 1 request
  });

  test("random reserve/settle/cancel/advance sequences: the same grant times as the in-memory combine, ms for ms", async () => {
    const reach = new Reach("Redis dimensions vs memory");
    const specArb = fc.oneof(
      fc.record({ kind: fc.constant("s" as const), limit: fc.constantFrom(10, 4, 100), interval: fc.constant(1000) }),
      fc.record({ kind: fc.constant("w" as const), limit: fc.constantFrom(3, 5, 100), interval: fc.constantFrom(500, 1000) }),
    );
    type Op =
      | { t: "reserve"; amounts: number[]; whole: boolean }
      | { t: "settle"; back: number; actuals: (number | null)[]; whole: boolean; cancel: boolean }
      | { t: "advance"; ms: number };
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      { weight: 3, arbitrary: fc.record({ t: fc.constant("reserve" as const), amounts: fc.array(fc.oneof(fc.constant(0), fc.nat(12)), { minLength: 3, maxLength: 3 }), whole: fc.boolean() }) },
      { weight: 3, arbitrary: fc.record({
        t: fc.constant("settle" as const),
        back: fc.nat(3),
        actuals: fc.array(fc.option(fc.nat(15), { nil: null }), { minLength: 3, maxLength: 3 }),
        whole: fc.integer({ min: 0, max: 4 }).map((x) => x === 0),
        cancel: fc.integer({ min: 0, max: 4 }).map((x) => x === 0),
      }) },
      { weight: 2, arbitrary: fc.record({ t: fc.constant("advance" as const), ms: fc.oneof(fc.nat(300), fc.constant(2000)) }) },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(specArb, { minLength: 2, maxLength: 3 }), fc.array(opArb, { minLength: 3, maxLength: 16 }), async (specs, ops) => {
        reach.run();
        const names = ["requests", "input", "output"].slice(0, specs.length);
        const { clock, remote, mclock, mem } = both(Object.fromEntries(names.map((n, i) => [n, specs[i]!])));
        const held: { r: { settle(a?: Permits): boolean; cancel(): boolean; applied?: Promise<boolean> }; m: { settle(a?: Permits): boolean; cancel(): boolean } }[] = [];
        for (const op of ops) {
          if (op.t === "advance") {
            await clock.advance(op.ms);
            await mclock.advance(op.ms);
            continue;
          }
          if (op.t === "reserve") {
            const max = specs.map((s) => (s.kind === "w" ? s.limit : Infinity));
            const asked: Permits = op.whole
              ? Math.max(1, Math.min(op.amounts[0]!, ...max))
              : Object.fromEntries(names.map((n, i) => [n, Math.min(op.amounts[i]!, max[i]!)]).filter(([, a]) => a !== 0));
            const before = clock.now();
            const a = await until(remote.reserve(asked), clock, remote);
            const b = await until(mem.reserve!(asked), mclock);
            expect({ asked, at: a.at, error: a.error === undefined }).toEqual({ asked, at: b.at, error: b.error === undefined });
            reach.hit(a.at > before && typeof asked !== "number" ? "per dimension, after a wait" : "other reserve");
            reach.hit("a dimension left out", typeof asked !== "number" && Object.keys(asked).length < names.length);
            held.push({ r: a.value!, m: b.value! });
            continue;
          }
          const target = held[held.length - 1 - op.back];
          if (target === undefined) continue;
          if (op.cancel) {
            expect(target.r.cancel()).toBe(target.m.cancel());
            reach.hit("cancel");
          } else {
            const actual: Permits = op.whole
              ? (op.actuals[0] ?? 0)
              : Object.fromEntries(names.map((n, i) => [n, op.actuals[i]]).filter(([, a]) => a !== null && a !== undefined));
            expect(target.r.settle(actual)).toBe(target.m.settle(actual));
            reach.hit(typeof actual === "number" ? "settle by a number" : "settle per dimension");
          }
          await target.r.applied;
        }
      }),
      { numRuns: 200 },
    );
    reach.atLeast({ "per dimension, after a wait": 40, "a dimension left out": 150, "settle per dimension": 100, "settle by a number": 12, cancel: 20 });
  }, 120_000);
});
