/**
 * The reservation semantics as tables of steps, in injected time (ms from t = 0): each step runs on
 * the Lua scripts AND on the reference model, and both must give the expected grant time.
 */
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
import { describeRedis, type RedisServer, startRedis, useRedis } from "./server.ts";

/** [time ms, operation, limiter, reservation id, expected grant ms | "wait" | "full" | "cancelled" | "refunded" | "none"] */
type Step = [number, "reserve" | "cancel" | "pause", string, string, number | string, number?];

const T0 = 1_760_000_000_000_000; // µs

describeRedis("reservations (Lua and reference, step by step)", () => {
  let server: RedisServer;
  let redis: Redis;
  let family = 0;

  useRedis((s, r) => {
    server = s;
    redis = r;
  });

  async function play(
    build: (store: RedisStore) => Record<string, RedisLimiter>,
    steps: Step[],
    options: { maxPending?: number } = {},
  ): Promise<void> {
    let now = T0;
    const store = new RedisStore({
      client: fromIoredis(redis),
      name: `steps-${family++}`,
      now: () => now,
      keyTtlMargin: 600_000,
      maxPending: options.maxPending ?? 10_000,
    });
    const reference = new ReferenceStore({ maxPending: options.maxPending ?? 10_000, grace: store.cancelGrace });
    const limiters = build(store);
    for (const [i, [t, op, name, id, expected, n = 1]] of steps.entries()) {
      now = T0 + t * 1000;
      const limiter = limiters[name]!;
      const [lua, ref] = op === "reserve"
        ? [await limiter.reserveOnce(id, n), reference.reserve(limiter.specs, id, n, Infinity, now)]
        : op === "cancel"
        ? [await limiter.cancelOnce(id), reference.cancel(limiter.specs, id)]
        : [await limiter.pauseOnce(expected as number), reference.pause(limiter.specs, (expected as number) * 1000, now)];
      expect({ step: i, ...lua }).toEqual({ step: i, ...ref });
      const outcome = op === "pause" ? expected
        : op === "cancel" ? (lua.code === 1 ? "refunded" : "none")
        : lua.code === 1 || lua.code === 5 ? (lua.at - T0) / 1000
        : ({ 2: "wait", 3: "full", 4: "cancelled" } as Record<number, string>)[lua.code];
      expect({ step: i, outcome }).toEqual({ step: i, outcome: expected });
    }
  }

  test("smooth: each reservation books the next slot; cancelling the newest gives its slot back", async () => {
    await play((store) => ({ s: new RedisSmoothLimiter({ store, key: "s", limit: 10 }) }), [
      [0, "reserve", "s", "a", 0],
      [0, "reserve", "s", "b", 100],
      [0, "reserve", "s", "c", 200],
      [10, "cancel", "s", "c", "refunded"],
      [10, "reserve", "s", "d", 200],
    ]);
  });

  test("smooth: cancelling a middle reservation, then the newest, reclaims both slots", async () => {
    await play((store) => ({ s: new RedisSmoothLimiter({ store, key: "s", limit: 10 }) }), [
      [0, "reserve", "s", "a", 0],
      [0, "reserve", "s", "b", 100],
      [0, "reserve", "s", "c", 200],
      [5, "cancel", "s", "b", "refunded"],
      [5, "reserve", "s", "x", 300], // b's slot is a hole behind c: FIFO newcomers cannot use it
      [6, "cancel", "s", "x", "refunded"],
      [6, "cancel", "s", "c", "refunded"],
      [6, "reserve", "s", "d", 100], // the whole cancelled suffix came back
    ]);
  });

  test("smooth: a cancel is idempotent — the retried cancel refunds nothing", async () => {
    await play((store) => ({ s: new RedisSmoothLimiter({ store, key: "s", limit: 10 }) }), [
      [0, "reserve", "s", "a", 0],
      [0, "reserve", "s", "b", 100],
      [1, "cancel", "s", "b", "refunded"],
      [1, "cancel", "s", "b", "none"],
      [1, "reserve", "s", "b", "cancelled"], // a late or resent reserve of a cancelled id is voided
      [1, "reserve", "s", "c", 100],
    ]);
  });

  test("smooth: an immediate grant between queued ones is a barrier: the queued one before it restores nothing", async () => {
    await play((store) => {
      const s = new RedisSmoothLimiter({ store, key: "s", limit: 100, burst: 5 }); // T = 10 ms
      const w = new RedisWindowLimiter({ store, key: "w", limit: 1, interval: 20 });
      return { s, sw: combineRedis(s, w) };
    }, [
      [0, "reserve", "sw", "a", 0],
      [0, "reserve", "sw", "b", 20], // queued by the window; s re-anchors at 20 with burst stored
      [0, "reserve", "s", "c", 0], // s alone: granted now from the burst, after b was queued
      [1, "cancel", "sw", "b", "refunded"], // the window gets b's slot back...
      [1, "reserve", "s", "d", 1], // ...but s keeps c's take (and b's debt) in force:
      [1, "reserve", "s", "e", 1], // two stored permits left, then the 10 ms spacing
      [1, "reserve", "s", "f", 10],
      [1, "reserve", "s", "g", 20],
    ]);
  });

  test("smooth: nor does a middle cancel hand its state across such a barrier", async () => {
    await play((store) => {
      const s = new RedisSmoothLimiter({ store, key: "s", limit: 100, burst: 5 }); // T = 10 ms
      const w = new RedisWindowLimiter({ store, key: "w", limit: 1, interval: 20 });
      return { s, sw: combineRedis(s, w) };
    }, [
      [0, "reserve", "sw", "a", 0],
      [0, "reserve", "sw", "b", 20],
      [0, "reserve", "s", "c", 0], // the barrier: granted now, between b and d
      [0, "reserve", "sw", "d", 40],
      [1, "cancel", "sw", "b", "refunded"], // b is in the middle, with c's take after it
      [1, "cancel", "sw", "d", "refunded"], // d is the newest: s returns to just before d (c kept)
      [1, "reserve", "s", "e", 1],
      [1, "reserve", "s", "f", 1],
      [1, "reserve", "s", "g", 10],
    ]);
  });

  test("smooth: a pause holds even after a cancel restores an earlier state", async () => {
    await play((store) => ({ s: new RedisSmoothLimiter({ store, key: "s", limit: 10 }) }), [
      [0, "reserve", "s", "a", 0],
      [0, "reserve", "s", "b", 100],
      [1, "pause", "s", "", 500],
      [2, "cancel", "s", "b", "refunded"],
      [2, "reserve", "s", "c", 501],
    ]);
  });

  test("window: never more than `limit` in any window; grants are FIFO; a cancelled middle grant frees its place exactly", async () => {
    await play((store) => ({ w: new RedisWindowLimiter({ store, key: "w", limit: 2, interval: 1000 }) }), [
      [0, "reserve", "w", "a", 0],
      [0, "reserve", "w", "b", 0],
      [10, "reserve", "w", "c", 1000],
      [10, "reserve", "w", "d", 1000],
      [10, "reserve", "w", "e", 2000],
      [20, "cancel", "w", "c", "refunded"],
      [20, "reserve", "w", "f", 2000], // FIFO: never before e, though c's place at 1000 is free
      [30, "cancel", "w", "e", "refunded"],
      [30, "cancel", "w", "f", "refunded"],
      [30, "reserve", "w", "g", 1000], // back to the hole once nothing newer holds it
    ]);
  });

  test("window: a multi-permit request waits for enough old grants to leave", async () => {
    await play((store) => ({ w: new RedisWindowLimiter({ store, key: "w", limit: 5, interval: 1000 }) }), [
      [0, "reserve", "w", "a", 0, 2],
      [100, "reserve", "w", "b", 100, 2],
      [200, "reserve", "w", "c", 1000, 2], // needs a's 2 permits to leave
      [200, "reserve", "w", "d", 1100, 3], // needs b's too
    ]);
  });

  test("combine: one instant for all keys, and every key is FIFO — a booked grant holds its place", async () => {
    await play((store) => {
      const overall = new RedisWindowLimiter({ store, key: "overall", limit: 3, interval: 1000 });
      const search = new RedisWindowLimiter({ store, key: "search", limit: 1, interval: 1000 });
      return { overall, search: combineRedis(overall, search) };
    }, [
      [0, "reserve", "search", "a", 0],
      [0, "reserve", "search", "b", 1000], // the search channel waits; overall is booked at 1000 too
      [0, "reserve", "overall", "c", 1000], // FIFO on overall: never before b's booked grant
      [0, "reserve", "overall", "d", 1000],
      [0, "reserve", "overall", "e", 2000], // b, c, d fill the window that starts at 1000
    ]);
    expect(await redis.zcard(`{sluice:steps-${family - 1}}:w:overall`)).toBe(5);
    expect(await redis.zcard(`{sluice:steps-${family - 1}}:w:search`)).toBe(2);
  });

  test("maxPending: a key refuses to queue more than maxPending reservations, and writes nothing", async () => {
    await play((store) => ({ s: new RedisSmoothLimiter({ store, key: "s", limit: 10 }) }), [
      [0, "reserve", "s", "a", 0],
      [0, "reserve", "s", "b", 100],
      [0, "reserve", "s", "c", 200],
      [0, "reserve", "s", "d", "full"],
      [150, "reserve", "s", "e", "full"], // b is granted but still cancellable (grace), so it still counts
    ], { maxPending: 2 });
  });
});
