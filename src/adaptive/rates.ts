/**
 * AdaptiveRates: one learned rate per key — the adaptive state a throttled fetch (or `sluice/undici`)
 * keeps for each host, endpoint or tenant (`key(request)`; by default the origin) — and the step
 * of the feedback loop an attempt takes through it (`admitAdaptive`).
 *
 * Each key is an {@link AdaptiveLimiter} held in a `KeyedLimiter`, so idle keys are evicted — but
 * only when forgetting the learned rate cannot overload the server (see `AdaptiveLimiter.isIdle`).
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { KeyedLimiter } from "../limiters/keyed.ts";
import type { AcquireOptions } from "../limiters/limiter.ts";
import type { Reservation } from "../limiters/reservation.ts";
import { PROBE } from "../limiters/waiter.ts";
import { MaxWaitExceededError } from "../errors.ts";
import { keysOf, onlyKnown, optionsObject, requireFunction } from "../validate.ts";
import type { RateChange } from "./controller.ts";
import { AdaptiveLimiter } from "./limiter.ts";
import { ADAPTIVE_OPTIONS, type AdaptiveOptions, MAX_ADAPTIVE_RATE, resolveAdaptiveOptions } from "./options.ts";

/**
 * One change of a key's learned rate.
 *
 * @example
 * ```ts
 * const change: KeyedRateChange = { key: "https://api.example.com", rate: 9, previous: 16, reason: "throttled", at: 4200, epoch: 1 };
 * ```
 */
export interface KeyedRateChange extends RateChange {
  /** The key whose rate changed (by default the request's origin). */
  readonly key: string;
}

/** See `onlyKnown`: a key outside these is a typo. */
const RATES_OPTIONS = keysOf<AdaptiveRatesOptions>()(...ADAPTIVE_OPTIONS, "onChange", "clock", "wallClock");

/**
 * Options of {@link AdaptiveRates}, and of the `adaptive` option of `createThrottledFetch` and
 * `throttle()` (rates in requests per second; see `ADAPTIVE_DEFAULTS`).
 *
 * @example
 * ```ts
 * const options: AdaptiveRatesOptions = { minRate: 0.5, onChange: ({ key, rate, reason }) => log(key, rate, reason) };
 * ```
 */
export interface AdaptiveRatesOptions extends AdaptiveOptions {
  /**
   * Called after each change of a key's rate (already applied). Through a throttled fetch, a throw
   * fails the call whose answer made the change, with that error and without a retry, as any hook's.
   * @default none
   */
  onChange?: (change: KeyedRateChange) => void;
  /** Timers and elapsed time. @default the fetch's clock (systemClock) */
  clock?: Clock;
  /** Epoch ms for HTTP-dates in headers. @default the fetch's wallClock (Date.now) */
  wallClock?: () => number;
}

/**
 * The learned rate of every key. Pass one as `adaptive` to share it between clients (a throttled
 * fetch and an undici interceptor, say), or read the one a fetch made through its `onChange`.
 *
 * @example
 * ```ts
 * import { AdaptiveRates, createThrottledFetch } from "sluice";
 * const rates = new AdaptiveRates({ onChange: ({ key, rate, reason }) => console.log(key, rate, reason) });
 * const api = createThrottledFetch({ adaptive: rates });
 * await api("https://api.example.com/items");
 * rates.rate("https://api.example.com"); // the learned rate, requests per second
 * ```
 */
export class AdaptiveRates {
  readonly #keys: KeyedLimiter<string, AdaptiveLimiter>;
  readonly #options: AdaptiveOptions;
  readonly #onChange: ((change: KeyedRateChange) => void) | undefined;
  /** The clock of every key's limiter (`undefined`: systemClock). */
  readonly clock: Clock | undefined;
  readonly #wallClock: (() => number) | undefined;
  /** The ceiling of the key being created (set around the synchronous `create`). */
  #ceiling = Infinity;
  /** The rate each told limiter stated when last seen (see {@link AdaptiveRates.get}). */
  readonly #told = new WeakMap<object, number>();

