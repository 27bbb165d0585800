/**
 * How the adaptive rate grows and how deep a cut goes: the constants and pure formulas the
 * controller's phases use (slow start, search, the cubic curve toward the last known rate).
 *
 * @module
 */

/** The cubic curve's K: the time to climb back to the known rate, about this many requests' worth... */
const CURVE_REQUESTS = 300;
/** ...but at least 10 s (and four probe steps) and at most 60 s (or four steps, when a step is longer). */
const CURVE_MIN_MS = 10_000;
const CURVE_MAX_MS = 60_000;
const CURVE_MIN_STEPS = 4;

/** The most one step past the known rate multiplies the rate by (Linux CUBIC caps at 1.5 per RTT; a server's burst hides an overshoot for a while, so less). */
export const MAX_STEP = 1.25;
/**
 * Slow start's step, as a share of the probe step: doubling every 0.6 s reaches 32/s from 1/s in
 * 3 s, and 100/s in 4.2 s. (Half a step overshot a fixed window's burst further; a full step
 * missed 90 % of a 20/s server within 10 s.)
 */
export const START_STEP = 0.6;

/**
 * One step of the search that follows slow start's cut: +10 %. Slow start's cut
 * measures the server at a rate it had only just doubled to, so its estimate is rough (70–100 % of
 * the real rate); steps of 10 % find the limit within a few seconds and overshoot it by at most one
 * step, where the cubic curve would dwell at the rough estimate for tens of seconds.
 */
export const SEARCH_STEP = 1.1;
/** A cut trusts the rate at the cut down to this share of it (a probe oversteps by a few per cent; see `planCut` in cut.ts). */
export const CUT_TRUST = 0.75;
/** The server accepted at least this share of the sends just before the throttle: the overshoot was small, the cut is gentle. */
export const SMALL_OVERSHOOT = 0.9;

/**
 * The cubic curve's K (ms) for a known rate (requests per second) and a probe step (ms).
 *
 * @example
 * ```ts
 * curveK(20, 1000); // 15000: 300 requests at 20/s
 * ```
 */
export function curveK(known: number, step: number): number {
  const k = Math.min(CURVE_MAX_MS, Math.max(CURVE_MIN_MS, (CURVE_REQUESTS * 1000) / known));
  return Math.max(k, CURVE_MIN_STEPS * step);
}

/**
 * CUBIC rescaled by the known rate W: W·(1 + (1 − β)·((t − K)/K)³) climbs fast from βW, dwells near W
 * around t = K, then probes past it, faster and faster — independent of the size of W.
 *
 * @example
 * ```ts
 * cubicRate(20, 15_000, 15_000, 0.9); // 20: at t = K the curve is at W
 * ```
 */
export function cubicRate(known: number, t: number, k: number, decrease: number): number {
  const x = (t - k) / k;
  return known * (1 + (1 - decrease) * x * x * x);
}

/**
 * The factor of a cut: `decrease`, or half as deep when the server accepted nearly everything sent
 * just before the throttle (a probe that overstepped by a few per cent needs no 10 % cut).
 *
 * @example
 * ```ts
 * cutFactor(0.9, 19.5, 20); // 0.95
 * ```
 */
export function cutFactor(decrease: number, measured: number, rate: number): number {
  return measured >= SMALL_OVERSHOOT * rate ? 1 - (1 - decrease) / 2 : decrease;
}
