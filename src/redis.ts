/**
 * Entry point `sluice/redis` (JSR `@sluice/sluice/redis`): distributed limiters on Redis. Kept out
 * of the core entry so that importing `sluice` never loads it.
 *
 * @example
 * ```ts
 * import { fromNodeRedis, RedisStore, RedisSmoothLimiter } from "sluice/redis";
 * const store = new RedisStore({ client: fromNodeRedis(redis), name: "api" });
 * const limiter = new RedisSmoothLimiter({ store, key: "default", limit: 10 });
 * ```
 *
 * @module
 */
export * from "./integrations/redis/index.ts";
