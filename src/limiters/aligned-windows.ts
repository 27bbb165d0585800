/**
 * Window arithmetic for the fixed-window algorithms: windows `[origin + k·interval, origin + (k+1)·interval)`.
 *
 * @module
 */

/**
 * The origin of every fixed-window grid: the clock's zero. Windows are a property of the clock, not
 * of a limiter's creation time, so a limiter re-created later (an evicted key) keeps the same edges.
 */
export const CLOCK_ORIGIN = 0;

/**
 * The index k of the window containing `t`. Checked against the same expression that computes a
 * window's start, so a time returned as "the next window starts here" always lands in that window
 * despite floating-point rounding.
 */
export function windowIndex(origin: number, interval: number, t: number): number {
  let k = Math.floor((t - origin) / interval);
  if (origin + (k + 1) * interval <= t) k++;
  else if (origin + k * interval > t) k--;
  return k;
}

/** The start of window k. */
export function windowStart(origin: number, interval: number, k: number): number {
  return origin + k * interval;
}
