/**
 * What a Redis limiter's queue does while Redis is unavailable: the failure policy applied to a
 * caller, after any pause the server asked for, and — under `"open"` or a local share — handing the
 * caller back to Redis once it is back, rather than granting it by the policy.
 *
 * @module
 */
import type { Clock } from "../../clock.ts";
import { MaxWaitExceededError } from "../../errors.ts";
import { anySignal, sleep } from "../../http/timers.ts";
import type { Limiter } from "../../limiters/limiter.ts";
import type { Permits } from "../../limiters/reservation.ts";
import type { RedisUnavailableError } from "./errors.ts";
import { acquireUnavailable, tryUnavailable } from "./fallback.ts";
import type { FailurePolicy, RedisStore } from "./store.ts";
import type { Waiter } from "./waiter.ts";

/** What the outage handling needs of a limiter's queue. @internal */
export interface OutageQueue {
  readonly failure: FailurePolicy;
  readonly fallback: () => Limiter | undefined;
  readonly clock: Clock;
  readonly store: RedisStore;
  /** Until when the server asked to wait (see `RedisQueue.pause`). */
  readonly pausedUntil: number;
  /** Hands `waiter` back to Redis, its signal watched again, with `maxWait` ms left. */
  resume(waiter: Waiter, maxWait: number): void;
}

/**
 * The failure policy for one acquire, or one reserve (`asked`: a record of dimensions). A pause the
 * server asked for (a 429's Retry-After, through `pause`) holds during an outage too, re-checked after
 * the sleep (a later 429 may lengthen it). (Fleet red-team, 2026-11-27: under "open" the retries of a
 * 429 went 48 ms later, not 1 s; 3 × 50 callers through a 2-s outage drew 449 refusals.) @internal
 *
 * @example
 * ```ts
 * await outagePolicy(queue, 1, Infinity, undefined, new RedisUnavailableError("reserve", "recent failure"));
 * ```
 */
export function outagePolicy(queue: OutageQueue, permits: number, maxWait: number, signal: AbortSignal | undefined, error: RedisUnavailableError, asked: Permits = permits): Promise<void> {
  const wait = queue.failure === "closed" ? 0 : queue.pausedUntil - queue.clock.now();
  if (wait <= 0) return acquireUnavailable(queue.failure, queue.fallback, permits, maxWait, signal, error, asked);
  if (wait > maxWait) return Promise.reject(new MaxWaitExceededError(wait, maxWait));
  const from = queue.clock.now();
  return sleep(queue.clock, wait, signal).then(() => outagePolicy(queue, permits, maxWait - (queue.clock.now() - from), signal, error, asked));
}

/**
 * The failure policy for one try: a pause the server asked for answers its remaining time first. @internal
 *
 * @example
 * ```ts
 * outageTry(queue, 1, error); // 0: taken by the policy; else ms to wait
 * ```
 */
export function outageTry(queue: OutageQueue, permits: number, error: RedisUnavailableError): number {
  const wait = queue.failure === "closed" ? 0 : queue.pausedUntil - queue.clock.now();
  if (wait > 0) return wait;
  return tryUnavailable(queue.failure, queue.fallback, permits, error);
}

/**
 * Applies the failure policy to `waiter` (not queued with Redis: state "done", id ''), settling it.
 * - A pause the server asked for holds first; when it ends, Redis decides again if it is back, rather
 *   than every caller the pause released being granted by the policy at that instant (third review,
 *   2026-11-27: under "open", 50 sleepers of one process granted together with Redis back).
 * - Under a local share, a caller still waiting in the local limiter when the store's cooldown ends
 *   leaves it (an abort: it took nothing there) and asks Redis again with what is left of its
 *   `maxWait`: the callers queued locally during an outage were otherwise still granted there for
 *   seconds after Redis came back, on top of its full rate (fleet red-team, 2026-11-27: 40 waiters in
 *   one process drained 7–8 s later; 89–132 refusals). @internal
 *
 * @example
 * ```ts
 * fallBack(queue, waiter, waiter.maxWait, error); // settles waiter, or hands it back to Redis
 * ```
 */
export function fallBack(queue: OutageQueue, waiter: Waiter, maxWait: number, error: RedisUnavailableError): void {
  const { clock, store } = queue;
  const paused = queue.failure === "closed" ? 0 : queue.pausedUntil - clock.now();
  const again = (from: number): void => {
    const left = Math.max(0, maxWait - (clock.now() - from));
    if (store.isDown() || queue.pausedUntil > clock.now()) fallBack(queue, waiter, left, error);
    else queue.resume(waiter, left);
  };
  if (paused > 0 && paused <= maxWait) {
    const from = clock.now();
    sleep(clock, paused, waiter.signal).then(() => again(from), waiter.reject);
    return;
  }
  if (typeof queue.failure !== "object" || store.retryAfterFailure <= 0) {
    outagePolicy(queue, waiter.permits, maxWait, waiter.signal, error, waiter.asked).then(waiter.resolve, waiter.reject);
    return;
  }
  const from = clock.now();
  const back = new AbortController();
  const timer = clock.setTimeout(() => back.abort(), store.retryAfterFailure);
  outagePolicy(queue, waiter.permits, maxWait, anySignal([waiter.signal, back.signal]), error, waiter.asked).then(
    () => {
      clock.clearTimeout(timer);
      waiter.resolve();
    },
    (reason: unknown) => {
      clock.clearTimeout(timer);
      if (!back.signal.aborted || waiter.signal?.aborted === true) waiter.reject(reason);
      else again(from);
    },
  );
}
