/**
 * ConcurrencyLimiter: at most `limit` permits in flight — held from the grant until the work ends.
 *
 * State is one number, the permits in flight. `earliest(n)` is now while `inFlight + n ≤ limit`, and
 * `Infinity` otherwise: when a slot frees depends on running work, not on time, so a waiter blocked
 * here has no reserved time and holds the policy instead (the gate's rule for in-flight work, see
 * `gate.ts`): nobody behind it takes a slot first (FIFO), while members it is combined with keep
 * flowing for others unless they stop it too. `finish` frees the slots and the gate rescans.
 *
 * What ends a grant: `schedule(task)` — the task settling (a throw frees the slot too); `reserve()` —
 * the handle's `release()`, `settle()` or `cancel()`. A plain `acquire()` has nothing that would end
 * it, so it throws a TypeError instead of leaking a slot. Combined with rate limits, the rates count
 * at the grant and the slot is held until the end, atomically (one grant takes both).
 *
 * Predictions (`maxWait`, `tryAcquire`) cannot know when running work ends: they assume it ends now,
 * so they are a lower bound of the wait for a slot. Bound that wait with a `signal` instead.
 *
 * @module
 */
import { BASE_OPTIONS, type BaseLimiterOptions, GatedLimiter, resolveClock } from "./limiter.ts";
import type { Policy } from "./policy.ts";
import { keysOf, onlyKnown, optionsObject, positiveInteger } from "../validate.ts";

/**
 * Options of {@link ConcurrencyLimiter}.
 *
 * @example
 * ```ts
 * const options: ConcurrencyLimiterOptions = { limit: 4 };
 * ```
 */
export interface ConcurrencyLimiterOptions extends BaseLimiterOptions {
  /** The most permits in flight at once (a whole number ≥ 1). */
  limit: number;
}

/** @internal slots held from the grant until `finish`. */
export class ConcurrencyPolicy implements Policy {
  readonly maxPermits: number;
  heldEpoch = 0;
  readonly holdsUntilFinish = true;
  #inFlight = 0;
  #pausedUntil = -Infinity;
  /** A copy made for a prediction: work granted in it ends at once, so its grants take no slot. */
  #predicting = false;

  constructor(limit: number) {
    this.maxPermits = limit;
  }

  /** Permits granted and not yet finished. */
  get inFlight(): number {
    return this.#inFlight;
  }

  earliest(permits: number, now: number): number {
    return this.earliestAfter(0, permits, now);
  }

  earliestAfter(taken: number, permits: number, now: number): number {
    if (this.#inFlight + taken + permits > this.maxPermits) return Infinity;
    return this.#pausedUntil > now ? this.#pausedUntil : now;
  }

  take(permits: number): void {
    // In a prediction every grant's work is assumed to end at once (a lower bound): a slot taken
    // there and never finished would make everyone behind it wait for ever (maxWait refused them
    // with a wait of Infinity, though they were granted moments later).
    if (!this.#predicting) this.#inFlight += permits;
  }

  finish(permits: number): void {
    this.#inFlight -= permits;
  }

  pause(until: number): void {
    if (until > this.#pausedUntil) this.#pausedUntil = until;
  }

  isAtRest(now: number): boolean {
    return this.#inFlight === 0 && this.#pausedUntil <= now;
  }

  /**
   * A copy for a prediction, which must be a lower bound for the request predicted. When it asks
   * this slot (`asked`), work in flight and the work of the grants simulated before it are assumed
   * to end at once (the earliest they could). When it does not (it asks another member of the
   * domain), the slots stay as occupied as they are: the callers queued for them may never get one
   * before it, and freeing them would let those callers take the other members' capacity ahead of
   * it in the simulation (red-team: a caller of the rate member alone, predicted 400 ms, was
   * granted at 100).
   */
  clone(_now: number, asked = true): ConcurrencyPolicy {
    const copy = new ConcurrencyPolicy(this.maxPermits);
    copy.#pausedUntil = this.#pausedUntil;
    if (asked) copy.#predicting = true;
    else copy.#inFlight = this.#inFlight;
    return copy;
  }
}

/**
 * At most `limit` permits in flight at once: a slot is held from the grant until the work ends. Use
 * `schedule(task)` (the slot frees when the task settles, even when it throws) or `reserve()` (the
 * slot frees on the handle's `release()`, `settle()` or `cancel()`); `acquire()` and `tryAcquire()`
 * throw a TypeError, since nothing would end their grant. Combine it with rate limits (`combine`) —
 * one grant takes a slot and counts the rates, atomically — or use it per key in a `KeyedLimiter`.
 * Waiters are served in arrival order; aborting one gives back exactly what it asked.
 *
 * @example
 * ```ts
 * import { combine, ConcurrencyLimiter, SmoothLimiter } from "sluice";
 *
 * const api = combine(new SmoothLimiter({ limit: 10 }), new ConcurrencyLimiter({ limit: 4 }));
 * // At most 10 starts per second, and at most 4 running at once:
 * await Promise.all(urls.map((url) => api.schedule(() => fetch(url))));
 * ```
 */
export class ConcurrencyLimiter extends GatedLimiter {
  /**
   * Creates the limiter; it starts empty (nothing in flight, nothing queued).
   * @throws {RangeError | TypeError} when an option is invalid, naming it and its value.
   */
  constructor(options: ConcurrencyLimiterOptions) {
    const o = optionsObject("options", options);
    onlyKnown("ConcurrencyLimiter", o, keysOf<ConcurrencyLimiterOptions>()(...BASE_OPTIONS, "limit"));
    const limit = positiveInteger("limit", o.limit);
    super([new ConcurrencyPolicy(limit)], { ...o, clock: resolveClock(o.clock) });
  }
}
