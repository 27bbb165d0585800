/**
 * Options of the adaptive rate controller, their defaults in one place, and their validation.
 *
 * Rates are in requests per second throughout (`0.5` = one every two seconds).
 *
 * @module
 */
import { describeValue, keysOf, optionsObject } from "../validate.ts";

/**
 * Options of {@link AdaptiveController} (and of `AdaptiveLimiter`, which adds the limiter's own).
 *
 * @example
 * ```ts
 * const options: AdaptiveOptions = { maxRate: 20, minRate: 0.1, decrease: 0.8 };
 * ```
 */
export interface AdaptiveOptions {
  /**
   * The rate the user was told, in requests per second: a ceiling never exceeded, and the starting
   * rate. `Infinity` when unknown: the controller then starts at `initialRate` and ramps up.
   * @default Infinity
   */
  maxRate?: number;
  /**
   * The starting rate when nothing is known, in requests per second (slow start doubles it every
   * 0.6 `probeInterval` while callers wait and no 429 comes back).
   * @default 1, or `maxRate` when it is given
   */
  initialRate?: number;
  /** The floor no cut goes below, in requests per second. @default 1/60 (one a minute) */
  minRate?: number;
  /**
   * The factor of a cut: after an overload the rate becomes this share of what the server accepted
   * — or half as deep (0.95 for 0.9) when it accepted nearly everything sent (a small overshoot).
   * @default 0.9
   */
  decrease?: number;
  /**
   * The least time between two increases, in ms (slow start doubles every 0.6 of it). A server's
   * window lengthens it — stated (RateLimit-Policy `w`) or inferred from a throttle's delay of 2 s
   * or more (a Retry-After of 41 s says the window is at least 42 s) — as a probe faster than the
   * window measures nothing.
   * @default 1000
   */
  probeInterval?: number;
  /**
   * The window, in ms, of a limit stated without one (`X-RateLimit-Limit`, `RateLimit-Limit`): e.g.
   * `3_600_000` for GitHub's hourly quota. Without it such a limit is not read as a rate (a limit
   * without its window says nothing about the rate); draft-10 `RateLimit-Policy` states its own `w`.
   * @default undefined
   */
  limitWindow?: number;
}

/**
 * The defaults of {@link AdaptiveOptions}.
 *
 * @example
 * ```ts
 * import { ADAPTIVE_DEFAULTS } from "sluice";
 * ADAPTIVE_DEFAULTS.decrease; // 0.9
 * ```
 */
export const ADAPTIVE_DEFAULTS: {
  readonly maxRate: number;
  readonly initialRate: number;
  readonly minRate: number;
  readonly decrease: number;
  readonly probeInterval: number;
} = Object.freeze({
  maxRate: Infinity,
  initialRate: 1,
  minRate: 1 / 60,
  decrease: 0.9,
  probeInterval: 1000,
});

/** {@link AdaptiveOptions} with every default filled in and checked. @internal */
export interface ResolvedAdaptiveOptions {
  readonly maxRate: number;
  readonly initialRate: number;
  readonly minRate: number;
  readonly decrease: number;
  readonly probeInterval: number;
  readonly limitWindow: number | undefined;
}

/**
 * The highest rate (requests per second) the adaptive options take. A told limit above it (the
 * fetch's `limit`/`interval`, a limiter's rate, `setLimit`) is held at it rather than refused.
 *
 * @example
 * ```ts
 * Math.min(told, MAX_ADAPTIVE_RATE); // 1e6
 * ```
 */
export const MAX_ADAPTIVE_RATE = 1e6;

function rate(name: string, value: unknown, allowInfinity: boolean): number {
  if (typeof value !== "number") throw new TypeError(`\`${name}\` must be a number, got ${describeValue(value)}`);
  if (!(value > 0) || (!allowInfinity && !Number.isFinite(value)) || value > MAX_ADAPTIVE_RATE && value !== Infinity) {
    const what = allowInfinity ? "a positive number of requests per second (at most 1e6) or Infinity" : "a positive finite number of requests per second (at most 1e6)";
    throw new RangeError(`\`${name}\` must be ${what}, got ${describeValue(value)}`);
  }
  return value;
}

