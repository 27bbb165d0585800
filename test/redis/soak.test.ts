/**
 * Soak of `sluice/redis` against a real redis-server, in real time (short): callers arriving at
 * random call `acquire`, `schedule` and `reserve` (settled or cancelled) on a window, a smooth and a
 * combined limiter, with random aborts and `maxWait`. Afterwards every call has settled, no limiter
 * has a caller queued, a Redis call pending or a timer armed, and no rejection went unhandled. The
 * assertions are causal (what settled, what is left), not timed, so a loaded machine only slows it.
 */
import type { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test, vi } from "vitest";
import { combineRedis, fromIoredis, type RedisLimiter, RedisSmoothLimiter, RedisStore, RedisWindowLimiter } from "../../src/redis.ts";
import { captureUnhandled, seededRandom } from "../helpers.ts";
import { Reach } from "../reach.ts";
import { describeRedis, useRedis } from "./server.ts";

const unhandled = captureUnhandled({ beforeAll, afterAll });
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describeRedis("sluice/redis soak: random calls, aborts and maxWait leave nothing behind", () => {
  let redis!: Redis;
  useRedis((_server, client) => {
    redis = client;
  });
  const reach = new Reach("redis soak");

  test("3 seeds × 300 calls on a window, a smooth and a combined limiter", async () => {
    unhandled.take();
    for (let seed = 1; seed <= 3; seed++) {
      const r = seededRandom(seed * 97);
      const store = new RedisStore({ client: fromIoredis(redis), name: `soak${seed}` });
      const limiters: RedisLimiter[] = [
        new RedisWindowLimiter({ store, key: "window", limit: 20, interval: 500 }),
        new RedisSmoothLimiter({ store, key: "smooth", limit: 30, interval: 500 }),
        combineRedis(new RedisWindowLimiter({ store, key: "w2", limit: 20, interval: 500 }), new RedisSmoothLimiter({ store, key: "s2", limit: 30, interval: 500 })),
      ];
      let settled = 0;
      const calls = Array.from({ length: 300 }, async () => {
        await sleep(r() * 2000);
        const limiter = limiters[Math.floor(r() * limiters.length)]!;
        const controller = new AbortController();
        if (r() < 0.2) setTimeout(() => controller.abort(new Error("abort")), r() * 300);
        const options: { signal: AbortSignal; maxWait?: number } = { signal: controller.signal };
        if (r() < 0.2) options.maxWait = r() * 200;
        const op = r();
        try {
          if (op < 0.4) await limiter.acquire(1, options);
          else if (op < 0.7) await limiter.schedule(() => sleep(r() * 30), options);
          else {
            const reservation = await limiter.reserve(1, options);
            await sleep(r() * 30);
            if (reach.hit("reservation settled", r() < 0.5)) await reservation.settle();
            else reach.hit("reservation cancelled", await reservation.cancel());
          }
          reach.hit("granted");
        } catch (error) {
          const e = error as Error;
          reach.hit(`refused: ${e.name === "Error" ? e.message : e.name}`);
        } finally {
          settled++;
        }
      });
      await Promise.all(calls);
      expect(settled).toBe(300);
      // A caller's abort sends its cancel to Redis after the caller has its rejection: wait for the
      // replies (causal: until nothing is pending, however slow the machine), then nothing may be left.
      await vi.waitFor(() => {
        for (const limiter of limiters) {
          expect({ queued: limiter.queued, inFlight: limiter.inFlight, timer: limiter.hasTimer }, `seed ${seed}`).toEqual({ queued: 0, inFlight: 0, timer: false });
        }
      }, { timeout: 20_000, interval: 10 });
    }
    expect(unhandled.take()).toEqual([]);
    reach.atLeast({ granted: 500, "reservation settled": 50, "reservation cancelled": 50, "refused: abort": 5 });
  }, 60_000);
});
