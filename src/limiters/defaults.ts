/**
 * Default option values of the limiters, in one place so code, types and README cannot drift apart.
 *
 * @module
 */

/**
 * The defaults every built-in limiter uses when an option is left out.
 *
 * @example
 * ```ts
 * import { LIMITER_DEFAULTS } from "sluice";
 * console.log(LIMITER_DEFAULTS.interval); // 1000
 * ```
 */
export const LIMITER_DEFAULTS: {
  /** Length of the rate interval in ms: `limit` permits per `interval`. */
  readonly interval: number;
  /** Permits a SmoothLimiter stores from idle time (0 = pure smoothing). */
  readonly burst: number;
  /** Waiters allowed in one limiter's queue before `QueueFullError`. */
  readonly maxQueue: number;
  /** Longest predicted wait accepted before `MaxWaitExceededError`, in ms. */
  readonly maxWait: number;
  /** KeyedLimiter: keys kept before idle ones are evicted. */
  readonly maxKeys: number;
  /** KeyedLimiter: ms a key must go unused (and be at rest) before it may be evicted. */
  readonly idleTimeout: number;
  /** ms a request waits at the front of its priority level to count one level higher (see README "Priorities"). */
  readonly priorityAging: number;
} = Object.freeze({
  interval: 1000,
  burst: 0,
  maxQueue: Infinity,
  maxWait: Infinity,
  maxKeys: 10_000,
  idleTimeout: 60_000,
  priorityAging: 1000,
});
