/**
 * SmoothLimiter: evenly spaced permits with future debt (the "SmoothBursty" idea).
 *
 * State is one point in time, `nextFree`: the instant the next request may be granted. A request
 * for n permits is granted as soon as `nextFree ≤ now` — whatever n, even beyond `limit` or `burst` —
 * and pushes `nextFree` forward by n·T (T = interval / limit), so the callers after it pay for it.
 * Idle time is stored as permits: `nextFree` may lag behind `now` by at most `burst`·T, which lets up
 * to `burst` permits go back to back before spacing resumes.
 *
 * Exactness: `nextFree` is kept as `anchor + count·interval / limit` with an integer-valued `count`
 * of permits since the anchor, and recomputed from those each time, so no rounding error accumulates
 * and no fractional permit is ever lost (the classic bug of integer token refills). The anchor moves
 * only when idle time is clamped to the burst, or a pause pushes it.
 *
 * A new limiter starts full (`initialPermits` = `burst`): a client that has sent nothing has nothing
 * to pay for, and a server's bucket is full for a client it has not seen. Pass `initialPermits: 0` if
 * the process may restart while the server still counts the previous run's requests.
 *
 * @module
 */
import { LIMITER_DEFAULTS } from "./defaults.ts";
import { BASE_OPTIONS, type BaseLimiterOptions, GatedLimiter, resolveClock } from "./limiter.ts";
import type { Policy } from "./policy.ts";
import { type AdjustablePolicy, applyLimit, type SetLimitOptions } from "./set-limit.ts";
import { keysOf, MIN_INTERVAL, nonNegativeInteger, onlyKnown, optionsObject, positiveFinite, timeInterval } from "../validate.ts";

/**
 * Options of {@link SmoothLimiter}.
 *
 * @example
 * ```ts
 * const options: SmoothLimiterOptions = { limit: 20, interval: 1000, burst: 5 };
 * ```
 */
export interface SmoothLimiterOptions extends BaseLimiterOptions {
  /**
   * Permits per `interval` (may be fractional, e.g. 0.5 per second), spaced `interval/limit` ms apart:
   * at least 1 µs, so at most 1000 per ms of `interval`.
   */
  limit: number;
  /** The interval in ms, at least 0.001 (1 µs). @default 1000 */
  interval?: number;
  /** Permits stored from idle time (a whole number), spent back to back before spacing resumes. @default 0 */
  burst?: number;
  /** Stored permits at creation, a whole number from 0 to `burst`. @default burst (starts full) */
  initialPermits?: number;
}

/** @internal the SmoothLimiter algorithm over explicit time. */
export class SmoothPolicy implements AdjustablePolicy {
  readonly maxPermits = Infinity;
  heldEpoch = 0;
  #limit: number;
  #interval: number;
  readonly #burst: number;
  readonly #initial: number;
  #anchor: number;
  #count: number;
  /** The point the last grant is paid from (its share of `nextFree`), and its permits: see `setLimit`. */
  #lastFrom = -Infinity;
  #lastPermits = 0;
  /** Permits taken ever: a reservation's mark, to bound what a refund may give back. */
  #taken = 0;
  /** The time of the latest take: no grant made since a reservation was clamped later than this. */
  #lastTake = -Infinity;
  #pausedUntil = -Infinity;

  constructor(limit: number, interval: number, burst: number, initial: number, now: number) {
    this.#limit = limit;
    this.#interval = interval;
    this.#burst = burst;
    this.#initial = initial;
    this.#anchor = now;
    this.#count = -initial;
  }

  get limit(): number {
    return this.#limit;
  }

  get interval(): number {
    return this.#interval;
  }

