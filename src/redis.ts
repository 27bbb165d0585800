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
// The core types this entry's API mentions, so its documentation is complete on its own. Types only:
// the classes themselves come from the main entry, so there is one copy of each at run time.
export type {
  AcquireOptions,
  Clock,
  GatedLimiter,
  Limiter,
  LimiterEventListener,
  LimiterEvents,
  LimiterEventType,
  LimiterListenerOptions,
  LimiterStats,
  Permits,
  Rate,
  Reservation,
  ReserveOptions,
  ScheduleOptions,
  SluiceError,
  TimerHandle,
} from "./index.ts";
