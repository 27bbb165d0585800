/**
 * What a server's pauses say about its window: the window length a long Retry-After (or reset)
 * implies, and the rate one window accepted. A fixed or rolling window refuses until it ends, so
 * its delays are a measure of it; probing faster than the window, or sizing a cut by the burst a
 * window accepts, would be wrong.
 *
 * @module
 */
import type { SendTag } from "./types.ts";

/** A server's delay at least this long (ms) is read as its window; shorter ones are too coarse (Retry-After is whole seconds). */
export const WINDOW_HINT_MIN_MS = 2000;
/** The longest window inferred (a day, the longest `probeInterval`). */
const WINDOW_HINT_MAX_MS = 86_400_000;

/**
 * The window a throttle's delay hints at, ms (0 for none): a Retry-After (or reset) of d ms says
 * the window is at least d. Rounded up to whole seconds, as Retry-After is.
 *
 * @example
 * ```ts
 * windowHint(41_200); // 42000: a per-minute window, seen with 41 s left
 * ```
 */
export function windowHint(delayMs: number | undefined): number {
  if (delayMs === undefined || !(delayMs >= WINDOW_HINT_MIN_MS)) return 0;
  return Math.min(WINDOW_HINT_MAX_MS, Math.ceil(delayMs / 1000) * 1000);
}

/**
 * The pauses of one key and what they show: the inferred window, and the requests sent and refused
 * since the last pause ended.
 *
 * @example
 * ```ts
 * const w = new PauseWindows();
 * const cap = w.onThrottle(tag, 57_000, undefined, now, epoch); // before the cut
 * w.pausedFrom(now + 57_000, sent);                           // after it
 * w.window; // 57000
 * ```
 */
export class PauseWindows {
  /** The longest window a delay implied, ms (0: none seen). */
  window = 0;
  /** When the last pause advised ends. */
  #until = -Infinity;
  /** The requests sent before that pause was advised, and the throttles since of requests sent after. */
  #seq = 0;
  #refused = 0;

  /**
   * A throttle of the request `tag` with a delay of `pauseMs` (or `resetMs` when only a reset was
   * given) at `now`, `epoch` the controller's current epoch. Returns the rate one window accepted
   * (Infinity when it cannot tell): the requests accepted from the end of the last long pause to this
   * throttled send ÷ the time from that end to the end of this pause — a fixed window accepted what
   * it holds and starts again after this pause. (A measure over a few seconds overestimates such a
   * server: it accepts its window in a burst.) Only for pauses of 2 s or more: over a shorter window,
   * Retry-After's rounding to whole seconds would make the estimate far too low.
   */
  onThrottle(tag: SendTag, pauseMs: number, resetMs: number | undefined, now: number, epoch: number): number {
    const from = this.#until;
    let rate = Infinity;
    if (pauseMs >= WINDOW_HINT_MIN_MS && from !== -Infinity && tag.at >= from && tag.epoch === epoch) {
      // Sent since the pause and before this one, less those refused so far (the rest, answered or
      // not, were sent before this refusal and count as accepted).
      const accepted = tag.seq - this.#seq - this.#refused;
      rate = (Math.max(0, accepted) * 1000) / (now + pauseMs - from);
    }
    if (tag.seq >= this.#seq) this.#refused++;
    this.window = Math.max(this.window, windowHint(pauseMs > 0 ? pauseMs : resetMs));
    return rate;
  }

  /** A pause until `until` was advised, after `sent` requests: later estimates start there. */
  pausedFrom(until: number, sent: number): void {
    if (until <= this.#until) return;
    this.#until = until;
    this.#seq = sent;
    this.#refused = 0;
  }
}
