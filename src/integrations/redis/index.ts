/**
 * sluice/redis: the same limiters, shared by every process and machine through Redis (or Valkey).
 * Each decision is one atomic script call that returns a delay; waiting stays in-process, with one
 * timer per limiter. See `docs/redis.md` for the failure policy and the key layout.
 *
 * @example
 * ```ts
 * import { Redis } from "ioredis";
 * import { combineRedis, fromIoredis, RedisStore, RedisWindowLimiter } from "sluice/redis";
 *
 * const store = new RedisStore({ client: fromIoredis(new Redis()), name: "github" });
 * const overall = new RedisWindowLimiter({ store, key: "core", limit: 5000, interval: 3_600_000 });
 * const search = combineRedis(overall, new RedisWindowLimiter({ store, key: "search", limit: 30, interval: 60_000 }));
 * await search.acquire();
 * ```
 *
 * @module
 */
export { fromIoredis, fromNodeRedis, type IoredisLike, type NodeRedisLike } from "./adapters.ts";
export type { RedisScriptClient } from "./client.ts";
export { RedisCommandError, type RedisOperation, RedisUnavailableError } from "./errors.ts";
export { type PolicySpec, RedisLimiter, type RedisLimiterOptions } from "./limiter.ts";
export {
  combineRedis,
  type NamedRedisLimiters,
  RedisCombinedLimiter,
  type RedisCombinedLimiterOptions,
  RedisSmoothLimiter,
  type RedisSmoothLimiterOptions,
  RedisWindowLimiter,
  type RedisWindowLimiterOptions,
} from "./limiters.ts";
export { RedisReservation } from "./reservation.ts";
export { type FailurePolicy, REDIS_DEFAULTS, type RedisErrorEvent, RedisStore, type RedisStoreOptions, type Reply } from "./store.ts";