  /**
   * Makes an empty set of keys; each key's limiter starts on first use.
   * @throws {RangeError | TypeError} when an option is invalid, naming it and its value.
   */
  constructor(options: AdaptiveRatesOptions = {}) {
    const o = optionsObject("adaptive", options);
    onlyKnown("`adaptive`", o, RATES_OPTIONS);
    resolveAdaptiveOptions(o); // validated now, not at the first request
    this.#options = {
      maxRate: o.maxRate,
      initialRate: o.initialRate,
      minRate: o.minRate,
      decrease: o.decrease,
      probeInterval: o.probeInterval,
      limitWindow: o.limitWindow,
    };
    this.#onChange = o.onChange === undefined ? undefined : requireFunction("onChange", o.onChange);
    this.clock = o.clock;
    this.#wallClock = o.wallClock === undefined ? undefined : requireFunction("wallClock", o.wallClock);
    this.#keys = new KeyedLimiter({ create: (key) => this.#create(key), clock: o.clock });
  }

  /** A copy bound to `clock` and `wallClock` unless it has its own (what a fetch does with `adaptive: {...}`). @internal */
  static of(value: true | AdaptiveRatesOptions | AdaptiveRates, clock: Clock, wallClock: () => number): AdaptiveRates {
    if (value instanceof AdaptiveRates) return value;
    const o = value === true ? {} : optionsObject("adaptive", value);
    return new AdaptiveRates({ ...o, clock: o.clock ?? clock, wallClock: o.wallClock ?? wallClock });
  }

  #create(key: string): AdaptiveLimiter {
    const told = this.#options.maxRate ?? Infinity;
    // A told limit above what the options take is held at it; `minRate` and `initialRate` give way
    // to a lower one (told 50 an hour: below the default floor of 1 a minute).
    const ceiling = this.#ceiling === Infinity ? Infinity : Math.min(this.#ceiling, MAX_ADAPTIVE_RATE);
    const maxRate = Math.min(told, ceiling);
    const initialRate = this.#options.initialRate === undefined ? undefined : Math.min(this.#options.initialRate, maxRate);
    const minRate = this.#options.minRate === undefined ? undefined : Math.min(this.#options.minRate, maxRate);
    const onChange = this.#onChange;
    return new AdaptiveLimiter({
      ...this.#options,
      maxRate,
      initialRate,
      minRate,
      clock: this.clock,
      ...(this.#wallClock !== undefined && { wallClock: this.#wallClock }),
      ...(onChange !== undefined && { onChange: (change: RateChange) => onChange({ ...change, key }) }),
    });
  }

  /**
   * The limiter of `key`, made on first use with `ceiling` (requests per second: the limit the
   * client was told for it, if any) as its ceiling and starting rate. `told`, the limiter stating
   * `ceiling`: when its rate has changed since the last call with it, the key follows the new one.
   */
  get(key: string, ceiling = Infinity, told?: object): AdaptiveLimiter {
    this.#ceiling = ceiling;
    let limiter: AdaptiveLimiter;
    try {
      limiter = this.#keys.get(key);
    } finally {
      this.#ceiling = Infinity;
    }
    // `told` (the limiter that states `ceiling`) changed its limit since it was last seen — a
    // `setLimit` on the fetch's limiter — so the learned rate follows. Only a change of the same
    // limiter counts: two clients sharing these rates with different told limits must not reset
    // each other's learned rate on every call.
    if (told !== undefined && ceiling !== Infinity) {
      const seen = this.#told.get(told);
      this.#told.set(told, ceiling);
      if (seen !== undefined && seen !== ceiling) limiter.follow(Math.min(this.#options.maxRate ?? Infinity, ceiling, MAX_ADAPTIVE_RATE));
    }
    return limiter;
  }

  /**
   * Forgets now every key that the next uses would forget (idle 60 s and safe to forget, see
   * `KeyedLimiter.prune`); returns how many.
   *
   * @example
   * ```ts
   * const rates = new AdaptiveRates();
   * setInterval(() => rates.prune(), 60_000).unref?.();
   * ```
   */
  prune(): number {
    return this.#keys.prune();
  }

  /** The current rate of `key`, requests per second, or `undefined` for a key not seen (or forgotten). */
  rate(key: string): number | undefined {
    return this.#keys.peek(key)?.rate; // a look, not a use: an idle key is still forgotten
  }

  /** The last change of `key`'s rate — `{ rate, previous, reason, at, epoch }` — or `undefined`. */
  lastChange(key: string): RateChange | undefined {
    return this.#keys.peek(key)?.lastChange;
  }
}

/**
 * The rate a limiter was told, requests per second, when it states one (`limit` per `interval`, as
 * every built-in single limiter does); else Infinity. With `adaptive` it is a key's ceiling and
 * starting rate. @internal
 *
 * @example
 * ```ts
 * toldRate(new WindowLimiter({ limit: 600, interval: 60_000 })); // 10
 * ```
 */
export function toldRate(limiter: unknown): number {
  const l = limiter as { limit?: unknown; interval?: unknown } | undefined;
  if (typeof l?.limit !== "number" || typeof l.interval !== "number" || !(l.limit > 0) || !(l.interval > 0)) return Infinity;
  return (l.limit * 1000) / l.interval;
}

/**
 * One attempt's passage through a key's adaptive limiter: waits for the learned rate (under the
 * caller's signal and `maxWait`; an abort gives the permit back), and says whether the caller had
 * to wait (demand above the rate: only then may it grow). `cancel()` gives the permit back when the
 * attempt is not sent after all (another limiter refused it).
 *
 * `ceiling`: the rate of the limiter the attempt goes through next, which enforces it exactly. While
 * the learned rate is that ceiling, confirmed by the server (a second's worth sent at it accepted,
 * from the start and again after each cut), and no pause holds the key back, the attempt passes
 * without taking a spacing slot: the limiter alone paces it, as without adaptive. Before that
 * confirmation the learned rate spaces attempts evenly at the ceiling, so the limiter's window
 * never goes out as one burst the server has not yet shown it accepts. Below the ceiling, or
 * paused, the learned rate paces. @internal
 *
 * @example
 * ```ts
 * const admitted = await admitAdaptive(limiter, { signal });
 * const tag = limiter.onSent(admitted.waited);
 * ```
 */
export async function admitAdaptive(
  limiter: AdaptiveLimiter,
  options: AcquireOptions,
  ceiling = Infinity,
): Promise<Admission> {
  // At the ceiling, with nothing holding the key back, the next limiter alone paces the attempt.
  if (!mustPace(limiter, ceiling)) return PASSED;
  let waited = limiter.queued > 0;
  let reservation: Reservation | undefined;
  if (!waited) {
    try {
      // A probe ("would this wait?"), not a caller turned away: left out of the limiter's refusals.
      const probe = { maxWait: 0, [PROBE]: true, ...(options.signal !== undefined && { signal: options.signal }) };
      reservation = await limiter.reserve(1, probe as AcquireOptions);
    } catch (error) {
      if (!(error instanceof MaxWaitExceededError)) throw error;
      waited = true;
    }
  }
  reservation ??= await limiter.reserve(1, options);
  const r = reservation;
  return { waited, passed: false, cancel: () => r.cancel(), commit: () => r.settle() };
}

/** What {@link admitAdaptive} decided for one attempt. @internal */
export interface Admission {
  /** The caller waited for the learned rate (demand above it). */
  readonly waited: boolean;
  /**
   * Passed at the ceiling without a slot of the learned rate: if a cut or a pause comes while the
   * attempt waits for the next limiter, it must be admitted again before it is sent (else callers
   * queued there would leave together when the pause ends).
   */
  readonly passed: boolean;
  /** Gives the learned rate's slot back (the attempt was not sent). */
  cancel(): void;
  /**
   * Ends the reservation as used: the attempt was sent (or another admission replaces this one).
   * An open reservation counts as in flight on the key's limiter, so a key whose admissions were
   * never ended would never be idle — never forgotten, however many keys pile up.
   */
  commit(): void;
}

const PASSED: Admission = Object.freeze({ waited: false, passed: true, cancel: () => {}, commit: () => {} });

/**
 * True when the learned rate must pace an attempt: below the ceiling, at a ceiling in doubt (see
 * `AdaptiveController.confirmed`), or paused. @internal
 *
 * @example
 * ```ts
 * if (admitted.passed && mustPace(limiter, ceiling)) admitted = await admitAdaptive(limiter, { signal }, ceiling);
 * ```
 */
export function mustPace(limiter: AdaptiveLimiter, ceiling: number): boolean {
  // Callers still queued at the learned rate when it reaches the ceiling drain at it; the next
  // limiter keeps the total exact meanwhile. (Pacing new attempts behind them instead would make
  // each attempt the next limiter holds take a second slot: half the rate, for good.)
  return !(limiter.rate >= ceiling && limiter.controller.confirmed && !limiter.paused);
}
