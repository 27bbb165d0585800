/**
 * Differential test: random reserve / settle / cancel / pause / advance sequences with injected time give
 * exactly the same replies (code, delay, grant time — integer microseconds) from the Lua scripts on
 * a real Redis as from the reference model built on the in-memory policies.
 */
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import {
  combineRedis,
  fromIoredis,
  type RedisLimiter,
  RedisSmoothLimiter,
  RedisStore,
  RedisWindowLimiter,
} from "../../src/redis.ts";
import { ReferenceStore } from "./reference.ts";
import { Reach } from "../reach.ts";
import { describeRedis, type RedisServer, startRedis, useRedis } from "./server.ts";

type SpecInput =
  | { kind: "s"; limit: number; interval: number; burst: number; initialFrac: number }
  | { kind: "w"; limit: number; interval: number };

type Op =
  | { t: "reserve"; combo: number; n: number; maxWaitMs: number; settles: boolean; dims: number[] | null }
  | { t: "settle"; back: number; rel: "zero" | "less" | "same" | "more"; by: number; then: "none" | "cancel" | "settle" | "resend" }
  | { t: "resend"; back: number }
  | {
    t: "burst";
    combo: number;
    replay: number;
    requests: { n: number; maxWaitMs: number; cancelAhead: boolean; settles: boolean; dims: number[] | null }[];
  }
  | { t: "cancel"; back: number; ghost: boolean }
  | { t: "cancelMany"; k: number; newestFirst: boolean; rotate: number }
  | { t: "pause"; combo: number; durUs: number }
  | { t: "advance"; dtUs: number };

const specArb: fc.Arbitrary<SpecInput> = fc.oneof(
  fc.record({
    kind: fc.constant("s" as const),
    limit: fc.constantFrom(1, 2, 3, 0.5, 7, 10, 1 / 3),
    interval: fc.constantFrom(10, 100, 333, 1000, 86_400_000),
    burst: fc.constantFrom(0, 1, 2.5, 5),
    initialFrac: fc.constantFrom(0, 0.5, 1),
  }),
  fc.record({
    kind: fc.constant("w" as const),
    limit: fc.oneof(fc.integer({ min: 1, max: 5 }), fc.constant(12)),
    interval: fc.constantFrom(50, 100, 1000, 7, 86_400_000),
  }),
);

