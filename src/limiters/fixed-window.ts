/**
 * FixedWindowLimiter: at most `limit` permits per fixed window `[origin + k·interval, origin + (k+1)·interval)`.
 *
 * State is two numbers: the current window's index and the permits granted in it. O(1) time and
 * memory. The trade-off is at the edges: `limit` permits at the end of one window and `limit` more at
 * the start of the next can go within a few ms — up to 2·limit in a span shorter than `interval`.
 * Windows start when the limiter is created (`origin` = the clock's time then).
 *
 * Use it to mirror a server that counts in fixed windows whose phase you know, or when 2× edge
 * bursts are harmless. Otherwise prefer WindowLimiter (strict) or SlidingCounterLimiter (O(1), smoother).
 *
 * @module
 */
import { windowIndex, windowStart } from "./aligned-windows.ts";
import { type BaseLimiterOptions, GatedLimiter, resolveClock } from "./limiter.ts";
import type { Policy } from "./policy.ts";
import { optionsObject, positiveFinite, positiveInteger } from "../validate.ts";

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
  /** The window length in ms. */
  interval: number;
}

/** @internal fixed windows over explicit time. */
export class FixedWindowPolicy implements Policy {
  readonly maxPermits: number;
  heldEpoch = 0;
  readonly #interval: number;
  readonly #origin: number;
  #window = 0;
  #count = 0;
  #pausedUntil = -Infinity;

  constructor(limit: number, interval: number, origin: number) {
    this.maxPermits = limit;
    this.#interval = interval;
    this.#origin = origin;
  }

  #countIn(k: number): number {
    return k === this.#window ? this.#count : 0;
  }

  earliest(permits: number, now: number): number {
    const at = this.#pausedUntil > now ? this.#pausedUntil : now;
    const k = windowIndex(this.#origin, this.#interval, at);
    if (this.#countIn(k) + permits <= this.maxPermits) return at;
    return windowStart(this.#origin, this.#interval, k + 1);
  }

  take(permits: number, at: number): void {
    const k = windowIndex(this.#origin, this.#interval, at);
    if (k !== this.#window) {
      this.#window = k;
      this.#count = 0;
    }
    this.#count += permits;
  }

  pause(until: number): void {
    if (until > this.#pausedUntil) this.#pausedUntil = until;
  }

  isAtRest(now: number): boolean {
    return this.#countIn(windowIndex(this.#origin, this.#interval, now)) === 0 && this.#pausedUntil <= now;
  }

  clone(_now: number): FixedWindowPolicy {
    const copy = new FixedWindowPolicy(this.maxPermits, this.#interval, this.#origin);
    copy.#window = this.#window;
    copy.#count = this.#count;
    copy.#pausedUntil = this.#pausedUntil;
    return copy;
  }
}

/**
 * At most `limit` permits per fixed window of `interval` ms (windows start when the limiter is
 * created). O(1) memory, but up to 2·limit can pass across a window edge.
 *
 * @example
 * ```ts
 * import { FixedWindowLimiter } from "sluice";
 * const limiter = new FixedWindowLimiter({ limit: 5000, interval: 3_600_000 }); // 5000 an hour
 * await limiter.acquire();
 * ```
 */
export class FixedWindowLimiter extends GatedLimiter {
  constructor(options: FixedWindowLimiterOptions) {
    const o = optionsObject("options", options);
    const limit = positiveInteger("limit", o.limit);
    const interval = positiveFinite("interval", o.interval);
    const clock = resolveClock(o.clock);
    super([new FixedWindowPolicy(limit, interval, clock.now())], { ...o, clock });
  }
}
