/**
 * SlidingCounterLimiter: the weighted two-window estimate, O(1) memory whatever the limit.
 *
 * State: the permits granted in the current fixed window and in the previous one. At time t, a
 * fraction f = (t − windowStart) / interval into the current window, the estimated count in the
 * rolling window ending at t is `previous·(1 − f) + current`; a request is granted when the estimate
 * plus its permits fits `limit`. The estimate assumes the previous window's grants were spread evenly,
 * so it is an approximation: when they were bunched at its end, up to about 2·limit can pass in one
 * rolling interval in the worst case; with steady traffic it tracks the strict window closely.
 *
 * Windows are aligned to the clock (k·interval on `clock.now()`), as for FixedWindowLimiter, so a
 * re-created limiter (an evicted KeyedLimiter key) weighs the same windows as the one it replaces.
 *
 * Use it for very large limits (10,000 a day and up) where a strict log would cost memory per
 * permit, and the server's own accounting is itself approximate.
 *
 * @module
 */
import { CLOCK_ORIGIN, windowIndex, windowStart } from "./aligned-windows.ts";
import { BASE_OPTIONS, type BaseLimiterOptions, GatedLimiter, resolveClock } from "./limiter.ts";
import { type AdjustablePolicy, type SetLimitOptions, setWindowLimit } from "./set-limit.ts";
import { keysOf, onlyKnown, optionsObject, positiveInteger, timeInterval } from "../validate.ts";

/** Absorbs float rounding at the exact instant the estimate reaches the limit (far below one permit). */
const EPSILON = 1e-9;

/**
 * Options of {@link SlidingCounterLimiter}.
 *
 * @example
 * ```ts
 * const options: SlidingCounterLimiterOptions = { limit: 10_000, interval: 86_400_000 };
 * ```
 */
export interface SlidingCounterLimiterOptions extends BaseLimiterOptions {
  /** The most permits in any rolling `interval` (estimated). */
  limit: number;
  /** The window length in ms, at least 0.001 (1 µs). */
  interval: number;
}

/** @internal the sliding-window counter over explicit time. */
export class SlidingCounterPolicy implements AdjustablePolicy {
  maxPermits: number;
  heldEpoch = 0;
  #interval: number;
  #window = 0;
  #current = 0;
  #previous = 0;
  #pausedUntil = -Infinity;

  constructor(limit: number, interval: number) {
    this.maxPermits = limit;
    this.#interval = interval;
  }

  get interval(): number {
    return this.#interval;
  }

  /**
   * Changes the numbers at `now`. The counts of the current and previous windows carry over to the
   * window (of the new length, on the same clock-aligned grid) that contains `now` and the one before.
   */
  setLimit(limit: number, interval: number, now: number): void {
    const [previous, current] = this.#countsIn(windowIndex(CLOCK_ORIGIN, this.#interval, now));
    this.maxPermits = limit;
    this.#interval = interval;
    this.#window = windowIndex(CLOCK_ORIGIN, interval, now);
    this.#previous = previous;
    this.#current = current;
  }