// Named dimensions: one amount per key (0 = the key takes no part), in about a third of the requests.
const dimsArb: fc.Arbitrary<number[] | null> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 4 })), { minLength: 3, maxLength: 3 }) },
);

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({
    t: fc.constant("reserve" as const),
    combo: fc.nat(7),
    n: fc.integer({ min: 1, max: 4 }),
    maxWaitMs: fc.oneof(fc.constant(Infinity), fc.constant(0), fc.integer({ min: 0, max: 3000 })),
    settles: fc.integer({ min: 0, max: 3 }).map((x) => x > 0),
    dims: dimsArb,
  }) },
  // A reservation settled with its actual cost (less, as reserved, more, or nothing used), then
  // perhaps, in the same call, cancelled or settled again (the first wins), or the settle resent.
  { weight: 6, arbitrary: fc.record({
    t: fc.constant("settle" as const),
    back: fc.nat(5),
    rel: fc.constantFrom("zero" as const, "less" as const, "same" as const, "more" as const, "more" as const),
    by: fc.integer({ min: 1, max: 6 }),
    then: fc.constantFrom("none" as const, "none" as const, "cancel" as const, "settle" as const, "resend" as const),
  }) },
  // A reserve sent again with the same id (a retried request): a replay, or voided by its cancel.
  { weight: 4, arbitrary: fc.record({ t: fc.constant("resend" as const), back: fc.nat(4) }) },
  // Several reserves decided by ONE script call (what the batcher sends): each must get exactly the
  // reply it would get alone, in order. `replay` 0 resends the previous batch whole (a client's resend:
  // replays, or tombstones where cancelled since); `cancelAhead` cancels a member before its batch
  // arrives (an ambiguous timeout's cancel overtaking it).
  { weight: 4, arbitrary: fc.record({
    t: fc.constant("burst" as const),
    combo: fc.nat(7),
    replay: fc.integer({ min: 0, max: 3 }),
    requests: fc.array(
      fc.record({
        n: fc.integer({ min: 1, max: 4 }),
        maxWaitMs: fc.oneof(fc.constant(Infinity), fc.constant(0), fc.integer({ min: 0, max: 3000 })),
        cancelAhead: fc.integer({ min: 0, max: 9 }).map((x) => x === 0),
        settles: fc.integer({ min: 0, max: 3 }).map((x) => x > 0),
        dims: dimsArb,
      }),
      { minLength: 2, maxLength: 12 },
    ),
  }) },
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant("cancel" as const),
      back: fc.nat(5),
      ghost: fc.integer({ min: 0, max: 9 }).map((x) => x === 0),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant("cancelMany" as const),
      k: fc.integer({ min: 2, max: 4 }),
      newestFirst: fc.boolean(),
      rotate: fc.nat(3),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("pause" as const), combo: fc.nat(7), durUs: fc.integer({ min: 1, max: 800_000 }) }) },
  { weight: 4, arbitrary: fc.record({
    t: fc.constant("advance" as const),
    dtUs: fc.oneof(fc.integer({ min: 0, max: 40_000 }), fc.integer({ min: 0, max: 3_000_000 }), fc.constant(61_000_000)),
  }) },
);

