/**
 * The public contract of a limiter: the {@link Limiter} interface any limiter (built-in or custom)
 * implements, and the options of `acquire`/`schedule` and of every built-in limiter. The base class
 * that implements it for the built-in limiters is in `limiter.ts`.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import type { MaxWaitExceededError, QueueFullError } from "../errors.ts";
import type { Permits, Reservation, ReserveOptions } from "./reservation.ts";
import type { LimiterStats } from "./stats.ts";

/**
 * Options for one {@link Limiter.acquire} call.
 *
 * @example
 * ```ts
 * await limiter.acquire(1, { signal: AbortSignal.timeout(5000), maxWait: 2000 });
 * ```
 */
export interface AcquireOptions {
  /** Aborting it while queued rejects with `signal.reason` and gives back exactly what was asked. */
  signal?: AbortSignal;
  /**
   * Reject at once with {@link MaxWaitExceededError} (carrying `retryAfter`) when the predicted wait
   * exceeds this many ms. Decided up front, without waiting. `0` means "only if granted now". The
   * prediction is the grant time, unless a later request on another limiter of the same domain
   * backfills ahead of this waiter while it is not yet the front of its limiter (only front waiters
   * hold a reservation): then it is granted later than predicted.
   * @default the limiter's `maxWait` (Infinity)
   */
  maxWait?: number;
  // --- priorities (see priority.ts) ---
  /**
   * Higher goes first among the callers waiting on this limiter; FIFO within a priority. Any finite
   * number (negative = after the default). Aging keeps low priorities moving: see the limiter's
   * `priorityAging`. Between limiters of a `combine` domain, order is unchanged (see README "Priorities").
   * @default 0
   * @example
   * ```ts
   * await limiter.acquire(1, { priority: 10 }); // ahead of the default-priority callers queued now
   * ```
   */
  priority?: number;
}

/**
 * Options for one {@link Limiter.schedule} call.
 *
 * @example
 * ```ts
 * const body = await limiter.schedule(() => fetch(url).then((r) => r.text()), { permits: 2 });
 * ```
 */
export interface ScheduleOptions extends AcquireOptions {
  /** How many permits the task costs. @default 1 */
  permits?: number;
  /**
   * `"completion"`: on a strict window (a `WindowLimiter`, or a combination holding one) this task's
   * permits stay in flight until it settles and count from then, as if the limiter had been built
   * with `countFrom: "completion"` — safe against a server counting arrivals, whatever the latency.
   * The throttled fetch and `sluice/undici` pass it for every attempt, so a window the user built
   * counted from the grant is as safe as the `limit`/`interval` shorthand. Limiters without a
   * window (smooth, fixed window, sliding counter) count at the grant whatever it says.
   * @default the limiter's own `countFrom`
   */
  countFrom?: "completion";
}

/**
 * A rate limiter shared by any number of concurrent callers.
 *
 * @example
 * ```ts
 * import { SmoothLimiter } from "sluice";
 * const limiter = new SmoothLimiter({ limit: 10, interval: 1000 });
 * await Promise.all(urls.map((url) => limiter.schedule(() => fetch(url))));
 * ```
 */
export interface Limiter {
  /**
   * Resolves when `permits` (default 1) are granted. Rejects with `signal.reason` on abort, with
   * {@link MaxWaitExceededError} (carrying `retryAfter` ms) when the predicted wait exceeds `maxWait`
   * — decided up front, without waiting — and with {@link QueueFullError} when `maxQueue` waiters are
   * already queued and this caller would wait too (one whose priority puts it ahead of them and that
   * fits now is granted). A rejected or aborted request consumes no capacity.
   */
  acquire(permits?: number, options?: AcquireOptions): Promise<void>;
  /**
   * `0` = granted now. Otherwise nothing is taken and the result is how many ms until `permits`
   * could be granted, behind the callers already queued (a hint for "come back later").
   */
  tryAcquire(permits?: number): number;
  /**
   * Runs `task` once permits are granted — at the grant itself: synchronously when they are granted
   * at once, else right after the grant, in grant order — and resolves or rejects with its result
   * (a synchronous throw becomes a rejection).
   */
  schedule<T>(task: () => T | PromiseLike<T>, options?: ScheduleOptions): Promise<T>;
  /** Grants nothing for `ms` (a server told us to back off); queued callers keep their places. */
  pause(ms: number): void;
  /**
   * Optional for a custom limiter: true only when nothing waits or runs on it and a fresh one would
   * grant nothing it would not. A {@link KeyedLimiter} evicts a custom limiter's key only when this
   * says so, and never when it is missing. Built-in limiters implement it.
   */
  isIdle?(): boolean;
  /**
   * Optional for a custom limiter (built-in limiters implement it): waits like `acquire` and
   * resolves to a {@link Reservation} to settle once the real cost is known (see the README,
   * "Reservations that settle").
   */
  reserve?(permits?: Permits, options?: ReserveOptions): Promise<Reservation>;
  // --- stats and events (see stats.ts): optional for a custom limiter; built-in limiters have them ---
  /** A snapshot of the limiter's counters (see {@link LimiterStats}). */
  stats?(): LimiterStats;
  /** `grant`, `refuse`, `abort`, `pause` and `ratechange` events (see README "Stats and events"). */
  readonly events?: EventTarget;
}

/**
 * Options every built-in limiter accepts.
 *
 * @example
 * ```ts
 * import { ManualClock, WindowLimiter } from "sluice";
 * new WindowLimiter({ limit: 10, interval: 1000, clock: new ManualClock(), maxQueue: 1000 });
 * ```
 */
export interface BaseLimiterOptions {
  /** Where time comes from. Pass a {@link ManualClock} to test in virtual time. @default systemClock */
  clock?: Clock;
  /**
   * Reject with {@link QueueFullError} a caller that would wait when this many callers are already
   * waiting (a caller granted at once, such as a higher-priority one that fits now, never waits). @default Infinity
   */
  maxQueue?: number;
  /** Default `maxWait` for every `acquire`/`schedule` call, in ms. @default Infinity */
  maxWait?: number;
  // --- priorities (see priority.ts) ---
  /**
   * Aging, in ms per priority level: a request at the front of its priority level counts one level
   * higher for every `priorityAging` ms it waits there, so a steady stream of higher priorities
   * cannot starve it (under a saturating stream of priority 1, priority 0 still gets a grant about
   * every `priorityAging` ms: one in twelve at 10 a second and 1000 ms). `Infinity` = strict
   * priorities (lower ones may wait forever); `0` = a tie-breaker only.
   * @default 1000
   * @example
   * ```ts
   * new SmoothLimiter({ limit: 10, priorityAging: 5000 });
   * ```
   */
  priorityAging?: number;
}