  /**
   * Changes the rate at `now`. Only the last grant can still be being paid for (a grant happens only
   * once the debt before it is paid), and it is re-priced at the new rate: the next grant is due its
   * permits × the new spacing after the point the last one was paid from — the spacing a server
   * metering at the new rate expects. Stored permits stay a number of permits (at most `burst`).
   */
  setLimit(limit: number, interval: number, now: number): void {
    const next = this.nextFree();
    let anchor: number;
    if (next > now) {
      // Re-priced only while it is still being paid for at the old rate: a pause also holds
      // `nextFree` past now, and a grant paid off before it owes nothing more at any rate (review,
      // 2026-11-27: 8 permits paid off at 0.7 s, then at 5 s a pause and 1/s, granted at 7.9 s).
      const owed = this.#lastFrom + (this.#lastPermits * this.#interval) / this.#limit > now;
      anchor = owed ? this.#lastFrom + (this.#lastPermits * interval) / limit : now;
      // Repriced debt already paid off by now: nothing stored from it.
      if (anchor < now) anchor = now;
      // A pause is never shortened: debt re-priced to end sooner still waits for the pause's end.
      if (anchor < this.#pausedUntil) anchor = this.#pausedUntil;
    } else {
      const stored = Math.min(this.#burst, ((now - next) * this.#limit) / this.#interval);
      anchor = now - (stored * interval) / limit;
    }
    this.#limit = limit;
    this.#interval = interval;
    this.#anchor = anchor;
    this.#count = 0;
  }

  /** The earliest instant at which the next request may be granted. */
  nextFree(): number {
    return this.#anchor + (this.#count * this.#interval) / this.#limit;
  }

  earliest(_permits: number, now: number): number {
    const next = this.nextFree();
    return next > now ? next : now;
  }

  take(permits: number, at: number): void {
    // Idle time beyond the burst is forgotten: re-anchor so that exactly `burst` permits are stored.
    if (this.nextFree() < at - (this.#burst * this.#interval) / this.#limit) {
      this.#anchor = at;
      this.#count = -this.#burst;
    }
    // What `setLimit` re-prices: this grant is paid for from here.
    this.#lastFrom = this.nextFree();
    this.#lastPermits = permits;
    this.#count += permits;
    this.#taken += permits;
    this.#lastTake = at;
  }

  mark(): number {
    return this.#taken;
  }

  /**
   * Extra permits are debt taken now. A refund of r moves `nextFree` back by r·T, as if the grant had
   * been smaller — but the grants made since may have been clamped by idle time or a pause in that
   * smaller world, which this state no longer shows. So `nextFree` goes no earlier than
   * max(t − burst·T, pausedUntil) + (permits taken since)·T, with t the latest take (now if none
   * since): a bound on every such clamp, exact when nothing was taken since, and never more permits
   * than the exact answer.
   */
  adjust(delta: number, _grantedAt: number, mark: number, now: number): void {
    const since = this.#taken - mark;
    if (delta > 0) {
      const [from, permits] = [this.#lastFrom, this.#lastPermits];
      // The last grant still being paid for (this reservation's, or a later one's): the debt is
      // paid right after it, so what `setLimit` re-prices is both, from the same point (red-team,
      // 2026-11-27: the debt alone was re-priced, and the next caller went at 0.7 s, not 1 s; the
      // second review: the same for an earlier reservation's debt behind a later grant, 1.0 s not
      // 1.5 s). Paid off, the debt is a grant of its own from now (the first review: merged, a
      // slower limit then forgot it).
      const owing = from + (permits * this.#interval) / this.#limit > now;
      this.take(delta, now);
      if (owing) [this.#lastFrom, this.#lastPermits] = [from, permits + delta];
      return;
    }
    const t = since > 0 ? this.#lastTake : now;
    const [floorAnchor, floorCount] = this.#pausedUntil > t - (this.#burst * this.#interval) / this.#limit
      ? [this.#pausedUntil, since]
      : [t, since - this.#burst];
    const floor = floorAnchor + (floorCount * this.#interval) / this.#limit;
    const next = this.nextFree();
    const clamped = next + (delta * this.#interval) / this.#limit < floor;
    if (!clamped) this.#count += delta;
    else if (floor < next) {
      this.#anchor = floorAnchor;
      this.#count = floorCount;
    }
    // Keep what `setLimit` re-prices as-if too. The last grant itself refunded: it was that much
    // smaller, paid from the same point — clamped or not: a pause or idle time that cut its debt
    // short at the old rate does not make it cheaper at a new one (`setLimit` waits for the pause's
    // end as well; red-team, 2026-11-27: reserve 10, pause, settle 8, limit 10/s → 1/s let the next
    // caller go at 0.9 s, not 8 s). An earlier grant refunded: the last keeps its permits, paid from
    // where `nextFree` now puts it.
    if (since === 0) this.#lastPermits = Math.max(0, this.#lastPermits + delta);
    else if (!clamped) this.#lastFrom = this.nextFree() - (this.#lastPermits * this.#interval) / this.#limit;
  }

  pause(until: number): void {
    // Nothing is granted before `until`, and no permits are stored for the paused time, so callers
    // resume at the limiter's rate instead of bursting when the pause ends.
    // The last grant keeps what `setLimit` re-prices (where it is paid from, its permits): a pause
    // longer than its debt at the old rate does not write it off at a slower new one — `setLimit`
    // takes the later of the re-priced debt and the pause's end. (Red-team, 2026-11-27: 8 permits at
    // 10/s, a pause of 1 s, then 1/s: the next caller went at 1 s, at 8 s without the pause.)
    if (this.nextFree() < until) {
      this.#anchor = until;
      this.#count = 0;
    }
    if (until > this.#pausedUntil) this.#pausedUntil = until;
  }

  isAtRest(now: number): boolean {
    return this.nextFree() <= now - (this.#initial * this.#interval) / this.#limit;
  }

  clone(_now: number): SmoothPolicy {
    const copy = new SmoothPolicy(this.#limit, this.#interval, this.#burst, this.#initial, 0);
    copy.#anchor = this.#anchor;
    copy.#count = this.#count;
    copy.#lastFrom = this.#lastFrom;
    copy.#lastPermits = this.#lastPermits;
    copy.#taken = this.#taken;
    copy.#lastTake = this.#lastTake;
    copy.#pausedUntil = this.#pausedUntil;
    return copy;
  }
}

/**
 * `limit` permits per `interval` ms, spaced evenly, with future debt: a request for n permits goes at
 * once when no debt is pending — even when n exceeds `limit` — and the callers after it wait n/rate.
 * Idle time is stored as up to `burst` permits.
 *
 * Use it for servers that meter with a leaky bucket or token bucket (nginx `limit_req`, most API
 * gateways), and whenever an even pace matters more than a hard count per window.
 *
 * @example
 * ```ts
 * import { SmoothLimiter } from "sluice";
 *
 * const limiter = new SmoothLimiter({ limit: 2, interval: 1000 }); // one permit every 500 ms
 * await limiter.acquire(10); // granted at once: no debt was pending
 * await limiter.acquire();   // waits 5 s: the previous request's debt
 * ```
 */
export class SmoothLimiter extends GatedLimiter {
  readonly #policy: SmoothPolicy;
  readonly #burst: number;

  /**
   * Creates the limiter; it starts empty (nothing granted, nothing queued).
   * @throws {RangeError | TypeError} when an option is invalid, naming it and its value.
   */
  constructor(options: SmoothLimiterOptions) {
    const o = optionsObject("options", options);
    onlyKnown("SmoothLimiter", o, keysOf<SmoothLimiterOptions>()(...BASE_OPTIONS, "limit", "interval", "burst", "initialPermits"));
    const limit = positiveFinite("limit", o.limit);
    const interval = timeInterval("interval", o.interval ?? LIMITER_DEFAULTS.interval);
    // Whole permits keep `count` integer-valued, which is what makes `nextFree` exact.
    const burst = nonNegativeInteger("burst", o.burst ?? LIMITER_DEFAULTS.burst);
    checkSpacing(limit, interval, burst);
    const initial = nonNegativeInteger("initialPermits", o.initialPermits ?? burst);
    if (initial > burst) {
      throw new RangeError(`\`initialPermits\` must be at most \`burst\` (${burst}), got ${initial}`);
    }
    const clock = resolveClock(o.clock);
    const policy = new SmoothPolicy(limit, interval, burst, initial, clock.now());
    super([policy], { ...o, clock });
    this.#policy = policy;
    this.#burst = burst;
  }

  /** Permits per `interval` now (changed by {@link SmoothLimiter.setLimit}). */
  get limit(): number {
    return this.#policy.limit;
  }

  /** The interval in ms now. */
  get interval(): number {
    return this.#policy.interval;
  }

  /**
   * Changes the rate from now on and re-times the callers already queued (validated like the
   * constructor's options; `interval` defaults to the current one). The grant still being paid for
   * (only the last one can be) is re-priced at the new rate: the next caller waits its permits × the
   * new spacing after it, as a server metering at the new rate expects; the grants after it are
   * spaced at the new rate. Stored permits stay a number of permits (at most `burst`).
   * @throws {RangeError | TypeError} when an option is invalid, naming it and its value.
   * @example
   * ```ts
   * import { SmoothLimiter } from "sluice";
   * const limiter = new SmoothLimiter({ limit: 20, interval: 1000 });
   * limiter.setLimit({ limit: 10 }); // one every 100 ms, counted from the last grant
   * ```
   */
  setLimit(options: SetLimitOptions): void {
    const o = optionsObject("options", options);
    onlyKnown("setLimit()", o, keysOf<SetLimitOptions>()("limit", "interval"));
    const limit = positiveFinite("limit", o.limit);
    const interval = o.interval === undefined ? this.#policy.interval : timeInterval("interval", o.interval);
    checkSpacing(limit, interval, this.#burst);
    applyLimit(this, this.#policy, limit, interval, false);
  }
}

/** Grant times are interval/limit apart: at least 1 µs (see MIN_INTERVAL), and finite. */
function checkSpacing(limit: number, interval: number, burst: number): void {
  if (interval / limit < MIN_INTERVAL) {
    throw new RangeError(`\`limit\` must be at most ${1 / MIN_INTERVAL} per ms of \`interval\` (a permit per µs), got ${limit}`);
  }
  if (!Number.isFinite(interval / limit)) {
    throw new RangeError(`\`limit\` is too small for \`interval\` (a spacing of interval/limit ms must be finite), got ${limit}`);
  }
  // Stored permits are whole, which keeps `count` integer-valued; their span must be finite.
  if (!Number.isFinite((burst * interval) / limit)) {
    throw new RangeError(`\`burst\` is too large: burst × interval/limit ms must be finite, got ${burst}`);
  }
}