const scenarioArb = fc.record({
  specs: fc.array(specArb, { minLength: 1, maxLength: 3 }),
  combos: fc.array(fc.uniqueArray(fc.nat(2), { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 4 }),
  ops: fc.array(opArb, { minLength: 5, maxLength: 60 }),
  // around today's epoch in µs, and far beyond 2^50
  start: fc.oneof(fc.constant(1_760_000_000_000_000), fc.integer({ min: 0, max: 2 ** 52 })),
  maxPending: fc.integer({ min: 1, max: 6 }),
});

describeRedis("Lua scripts vs the in-memory policies (differential)", () => {
  let server: RedisServer;
  let redis: Redis;
  let run = 0;

  useRedis((s, r) => {
    server = s;
    redis = r;
  });

  test("random reserve/settle/cancel/pause/advance sequences give identical grant times, µs for µs", async () => {
    // Reply codes of the reference (reference.ts): what each compared reply was.
    const codes = ["none", "ok", "wait", "full", "cancelled", "replay"];
    const reach = new Reach("Redis differential");
    // How often a batched request reached each outcome (granted now / queued / refused by maxWait /
    // queue full / replay / tombstone), so the interesting branches are known to be exercised.
    const batched = new Map<number | string, number>();
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (scenario) => {
        reach.run();
        let now = scenario.start;
        const grace = 60_000;
        const store = new RedisStore({
          client: fromIoredis(redis),
          name: `diff-${run++}`,
          now: () => now,
          maxPending: scenario.maxPending,
          cancelGrace: grace,
          tombstoneTtl: 600_000,
          keyTtlMargin: 600_000,
          timeout: 5000,
        });
        const members: RedisLimiter[] = scenario.specs.map((s, i) =>
          s.kind === "s"
            ? new RedisSmoothLimiter({
              store,
              key: `k${i}`,
              limit: s.limit,
              interval: s.interval,
              burst: s.burst,
              initialPermits: s.burst * s.initialFrac,
            })
            : new RedisWindowLimiter({ store, key: `k${i}`, limit: s.limit, interval: s.interval })
        );
        const combos = scenario.combos
          .map((idx) => idx.filter((i) => i < members.length))
          .filter((idx) => idx.length > 0)
          .map((idx) => (idx.length === 1 ? members[idx[0]!]! : combineRedis(...idx.map((i) => members[i]!))));
        if (combos.length === 0) combos.push(members[0]!);
        const reference = new ReferenceStore({ maxPending: scenario.maxPending, grace });
        type Amount = number | number[];
        const issued: { id: string; combo: RedisLimiter; n?: Amount; maxWaitMs?: number; settles?: boolean; size: Amount }[] = [];
        let lastBurst: { batch: string; combo: RedisLimiter; ns: Amount[]; waits: number[]; settles: boolean[] } | undefined;
        /** A request's permits: `n` of every key, or its own amount per key (clamped to a window's limit). */
        const amountOf = (combo: RedisLimiter, n: number, dims: number[] | null): Amount => {
          const max = combo.specs.map((s) => (s.kind === "w" ? s.limit : Infinity));
          if (dims === null) return Math.min(n, ...max);
          reach.hit("reserve per dimension");
          if (dims.slice(0, max.length).includes(0)) reach.hit("a dimension asked 0 (takes no part)");
          return max.map((m, i) => Math.min(dims[i]!, m));
        };
        const ended = new Set<string>(); // reservations settled (or tried) by a settle op
        const granted = new Set<string>(); // reservations the reference granted
        let step = 0;
        for (const op of scenario.ops) {
          step++;
          if (op.t === "advance") {
            now += op.dtUs;
            continue;
          }
          if (op.t === "reserve") {
            const combo = combos[op.combo % combos.length]!;
            const n = amountOf(combo, op.n, op.dims);
            const id = `r${step}/1`; // the only reservation of batch r<step>
            issued.push({ id, combo, n, maxWaitMs: op.maxWaitMs, settles: op.settles, size: n });
            const [actual] = await combo.reserveBatch(`r${step}`, [n], [op.maxWaitMs], [op.settles]);
            const expected = reference.reserve(combo.specs, id, n, op.maxWaitMs * 1000, now, op.settles);
            expect({ step, ...actual }).toEqual({ step, ...expected });
            if (expected.code === 1) granted.add(id);
            reach.hit(`reserve: ${codes[expected.code]}${expected.code === 1 && expected.delay > 0 ? " after a wait" : ""}`);
            if (typeof n !== "number") reach.hit(`reserve per dimension: ${codes[expected.code]}`);
          } else if (op.t === "resend") {
            const target = issued[issued.length - 1 - op.back];
            if (target?.n === undefined || target.maxWaitMs === undefined) continue; // burst members resend as a batch
            const [actual] = await target.combo.reserveBatch(target.id.slice(0, target.id.lastIndexOf("/")), [target.n], [
              target.maxWaitMs,
            ], [target.settles === true]);
            const expected = reference.reserve(target.combo.specs, target.id, target.n, target.maxWaitMs * 1000, now, target.settles);
            expect({ step, ...actual }).toEqual({ step, ...expected });
            reach.hit(`resend: ${codes[expected.code]}`);
          } else if (op.t === "burst") {
            const resent = op.replay === 0 ? lastBurst : undefined;
            const combo = resent?.combo ?? combos[op.combo % combos.length]!;
            const burst = resent ?? {
              batch: `b${step}`,
              combo,
              ns: op.requests.map((r) => amountOf(combo, r.n, r.dims)),
              waits: op.requests.map((r) => r.maxWaitMs),
              settles: op.requests.map((r) => r.settles),
            };
            const ids = burst.ns.map((_, i) => `${burst.batch}/${i + 1}`);
            if (resent === undefined) {
              // the cancels that overtake the batch arrive together, as one cancel call
              const ahead = ids.filter((_, i) => op.requests[i]!.cancelAhead);
              if (ahead.length > 0) {
                const actual = await combo.cancelBatch(ahead);
                ahead.forEach((id, i) => {
                  const expected = reference.cancel(combo.specs, id);
                  expect({ step, id, ...actual[i] }).toEqual({ step, id, ...expected });
                });
              }
              ids.forEach((id, i) => issued.push({ id, combo, settles: burst.settles[i], size: burst.ns[i]! }));
            }
            lastBurst = burst;
            const actual = await combo.reserveBatch(burst.batch, burst.ns, burst.waits, burst.settles);
            ids.forEach((id, i) => {
              const expected = reference.reserve(combo.specs, id, burst.ns[i]!, burst.waits[i]! * 1000, now, burst.settles[i]);
              expect({ step, i, ...actual[i] }).toEqual({ step, i, ...expected });
              if (expected.code === 1) granted.add(id);
              const outcome = expected.code === 1 ? (expected.delay > 0 ? "queued" : "now") : expected.code;
              batched.set(outcome, (batched.get(outcome) ?? 0) + 1);
            });
          } else if (op.t === "settle") {
            // Mostly reservations made to settle (granted, queued, refused or cancelled); sometimes an acquire.
            const pool = op.back === 5
              ? issued
              : issued.filter((r) => r.settles === true && (op.back > 2 || (granted.has(r.id) && !ended.has(r.id))));
            const target = pool[pool.length - 1 - (op.back % 5)];
            if (target === undefined) continue;
            // The settle, and what follows it in the same call (a cancel or a second settle of the same
            // reservation: the first wins); "resend" sends the same settle again in a call of its own.
            const cost = (n: number): number =>
              op.rel === "zero" ? 0 : op.rel === "less" ? Math.max(0, n - op.by) : op.rel === "same" ? n : n + op.by;
            const size = target.size;
            // per key when reserved per dimension (each key its own actual cost), else a number
            const first: Amount = typeof size === "number" ? cost(size) : size.map(cost);
            const again: Amount = typeof first === "number" ? first + 1 : first.map((a) => a + 1);
            const ids = op.then === "cancel" || op.then === "settle" ? [target.id, target.id] : [target.id];
            const actuals = op.then === "cancel" ? [first, undefined] : op.then === "settle" ? [first, again] : [first];
            const calls = op.then === "resend" ? [[0], [0]] : [ids.map((_, i) => i)];
            for (const call of calls) {
              const actual = await target.combo.settleBatch(call.map((i) => ids[i]!), call.map((i) => actuals[i]));
              call.forEach((i, k) => {
                const a = actuals[i];
                const expected = a === undefined
                  ? reference.cancel(target.combo.specs, target.id)
                  : reference.settle(target.combo.specs, target.id, a, now);
                expect({ step, i, ...actual[k] }).toEqual({ step, i, ...expected });
                const kind = a === undefined ? "cancel" : "settle";
                if (expected.code === 0) reach.hit(`${kind} after a settle or cancel, or unsettleable: none`);
                else if (a !== undefined) {
                  // compared in total (the reply's n is the reserved amount summed over the keys)
                  const sum = typeof a === "number" ? a : a.reduce((x, y) => x + y, 0);
                  const kind = sum < expected.delay ? "refund" : sum > expected.delay ? "debt" : "as reserved";
                  reach.hit(`settle: ${kind}`);
                  if (typeof a !== "number") reach.hit(`settle per dimension: ${kind}`);
                  for (const branch of reference.settleBranches) reach.hit(branch);
                }
              });
            }
            ended.add(target.id);
            reach.hit("settle then cancel or settle again", op.then !== "none");
          } else if (op.t === "cancelMany") {
            // A batch of recent reservations cancelled in some order: middle ones, then the newest, or back.
            const batch = issued.slice(-op.k);
            if (op.newestFirst) batch.reverse();
            const order = [...batch.slice(op.rotate % Math.max(1, batch.length)), ...batch.slice(0, op.rotate % Math.max(1, batch.length))];
            // Consecutive cancels through the same limiter go out as ONE cancel call (what the limiter's
            // cancel batcher sends); each must get the reply it would get alone, in order.
            for (let i = 0; i < order.length;) {
              let j = i + 1;
              while (j < order.length && order[j]!.combo === order[i]!.combo) j++;
              const group = order.slice(i, j);
              const actual = await group[0]!.combo.cancelBatch(group.map((t) => t.id));
              group.forEach((target, k) => {
                const expected = reference.cancel(target.combo.specs, target.id);
                expect({ step, id: target.id, ...actual[k] }).toEqual({ step, id: target.id, ...expected });
                reach.hit(`cancel: ${codes[expected.code]}`);
                if (group.length > 1) reach.hit(`batched cancel: ${codes[expected.code]}`);
              });
              i = j;
            }
          } else if (op.t === "cancel") {
            // Mostly recent ids (middle and newest reservations, repeats); sometimes one never reserved.
            const target = (op.ghost ? undefined : issued[issued.length - 1 - op.back]) ??
              { id: `ghost${step}`, combo: combos[op.back % combos.length]!, size: 1 };
            const actual = await target.combo.cancelOnce(target.id);
            const expected = reference.cancel(target.combo.specs, target.id);
            expect({ step, ...actual }).toEqual({ step, ...expected });
            reach.hit(`cancel: ${codes[expected.code]}`);
          } else {
            const combo = combos[op.combo % combos.length]!;
            const actual = await combo.pauseOnce(op.durUs / 1000);
            const expected = reference.pause(combo.specs, Math.round((op.durUs / 1000) * 1000), now);
            expect({ step, ...actual }).toEqual({ step, ...expected });
            reach.hit("pause");
          }
        }
        reach.hit("a combination of limiters", combos.some((c) => c.specs.length > 1));
      }),
      { numRuns: 500 },
    );
    reach.atLeast({
      "reserve: ok": 220, "reserve: ok after a wait": 100, "reserve: wait": 100, "reserve: full": 1,
      "resend: replay": 25, "resend: cancelled": 15, "cancel: ok": 200, "cancel: none": 300, pause: 80, "a combination of limiters": 60,
      "batched cancel: ok": 50, "batched cancel: none": 50,
      "settle: refund": 80, "settle: debt": 80, "settle: as reserved": 25,
      "settle after a settle or cancel, or unsettleable: none": 250, "cancel after a settle or cancel, or unsettleable: none": 50,
      "settle then cancel or settle again": 200,
      "smooth refund bounded by the grants since": 8, "smooth settle behind queued reservations (barrier)": 50,
      "window refund after the entry left the window": 2, "window debt before booked entries": 15,
      "reserve per dimension": 1500, "a dimension asked 0 (takes no part)": 800, "reserve per dimension: ok": 200,
      "reserve per dimension: wait": 20, "settle per dimension: refund": 3, "settle per dimension: debt": 20,
    });
    for (const outcome of ["now", "queued", 2, 3, 4, 5]) expect(batched.get(outcome) ?? 0, `batched ${outcome}`).toBeGreaterThan(20);
  });

  test("a late reserve after its cancel is voided by the tombstone, and a resent reserve is not taken twice", async () => {
    let now = 5_000_000;
    const store = new RedisStore({ client: fromIoredis(redis), name: "tombstone", now: () => now });
    const limiter = new RedisWindowLimiter({ store, key: "w", limit: 2, interval: 1000 });
    expect((await limiter.cancelOnce("late")).code).toBe(0); // unknown id: leaves a tombstone
    expect(await limiter.reserveOnce("late", 1)).toEqual({ code: 4, delay: 0, at: 0 }); // voided
    expect(await limiter.reserveOnce("twice", 2)).toEqual({ code: 1, delay: 0, at: now });
    now += 10;
    expect(await limiter.reserveOnce("twice", 2)).toEqual({ code: 5, delay: 0, at: now - 10 }); // replay, not taken again
    expect(await redis.zcard("{sluice:tombstone}:w:w")).toBe(1);
  });
});
