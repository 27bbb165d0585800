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
// The core types this entry's API mentions, so its documentation is complete on its own. The classes
// are exported as values: a type-only re-export of a class came out of the declaration bundler as a
// plain one, so `instanceof SluiceError` from here type-checked and failed at run time (red-team,
// 2026-11-27). The build splits shared code into chunks, so there is still one copy of each class.
export { GatedLimiter, LimiterEvents, Reservation, SluiceError } from "./index.ts";
export type {
  AcquireOptions,
  Clock,
  Limiter,
  LimiterEventListener,
  LimiterEventType,
  LimiterListenerOptions,
  LimiterStats,
  Permits,
  Rate,
  ReserveOptions,
  ScheduleOptions,
  TimerHandle,
} from "./index.ts";
