/**
 * FixedWindowLimiter: at most `limit` permits per fixed window `[k·interval, (k+1)·interval)` of the clock.
 *
 * State is two numbers: the current window's index and the permits granted in it. O(1) time and
 * memory. The trade-off is at the edges: `limit` permits at the end of one window and `limit` more at
 * the start of the next can go within a few ms — up to 2·limit in a span shorter than `interval`.
 * Windows are aligned to the clock (k·interval on `clock.now()`), not to the limiter's creation: the
 * phase is then no state of the limiter, so a limiter re-created for the same key (an evicted
 * KeyedLimiter key) has the same window edges, and one that has granted nothing in the current window
 * is indistinguishable from a fresh one. (With creation-time windows, a key evicted mid-window and
 * re-created came back with shifted edges and could put 2·limit into one of its original windows.)
 *
 * Use it to mirror a server that counts in fixed windows whose phase you know, or when 2× edge
 * bursts are harmless. Otherwise prefer WindowLimiter (strict) or SlidingCounterLimiter (O(1), smoother).
 *
 * @module
 */
import { CLOCK_ORIGIN, windowIndex, windowStart } from "./aligned-windows.ts";
import { BASE_OPTIONS, type BaseLimiterOptions, GatedLimiter, resolveClock } from "./limiter.ts";
import { type AdjustablePolicy, type SetLimitOptions, setWindowLimit } from "./set-limit.ts";
import { keysOf, onlyKnown, optionsObject, positiveInteger, timeInterval } from "../validate.ts";

/**
 * Options of {@link FixedWindowLimiter}.
 *
 * @example
 * ```ts
 * const options: FixedWindowLimiterOptions = { limit: 1000, interval: 3_600_000 };
 * ```
 */
export interface FixedWindowLimiterOptions extends BaseLimiterOptions {
  /** The most permits granted in one window. */
  limit: number;
  /** The window length in ms, at least 0.001 (1 µs). */
  interval: number;
}

/** @internal fixed windows over explicit time. */
export class FixedWindowPolicy implements AdjustablePolicy {
  maxPermits: number;
  heldEpoch = 0;
  #interval: number;
  #window = 0;
  #count = 0;
  #pausedUntil = -Infinity;

  constructor(limit: number, interval: number) {
    this.maxPermits = limit;
    this.#interval = interval;
  }

  get interval(): number {
    return this.#interval;
  }

  /**
   * Changes the numbers at `now`. The permits granted in the window containing `now` stay counted in
   * the window (of the new length, on the same clock-aligned grid) that contains `now`.
   */
  setLimit(limit: number, interval: number, now: number): void {
    const count = this.#countIn(windowIndex(CLOCK_ORIGIN, this.#interval, now));
    this.maxPermits = limit;
    this.#interval = interval;
    this.#window = windowIndex(CLOCK_ORIGIN, interval, now);
    this.#count = count;
  }

  #countIn(k: number): number {
    return k === this.#window ? this.#count : 0;
  }

  earliest(permits: number, now: number): number {
    const at = this.#pausedUntil > now ? this.#pausedUntil : now;
    const k = windowIndex(CLOCK_ORIGIN, this.#interval, at);
    if (this.#countIn(k) + permits <= this.maxPermits) return at;
    return windowStart(CLOCK_ORIGIN, this.#interval, k + 1);
  }

  take(permits: number, at: number): void {
    const k = windowIndex(CLOCK_ORIGIN, this.#interval, at);
    if (k !== this.#window) {
      this.#window = k;
      this.#count = 0;
    }
    this.#count += permits;
  }

  /** A refund comes off the window the grant was counted in (if still current); debt counts now. */
  adjust(delta: number, grantedAt: number, _mark: number, now: number): void {
    if (delta > 0) this.take(delta, now);
    else if (windowIndex(CLOCK_ORIGIN, this.#interval, grantedAt) === this.#window) this.#count += delta;
  }

  pause(until: number): void {
    if (until > this.#pausedUntil) this.#pausedUntil = until;
  }

  // Nothing granted in the current window and no pause: a fresh policy (same clock-aligned edges)
  // would be in exactly this state, and earlier windows can no longer affect any decision.
  isAtRest(now: number): boolean {
    return this.#countIn(windowIndex(CLOCK_ORIGIN, this.#interval, now)) === 0 && this.#pausedUntil <= now;
  }

  clone(_now: number): FixedWindowPolicy {
    const copy = new FixedWindowPolicy(this.maxPermits, this.#interval);
    copy.#window = this.#window;
    copy.#count = this.#count;
    copy.#pausedUntil = this.#pausedUntil;
    return copy;
  }
}

/**
 * At most `limit` permits per fixed window of `interval` ms (windows `[k·interval, (k+1)·interval)`
 * of the clock's time). O(1) memory, but up to 2·limit can pass across a window edge.
 *
 * @example
 * ```ts
 * import { FixedWindowLimiter } from "sluice";
 * const limiter = new FixedWindowLimiter({ limit: 5000, interval: 3_600_000 }); // 5000 an hour
 * await limiter.acquire();
 * ```
 */
export class FixedWindowLimiter extends GatedLimiter {
  /**
   * Creates the limiter; it starts empty (nothing granted, nothing queued).
   * @throws {RangeError | TypeError} when an option is invalid, naming it and its value.
   */
  constructor(options: FixedWindowLimiterOptions) {
    const o = optionsObject("options", options);
    onlyKnown("FixedWindowLimiter", o, keysOf<FixedWindowLimiterOptions>()(...BASE_OPTIONS, "limit", "interval"));
    const limit = positiveInteger("limit", o.limit);
    const interval = timeInterval("interval", o.interval);
    const clock = resolveClock(o.clock);
    const policy = new FixedWindowPolicy(limit, interval);
    super([policy], { ...o, clock });
    this.#policy = policy;
  }

  readonly #policy: FixedWindowPolicy;

  /** The most permits per window now (changed by {@link FixedWindowLimiter.setLimit}). */
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
   * The permits granted in the current window stay counted: when they already reach the new limit,
   * nothing more is granted until the next window. With a new `interval`, windows follow the new
   * clock-aligned grid, and the current window's count moves to the new window that contains now.
   * @throws {RangeError | TypeError} when an option is invalid, naming it and its value — or when a
   *   queued request asks for more permits than the new limit (nothing changes then).
   * @example
   * ```ts
   * import { FixedWindowLimiter } from "sluice";
   * const limiter = new FixedWindowLimiter({ limit: 5000, interval: 3_600_000 });
   * limiter.setLimit({ limit: 1000 }); // this hour's grants count against the 1000
   * ```
   */
  setLimit(options: SetLimitOptions): void {
    setWindowLimit(this, this.#policy, options);
  }
}
