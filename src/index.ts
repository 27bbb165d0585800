/**
 * sluice: call rate-limited HTTP APIs politely and at full speed.
 *
 * Limiters that many concurrent callers share — smooth (future debt), strict rolling window, fixed
 * window, sliding counter — combined atomically across channels, keyed per host or tenant, with FIFO
 * order, abort, max-wait and bounded queues, all testable in virtual time; and a fetch-compatible
 * client on top that honours the server (Retry-After, RateLimit headers), pauses every caller on a
 * 429 and retries only when it is safe.
 *
 * @example
 * ```ts
 * import { createThrottledFetch, SmoothLimiter } from "sluice";
 *
 * const limiter = new SmoothLimiter({ limit: 10, interval: 1000 });
 * const api = createThrottledFetch({ limiter });
 * const pages = await Promise.all(urls.map((url) => api(url)));
 * ```
 *
 * @module
 */
export { type Clock, ManualClock, MAX_TIMER_DELAY, systemClock, type TimerHandle } from "./clock.ts";
export { isSluiceError, MaxWaitExceededError, QueueFullError, SluiceError } from "./errors.ts";
export { LIMITER_DEFAULTS } from "./limiters/defaults.ts";
export {
  type AcquireOptions,
  type BaseLimiterOptions,
  GatedLimiter,
  type Limiter,
  type ScheduleOptions,
} from "./limiters/limiter.ts";
export { SmoothLimiter, type SmoothLimiterOptions } from "./limiters/smooth.ts";
export { WindowLimiter, type WindowLimiterOptions } from "./limiters/window.ts";
export { FixedWindowLimiter, type FixedWindowLimiterOptions } from "./limiters/fixed-window.ts";
export { SlidingCounterLimiter, type SlidingCounterLimiterOptions } from "./limiters/sliding-counter.ts";
export { combine, CombinedLimiter, type CombinedLimiterOptions, type NamedLimiters } from "./limiters/combine.ts";
export { ConcurrencyLimiter, type ConcurrencyLimiterOptions } from "./limiters/concurrency.ts";
export { type Permits, Reservation, type ReserveOptions } from "./limiters/reservation.ts";
export { KeyedLimiter, type KeyedLimiterOptions } from "./limiters/keyed.ts";
export type { SetLimitOptions } from "./limiters/set-limit.ts";
export { ADAPTIVE_DEFAULTS, type AdaptiveOptions } from "./adaptive/options.ts";
export {
  type Advice,
  AdaptiveController,
  type RateChange,
  type RateChangeReason,
  type ResponseOutcome,
  type SendTag,
} from "./adaptive/controller.ts";
export { AdaptiveLimiter, type AdaptiveLimiterOptions, sendAdaptive } from "./adaptive/limiter.ts";
export { AdaptiveRates, type AdaptiveRatesOptions, type KeyedRateChange } from "./adaptive/rates.ts";
export { type LimiterEventListener, type LimiterEventType, LimiterEvents, type LimiterListenerOptions } from "./limiters/events.ts";
export type { LimiterStats, Rate } from "./limiters/stats.ts";
export { DEFAULTS } from "./defaults.ts";
export {
  createThrottledFetch,
  type ThrottledFetch,
} from "./http/throttled-fetch.ts";
export type {
  DelayContext,
  FetchInput,
  FetchLike,
  IdempotencyKeyOptions,
  ResponseEvent,
  RetryContext,
  RetryEvent,
  RetryOptions,
  ThrottledFetchOptions,
  ThrottleEvent,
} from "./http/options.ts";
export type { Cost, SettleContext, SettleFunction, SettleResult } from "./http/costs.ts";
export type { BackoffDefaults, BudgetDefaults, HttpDefaults, RetryDefaults } from "./http/defaults.ts";
export { RetryBudget, type RetryBudgetOptions } from "./http/budget.ts";
export { TimeoutError } from "./http/errors.ts";
export type { NoRetryReason, RetryVerdict, ServerTimedRetry } from "./http/retry.ts";
export { isReplayableBody } from "./http/body.ts";
export {
  EPOCH_SECONDS_THRESHOLD,
  type HeadersLike,
  type HttpDateOptions,
  MAX_DELAY_MS,
  parseHttpDate,
  parseRateLimit,
  parseRetryAfter,
  parseRetryAfterMs,
  type RateLimitInfo,
  type RateLimitOptions,
  type RateLimitSource,
  type RetryAfterOptions,
  serverDelay,
  type ServerDelay,
  type ServerDelayOptions,
  type ServerDelaySource,
} from "./http/headers.ts";
