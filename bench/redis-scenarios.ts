/**
 * The decisions `bench/redis.ts` measures, shared by the benchmark and its child processes (the
 * scaling section runs the same decisions from several processes on the same keys). Limits never
 * bind, so every call is a grant and each figure is the cost of deciding.
 *
 * @module
 */
import type { Redis } from "ioredis";
import { RateLimiterRedis } from "rate-limiter-flexible";
import { combineRedis, fromIoredis, type RedisLimiter, RedisSmoothLimiter, RedisStore, RedisWindowLimiter } from "../src/redis.ts";

/** One measured decision: a library, what it decides, and how the row is labelled. */
export interface Scenario {
  readonly id: string;
  readonly library: string;
  readonly decision: string;
}

export const SCENARIOS: readonly Scenario[] = [
  { id: "smooth", library: "sluice/redis `acquire()`", decision: "smooth, 1 key (future debt)" },
  { id: "window", library: "sluice/redis `acquire()`", decision: "strict rolling window, 1 key" },
  { id: "combined", library: "sluice/redis `acquire()`", decision: "window + smooth, combined (atomic)" },
  { id: "try", library: "sluice/redis `tryAcquireAsync()`", decision: "strict rolling window, 1 key" },
  { id: "single", library: "sluice/redis, one call per decision", decision: "strict rolling window, 1 key (unbatched `reserve`)" },
  { id: "rlf", library: "rate-limiter-flexible `consume()`", decision: "fixed-window counter, 1 key" },
];

const HUGE = 1_000_000_000;

/**
 * An operation `op(lane, i)` deciding one `scenario` through `client`, on the keys of `family`
 * (processes given the same family share the keys).
 */
export function decision(scenario: string, client: Redis, family: string): (lane: number, i: number) => Promise<unknown> {
  if (scenario === "rlf") {
    const rlf = new RateLimiterRedis({ storeClient: client, keyPrefix: `rlf-${family}`, points: HUGE, duration: 1 });
    return () => rlf.consume("k", 1);
  }
  const store = new RedisStore({ client: fromIoredis(client), name: family });
  const window = (): RedisLimiter => new RedisWindowLimiter({ store, key: "w", limit: HUGE, interval: 1000 });
  const smooth = (): RedisLimiter => new RedisSmoothLimiter({ store, key: "s", limit: HUGE, interval: 1000 });
  switch (scenario) {
    case "smooth": {
      const limiter = smooth();
      return () => limiter.acquire();
    }
    case "window": {
      const limiter = window();
      return () => limiter.acquire();
    }
    case "combined": {
      const limiter = combineRedis(window(), smooth());
      return () => limiter.acquire();
    }
    case "try": {
      const limiter = window();
      return () => limiter.tryAcquireAsync();
    }
    case "single": {
      const limiter = window();
      let n = 0;
      const tag = Math.random().toString(36).slice(2);
      return () => limiter.reserveOnce(`${tag}-${n++}`, 1);
    }
    default:
      throw new RangeError(`unknown scenario "${scenario}"`);
  }
}

/** The sorted latencies' value at quantile `p`. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

/**
 * Runs `lanes` closed loops of `op` (send one, await it, repeat) until `deadline` (performance.now()
 * ms); returns the number of decisions and their latencies in ms.
 */
export async function closedLoop(lanes: number, deadline: number, op: (lane: number, i: number) => Promise<unknown>): Promise<number[]> {
  const latencies: number[] = [];
  let counter = 0;
  await Promise.all(Array.from({ length: lanes }, async (_, lane) => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      await op(lane, counter++);
      latencies.push(performance.now() - t0);
    }
  }));
  return latencies;
}