/** The options of the controller itself (`AdaptiveOptions`), for `onlyKnown` and for picking them out of a wider bag. @internal */
export const ADAPTIVE_OPTIONS = keysOf<AdaptiveOptions>()("maxRate", "initialRate", "minRate", "decrease", "probeInterval", "limitWindow");

/**
 * The controller's options out of a wider bag (a limiter's, a fetch's `adaptive`): only those, so
 * the controller can reject the rest as typos.
 * @internal
 */
export function pickAdaptive(o: AdaptiveOptions): AdaptiveOptions {
  const picked: Record<string, unknown> = {};
  for (const name of ADAPTIVE_OPTIONS) if ((o as Record<string, unknown>)[name] !== undefined) picked[name] = (o as Record<string, unknown>)[name];
  return picked as AdaptiveOptions;
}

/**
 * Checks adaptive options and fills in the defaults.
 * @throws {RangeError | TypeError} naming the option and its value.
 * @internal
 */
export function resolveAdaptiveOptions(options: AdaptiveOptions | undefined): ResolvedAdaptiveOptions {
  const o = optionsObject("options", options);
  // `null` is not "left out" (`??` would take it for that): it is a value of the wrong type.
  for (const name of ADAPTIVE_OPTIONS) {
    if ((o as Record<string, unknown>)[name] === null) throw new TypeError(`\`${name}\` must be a number, got null`);
  }
  const maxRate = rate("maxRate", o.maxRate ?? ADAPTIVE_DEFAULTS.maxRate, true);
  // The default floor gives way to a lower ceiling (told 50 an hour: below 1 a minute).
  const minRate = rate("minRate", o.minRate ?? Math.min(ADAPTIVE_DEFAULTS.minRate, maxRate), false);
  if (minRate > maxRate) throw new RangeError(`\`minRate\` must be at most \`maxRate\` (${maxRate}), got ${minRate}`);
  const initialDefault = maxRate === Infinity ? Math.max(ADAPTIVE_DEFAULTS.initialRate, minRate) : maxRate;
  const initialRate = rate("initialRate", o.initialRate ?? initialDefault, false);
  if (initialRate < minRate || initialRate > maxRate) {
    throw new RangeError(`\`initialRate\` must be between \`minRate\` (${minRate}) and \`maxRate\` (${maxRate}), got ${initialRate}`);
  }
  const decrease = o.decrease ?? ADAPTIVE_DEFAULTS.decrease;
  if (typeof decrease !== "number") throw new TypeError(`\`decrease\` must be a number, got ${describeValue(decrease)}`);
  if (!(decrease >= 0.1 && decrease < 1)) throw new RangeError(`\`decrease\` must be at least 0.1 and below 1, got ${describeValue(decrease)}`);
  const probeInterval = o.probeInterval ?? ADAPTIVE_DEFAULTS.probeInterval;
  if (typeof probeInterval !== "number") throw new TypeError(`\`probeInterval\` must be a number, got ${describeValue(probeInterval)}`);
  if (!(probeInterval >= 1 && probeInterval <= 86_400_000)) {
    throw new RangeError(`\`probeInterval\` must be a number of ms from 1 to 86400000 (a day), got ${describeValue(probeInterval)}`);
  }
  const limitWindow = o.limitWindow;
  if (limitWindow !== undefined) {
    if (typeof limitWindow !== "number") throw new TypeError(`\`limitWindow\` must be a number, got ${describeValue(limitWindow)}`);
    if (!(limitWindow >= 1 && Number.isFinite(limitWindow))) {
      throw new RangeError(`\`limitWindow\` must be a finite number of ms, at least 1, got ${describeValue(limitWindow)}`);
    }
  }
  return { maxRate, initialRate, minRate, decrease, probeInterval, limitWindow };
}
