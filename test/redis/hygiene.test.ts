/**
 * Key hygiene: no key without a TTL, idle keys disappear, memory stays bounded, and a cluster-unsafe
 * key layout cannot be built (every key of a store shares one hash tag; scripts run on a real
 * one-node Redis Cluster, which refuses cross-slot keys).
 */
import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, expect, test, vi } from "vitest";
import {
  combineRedis,
  fromIoredis,
  RedisSmoothLimiter,
  RedisStore,
  RedisWindowLimiter,
} from "../../src/redis.ts";
import { describeRedis, type RedisServer, startRedis, useRedis } from "./server.ts";

/** Redis Cluster's key slot: CRC16/XMODEM of the hash tag (or the whole key), mod 16384. */
function keySlot(key: string): number {
  const open = key.indexOf("{");
  if (open !== -1) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of new TextEncoder().encode(key)) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

async function workload(store: RedisStore, ms: number): Promise<void> {
  const overall = new RedisWindowLimiter({ store, key: "overall", limit: 5, interval: ms });
  const smooth = new RedisSmoothLimiter({ store, key: "smooth", limit: 50, interval: ms, burst: 2 });
  const both = combineRedis(overall, smooth);
  const controller = new AbortController();
  const waits = Array.from({ length: 12 }, (_, i) =>
    (i % 3 === 0 ? overall : i % 3 === 1 ? smooth : both).acquire(1, i === 11 ? { signal: controller.signal } : {}));
  await new Promise((resolve) => setTimeout(resolve, 5));
  controller.abort();
  both.pause(ms / 10);
  await Promise.allSettled(waits);
}

describeRedis("key hygiene", () => {
  let server: RedisServer;
  let redis: Redis;

  useRedis((s, r) => {
    server = s;
    redis = r;
  });

  test("every key written carries a TTL, and every key of a store shares the store's hash tag (one Cluster slot)", async () => {
    const store = new RedisStore({ client: fromIoredis(redis), name: "ttl" });
    await workload(store, 100);
    const keys = await redis.keys("{sluice:ttl}*");
    expect(keys.length).toBeGreaterThan(5);
    // every kind of key was written: smooth state, queue and undo log; window entries and pause; records
    for (const suffix of [/:s:smooth$/, /:s:smooth:q$/, /:s:smooth:b$/, /:w:overall$/, /:w:overall:m$/, /:r:/]) {
      expect(keys.some((key) => suffix.test(key)), String(suffix)).toBe(true);
    }
    for (const key of keys) {
      expect({ key, ttl: await redis.pttl(key) }).toMatchObject({ key, ttl: expect.any(Number) });
      expect(await redis.pttl(key)).toBeGreaterThan(0);
    }
    expect(new Set(keys.map(keySlot)).size).toBe(1);
  });

  test("idle keys disappear on their own: state, queues, reservation records and tombstones", async () => {
    const store = new RedisStore({
      client: fromIoredis(redis),
      name: "idle",
      keyTtlMargin: 50,
      cancelGrace: 100,
      tombstoneTtl: 200,
    });
    await workload(store, 100);
    expect(await redis.keys("{sluice:idle}*")).not.toEqual([]);
    await vi.waitFor(async () => expect(await redis.keys("{sluice:idle}*")).toEqual([]), { timeout: 3000, interval: 50 });
  });

  test("memory is bounded: a flood of reservations stops at limit + maxPending entries per key", async () => {
    const store = new RedisStore({ client: fromIoredis(redis), name: "bounded", maxPending: 50 });
    const window = new RedisWindowLimiter({ store, key: "w", limit: 10, interval: 1000 });
    const smooth = new RedisSmoothLimiter({ store, key: "s", limit: 10 });
    const replies = await Promise.all(
      Array.from({ length: 300 }, (_, i) => (i % 2 ? window : smooth).reserveOnce(`r${i}`, 1)),
    );
    expect(replies.filter((r) => r.code === 3).length).toBeGreaterThan(150); // QueueFull: nothing written
    expect(await redis.zcard("{sluice:bounded}:w:w")).toBe(10 + 50);
    expect(await redis.zcard("{sluice:bounded}:s:s:q")).toBe(50);
    expect(await redis.hlen("{sluice:bounded}:s:s:b")).toBe(50); // one undo entry per queued reservation
    const records = await Promise.all(
      (await redis.keys("{sluice:bounded}:r:*")).map(async (k) => (await redis.get(k))!.split(",").filter((e) => e !== "").length),
    ); // entries = reservations
    expect(records.reduce((a, b) => a + b, 0)).toBe(replies.filter((r) => r.code === 1).length);
  });

  test("names that would break the hash tag are refused, and so is combining two stores", () => {
    expect(() => new RedisStore({ client: fromIoredis(redis), name: "a}b" })).toThrow(RangeError);
    const store = new RedisStore({ client: fromIoredis(redis), name: "ok" });
    expect(() => new RedisWindowLimiter({ store, key: "x{y}", limit: 1, interval: 1 })).toThrow(RangeError);
    const other = new RedisStore({ client: fromIoredis(redis), name: "other" });
    expect(() =>
      combineRedis(
        new RedisWindowLimiter({ store, key: "a", limit: 1, interval: 1 }),
        new RedisWindowLimiter({ store: other, key: "b", limit: 1, interval: 1 }),
      )
    ).toThrow("`combineRedis` needs limiters of one RedisStore");
  });
});

describeRedis("on a real Redis Cluster (one node owning every slot)", () => {
  let server: RedisServer;
  let cluster: Cluster;

  beforeAll(async () => {
    server = await startRedis({ cluster: true });
    const node = new Redis(server.port, "127.0.0.1");
    await node.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383");
    await vi.waitFor(async () => expect(await node.call("CLUSTER", "INFO")).toMatch(/cluster_state:ok/), {
      timeout: 10_000,
      interval: 50,
    });
    node.disconnect();
    cluster = new Cluster([{ host: "127.0.0.1", port: server.port }]);
  }, 20_000);
  afterAll(async () => {
    cluster?.disconnect();
    await server?.stop();
  });

  test("combinations run as one script in one slot (the cluster refuses cross-slot scripts, and none happens)", async () => {
    const store = new RedisStore({ client: fromIoredis(cluster), name: "cluster" });
    await workload(store, 100);
    const crossSlot = await cluster.eval("return 1", 2, "a", "b").catch((e: Error) => e.message);
    expect(crossSlot).toMatch(/CROSSSLOT/); // the guard is real...
    // A fixed server time: the reply's 1000 ms must not depend on how long a round trip takes here.
    const fixed = new RedisStore({ client: fromIoredis(cluster), name: "cluster", now: () => 1_760_000_000_000_000 });
    const both = combineRedis(
      new RedisWindowLimiter({ store: fixed, key: "a", limit: 1, interval: 1000 }),
      new RedisSmoothLimiter({ store: fixed, key: "b", limit: 1 }),
    );
    expect(await both.tryAcquireAsync()).toBe(0); // ...and our keys pass it
    expect(await both.tryAcquireAsync()).toBe(1000);
  });
});
