/**
 * The arithmetic every benchmark figure goes through: medians, percentiles, sliding-window counts,
 * lateness against an ideal schedule, utilisation and histograms. Pure functions over arrays of
 * numbers, tested on known inputs in `test/bench-smoke.test.ts` — a wrong helper here would make
 * every table wrong, so none of them guesses.
 *
 * Conventions: times are milliseconds (fractions allowed); a window of length `w` is half-open,
 * `[t, t + w)`, the same meaning the limiters give it (a grant at g frees its slot at g + w).
 *
 * @module
 */

/** Sorted copy, ascending (never sorts the caller's array in place). */
export function sorted(values: readonly number[]): number[] {
  return Array.from(Float64Array.from(values).sort()); // typed-array sort is numeric
}

function checkNonEmpty(name: string, values: readonly number[]): void {
  if (values.length === 0) throw new RangeError(`\`${name}\` needs at least one value, got none`);
}

/** The median: the middle value, or the mean of the two middle values for an even count. */
export function median(values: readonly number[]): number {
  checkNonEmpty("median", values);
  const s = sorted(values);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * The p-th percentile (0 ≤ p ≤ 100) by linear interpolation between the closest ranks — the
 * definition of NumPy's default and of spreadsheets' PERCENTILE.INC: rank h = (n − 1)·p/100, the
 * result lies between the values at floor(h) and ceil(h). p = 50 is the median.
 */
export function percentile(values: readonly number[], p: number): number {
  checkNonEmpty("percentile", values);
  if (!(p >= 0 && p <= 100)) throw new RangeError(`\`p\` must be between 0 and 100, got ${p}`);
  const s = sorted(values);
  const h = ((s.length - 1) * p) / 100;
  const lo = Math.floor(h);
  const hi = Math.ceil(h);
  return s[lo]! + (h - lo) * (s[hi]! - s[lo]!);
}

/**
 * The most events inside any half-open window `[t, t + window)`, from ALL timestamps (exact, not
 * sampled). A maximal window can always be slid right until it starts at an event, so it is enough
 * to count from each event: two pointers over the sorted times, O(n log n) for the sort.
 * @returns the count and the start of the first window that reaches it
 */
export function maxInWindow(times: readonly number[], window: number): { max: number; at: number } {
  return maxWeightInWindow(times, undefined, window);
}

/**
 * Like {@link maxInWindow}, with a weight per event (permits granted): the largest sum of weights
 * inside any half-open window `[t, t + window)`. `weights[i]` belongs to `times[i]`.
 */
export function maxWeightInWindow(
  times: readonly number[],
  weights: readonly number[] | undefined,
  window: number,
): { max: number; at: number } {
  if (!(window > 0)) throw new RangeError(`\`window\` must be positive, got ${window}`);
  if (weights !== undefined && weights.length !== times.length) {
    throw new RangeError(`\`weights\` must have one entry per time (${times.length}), got ${weights.length}`);
  }
  const order = times.map((_, i) => i).sort((a, b) => times[a]! - times[b]! || a - b);
  let best = 0;
  let bestAt = Number.NaN;
  let sum = 0;
  let end = 0; // exclusive: events order[start..end) are in [t_start, t_start + window)
  for (let start = 0; start < order.length; start++) {
    const t = times[order[start]!]!;
    while (end < order.length && times[order[end]!]! < t + window) {
      sum += weights === undefined ? 1 : weights[order[end]!]!;
      end++;
    }
    if (sum > best) {
      best = sum;
      bestAt = t;
    }
    sum -= weights === undefined ? 1 : weights[order[start]!]!;
  }
  return { max: best, at: bestAt };
}

/**
 * How many grants broke "at most `limit` in any window of `window` ms": grant k is a violation when
 * `limit` earlier grants happened less than `window` ms before it (t_k − t_{k−limit} < window).
 * Zero exactly when {@link maxInWindow} ≤ limit.
 */
export function windowViolations(times: readonly number[], window: number, limit: number): number {
  const s = sorted(times);
  let count = 0;
  for (let k = limit; k < s.length; k++) if (s[k]! - s[k - limit]! < window) count++;
  return count;
}

/** The shape a limiter gives a saturated queue: bursts of `limit` per window, or evenly spaced. */
export type Shape = "window" | "even";

/**
 * The ideal start of the k-th grant (0-based) when demand never lets up from `t0`:
 * - `window`: the best any strict "limit per window" limiter can do — `limit` at once, every window:
 *   t0 + floor(k / limit)·window;
 * - `even`: one every window/limit ms: t0 + k·window/limit.
 */
export function idealStart(shape: Shape, k: number, t0: number, limit: number, window: number): number {
  return shape === "window" ? t0 + Math.floor(k / limit) * window : t0 + (k * window) / limit;
}

/**
 * Start lateness of every grant against the ideal schedule (see {@link idealStart}): the k-th start in
 * time order minus the ideal k-th start. Cumulative: a limiter that is 1 ms late each window is k ms
 * late by window k. Negative values are grants earlier than the schedule allows.
 */
export function latenessVsIdeal(times: readonly number[], shape: Shape, t0: number, limit: number, window: number): number[] {
  return sorted(times).map((t, k) => t - idealStart(shape, k, t0, limit, window));
}

/**
 * Per-grant lateness against what the contract allowed given the grants actually made (demand never
 * lets up): for `window`, grant k could start at t_{k−limit} + window (t0 for the first `limit`);
 * for `even`, at t_{k−1} + window/limit. Isolates how promptly a limiter grants once allowed, without
 * the drift that {@link latenessVsIdeal} accumulates. Negative values are grants the contract forbade.
 */
export function latenessPerGrant(times: readonly number[], shape: Shape, t0: number, limit: number, window: number): number[] {
  const s = sorted(times);
  return s.map((t, k) => {
    if (shape === "window") return t - (k < limit ? t0 : s[k - limit]! + window);
    return t - (k === 0 ? t0 : s[k - 1]! + window / limit);
  });
}

/**
 * Steady-state utilisation, achieved rate ÷ limit, without the start-up burst or the tail: the mean
 * span of `limit` consecutive grants, W / mean(t_k − t_{k−limit}) over k ≥ limit. By telescoping this
 * is W·(n − limit) / (limit·(mean of the last `limit` starts − mean of the first `limit` starts)), so
 * it does not depend on where window boundaries fall. 1 = exactly at the limit; above 1 = over it.
 */
export function steadyUtilisation(times: readonly number[], limit: number, window: number): number {
  const s = sorted(times);
  const n = s.length;
  if (n <= limit) throw new RangeError(`\`steadyUtilisation\` needs more than \`limit\` (${limit}) grants, got ${n}`);
  let spans = 0;
  for (let k = limit; k < n; k++) spans += s[k]! - s[k - limit]!;
  return (window * (n - limit)) / spans;
}

/** Counts of events per bin of `bin` ms starting at `t0` (events before t0 are ignored). */
export function histogram(times: readonly number[], t0: number, bin: number, bins: number): number[] {
  const counts = new Array<number>(bins).fill(0);
  for (const t of times) {
    const i = Math.floor((t - t0) / bin);
    if (i >= 0 && i < bins) counts[i]!++;
  }
  return counts;
}

/**
 * For each sample time, how many events fell in the trailing half-open window (s − window, s] —
 * what a server counting a rolling window would see at s.
 */
export function trailingCounts(times: readonly number[], samples: readonly number[], window: number): number[] {
  const s = sorted(times);
  let lo = 0;
  let hi = 0;
  return samples.map((at) => {
    while (hi < s.length && s[hi]! <= at) hi++;
    while (lo < hi && s[lo]! <= at - window) lo++;
    return hi - lo;
  });
}