  /** [previous, current] as they would be in window k (no mutation, so predictions can ask freely). */
  #countsIn(k: number): [number, number] {
    if (k === this.#window) return [this.#previous, this.#current];
    if (k === this.#window + 1) return [this.#current, 0];
    return [0, 0];
  }

  earliest(permits: number, now: number): number {
    const limit = this.maxPermits;
    const interval = this.#interval;
    const at = this.#pausedUntil > now ? this.#pausedUntil : now;
    const k = windowIndex(CLOCK_ORIGIN, interval, at);
    const start = windowStart(CLOCK_ORIGIN, interval, k);
    const [previous, current] = this.#countsIn(k);
    if (previous * (1 - (at - start) / interval) + current + permits <= limit + EPSILON) return at;
    if (current + permits <= limit) {
      // Later in this window, once enough of the previous window's weight has slid out.
      const f = 1 - (limit - current - permits) / previous;
      const t = start + f * interval;
      return t > at ? t : at;
    }
    // In the next window, where this window's count becomes the sliding weight.
    const next = windowStart(CLOCK_ORIGIN, interval, k + 1);
    const f = Math.max(0, 1 - (limit - permits) / current);
    return next + f * interval;
  }

  take(permits: number, at: number): void {
    const k = windowIndex(CLOCK_ORIGIN, this.#interval, at);
    if (k !== this.#window) {
      [this.#previous, this.#current] = this.#countsIn(k);
      this.#window = k;
    }
    this.#current += permits;
  }

  /**
   * A refund comes off the window the grant was counted in, while it still weighs on the estimate
   * (the current or the previous window); debt counts now.
   */
  adjust(delta: number, grantedAt: number, _mark: number, now: number): void {
    if (delta > 0) {
      this.take(delta, now);
      return;
    }
    const k = windowIndex(CLOCK_ORIGIN, this.#interval, grantedAt);
    if (k === this.#window) this.#current += delta;
    else if (k === this.#window - 1) this.#previous += delta;
  }

  pause(until: number): void {
    if (until > this.#pausedUntil) this.#pausedUntil = until;
  }

  // Both windows that weigh on the estimate are empty and no pause: a fresh policy (same
  // clock-aligned edges) would be in exactly this state.
  isAtRest(now: number): boolean {
    const [previous, current] = this.#countsIn(windowIndex(CLOCK_ORIGIN, this.#interval, now));
    return previous === 0 && current === 0 && this.#pausedUntil <= now;
  }

  clone(_now: number): SlidingCounterPolicy {
    const copy = new SlidingCounterPolicy(this.maxPermits, this.#interval);
    copy.#window = this.#window;
    copy.#current = this.#current;
    copy.#previous = this.#previous;
    copy.#pausedUntil = this.#pausedUntil;
    return copy;
  }
}

/**
 * About `limit` permits per rolling `interval`, estimated from two counters: O(1) memory for very
 * large limits. An approximation — see the README's table of algorithms.
 *
 * @example
 * ```ts
 * import { SlidingCounterLimiter } from "sluice";
 * const daily = new SlidingCounterLimiter({ limit: 10_000, interval: 86_400_000 });
 * await daily.acquire();
 * ```
 */
export class SlidingCounterLimiter extends GatedLimiter {
  /**
   * Creates the limiter; it starts empty (nothing granted, nothing queued).
   * @throws {RangeError | TypeError} when an option is invalid, naming it and its value.
   */
  constructor(options: SlidingCounterLimiterOptions) {
    const o = optionsObject("options", options);
    onlyKnown("SlidingCounterLimiter", o, keysOf<SlidingCounterLimiterOptions>()(...BASE_OPTIONS, "limit", "interval"));
    const limit = positiveInteger("limit", o.limit);
    const interval = timeInterval("interval", o.interval);
    const clock = resolveClock(o.clock);
    const policy = new SlidingCounterPolicy(limit, interval);
    super([policy], { ...o, clock });
    this.#policy = policy;
  }

  readonly #policy: SlidingCounterPolicy;

  /** The most permits per window now (changed by {@link SlidingCounterLimiter.setLimit}). */
  get limit(): number {
    return this.#policy.maxPermits;
  }

  /** The window length in ms now. */
  get interval(): number {
    return this.#policy.interval;
  }

  /**
   * Changes the limit (and optionally the window length) from now on and re-times the callers
   * already queued; validated like the constructor's options, `interval` defaulting to the current one.
   * The counts of the current and previous windows stay: the estimate at the change is weighed
   * against the new limit. With a new `interval`, windows follow the new clock-aligned grid and the
   * two counts move to the window that contains now and the one before it.
   * @throws {RangeError | TypeError} when an option is invalid, naming it and its value — or when a
   *   queued request asks for more permits than the new limit (nothing changes then).
   * @example
   * ```ts
   * import { SlidingCounterLimiter } from "sluice";
   * const daily = new SlidingCounterLimiter({ limit: 10_000, interval: 86_400_000 });
   * daily.setLimit({ limit: 5_000 });
   * ```
   */
  setLimit(options: SetLimitOptions): void {
    setWindowLimit(this, this.#policy, options);
  }
}
