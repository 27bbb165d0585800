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
/** Two refusal runs agree on a window when the longer is at most this many times the shorter. */
const RUN_AGREE = 1.5;
/** ...and the second ended within this many of the longer's length after the first. */
const RUN_APART = 4;
/** A pause-to-refusal span up to this many windows is one window's measure (see `onThrottle`). */
const WINDOW_SPAN = 1.5;
/**
 * While a server refuses everything and says not for how long, each probe refused waits this share
 * of the time refused so far: the probes come at ×1.5 intervals, a handful per minute-long window,
 * and land at most half the time refused so far after it reopens.
 */
const BLOCK_BACKOFF = 0.5;
/** The first wait of a refusal run, ms (a few round trips: a window that just reopened is not missed by much). */
const BLOCK_MIN_MS = 250;
/**
 * The longest wait between probes of a refusal run, ms (a window reopening is found within this):
 * 2 minutes, so an hour's window draws about 30 refused probes, not 120 (an outside red team,
 * 2026-11-27, measured the 30 s first chosen).
 */
const BLOCK_MAX_MS = 120_000;

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
  #delayWindow = 0;
  /** The window two refusal runs showed (see `acceptedAfterCut`), ms (0: none). */
  #runWindow = 0;

  /** When the last pause advised ends. */
  #until = -Infinity;
  /** The requests sent before that pause was advised, and the throttles since of requests sent after. */
  #seq = 0;
  #refused = 0;
  /** The send time of the request whose refusal (with no delay) cut last: where a refusal run starts. */
  #runFrom = -Infinity;
  /** The latest send refused in that run after the cut (-Infinity: none, no run). */
  #runLast = -Infinity;
  /** When the run's last wait ends: a refusal of a request sent before it was answered by that wait. */
  #runWaitUntil = -Infinity;
  /** The window the last run of 2 s or more implied (0: none yet), waiting for a second to confirm it, and when it ended. */
  #runHint = 0;
  #runHintAt = -Infinity;

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
    this.#delayWindow = Math.max(this.#delayWindow, windowHint(pauseMs > 0 ? pauseMs : resetMs));
    // Sent since the pause and before this one, less those refused so far (the rest, answered or
    // not, were sent before this refusal and count as accepted).
    const accepted = tag.seq - this.#seq - this.#refused;
    const since = from !== -Infinity && tag.at >= from && tag.epoch === epoch;
    if (pauseMs >= WINDOW_HINT_MIN_MS && since) {
      rate = (Math.max(0, accepted) * 1000) / (now + pauseMs - from);
    } else if (pauseMs === 0 && this.#runWindow > 0 && since && accepted > 0) {
      // A window two refusal runs showed, and a refusal that says not when it ends: the window is
      // at least as long as the time since the last pause. Only a span of about one window measures
      // one: over several, the client's own lower rate (after a cut, recovering) would count as
      // the server's. (None accepted: the window had not reopened, or answers came out of order.)
      const end = Math.max(now, from + this.#runWindow);
      if (end - from <= WINDOW_SPAN * this.#runWindow) rate = (accepted * 1000) / (end - from);
    }
    if (tag.seq >= this.#seq) this.#refused++;
    return rate;
  }

  /** The longest window the server's delays or its refusal runs showed, ms (0: none seen). */
  get window(): number {
    return Math.max(this.#delayWindow, this.#runWindow);
  }

  /**
   * The rate was cut by a refusal with no delay of the request sent at `sentAt` (-Infinity: a cut
   * of another kind): a refusal run may follow, counted from that send — where a window used up
   * began refusing. (Counted from the first refused send after the cut instead, runs came out
   * shorter than their windows and a sliding log's share fell to 50 % on one seed; with seconds of
   * latency a cut and one more refusal can look like a 2-s run, which is why one run confirms nothing.)
   */
  cut(sentAt = -Infinity): void {
    this.#runFrom = sentAt;
    this.#runLast = this.#runWaitUntil = -Infinity;
  }

  /**
   * A refusal with no delay of a request sent at `sentAt`, after the cut and with nothing sent
   * since the cut accepted: the server refuses everything (a window used up, with no Retry-After).
   * Cutting again on each would spiral to the floor and climb back for minutes; the answer is to
   * wait and probe, each wait half the time refused so far. Returns the wait, ms (0 for a request
   * sent before the last wait ended: that wait answered it already).
   */
  refusedInRun(sentAt: number, now: number, maxWait = BLOCK_MAX_MS): number {
    if (sentAt < this.#runWaitUntil) return 0;
    if (this.#runFrom === -Infinity) this.#runFrom = sentAt;
    this.#runLast = Math.max(this.#runLast, sentAt);
    const longest = Math.max(BLOCK_MIN_MS, Math.min(BLOCK_MAX_MS, maxWait));
    const wait = Math.round(Math.min(longest, Math.max(BLOCK_MIN_MS, (now - this.#runFrom) * BLOCK_BACKOFF)));
    this.#runWaitUntil = now + wait;
    return wait;
  }

  /**
   * The first request sent since the cut was accepted: a refusal run, if there was one, has ended.
   * Everything sent from its start to its last refused send was refused, so a window would be at
   * least that long (when it is 2 s or more: a shorter run is a server's jitter, not a window). One
   * run may as well be an outage or a storm of 429s at startup; a window shows itself again, so the
   * window is read from the second run on (review, 2026-11-27: a 20-s storm at startup, read as a
   * window, held a 10/s server's rate near 1/s for minutes).
   */
  acceptedAfterCut(sentAt: number): void {
    const hint = this.#runLast === -Infinity ? 0 : windowHint(this.#runLast - this.#runFrom);
    if (hint > 0) {
      // Confirmed by a run of about the same length (within RUN_AGREE) that ended within a few
      // such windows of it; the shorter is the window's lower bound. (Review, 2026-11-27: a 40-s
      // outage "confirmed" minutes later by a 2-s run gave a 32-s probe step on a plain 10/s bucket.)
      const previous = this.#runHint;
      const longer = Math.max(previous, hint);
      if (previous > 0 && RUN_AGREE * Math.min(previous, hint) >= longer && sentAt - this.#runHintAt <= RUN_APART * longer) {
        this.#runWindow = Math.max(this.#runWindow, longer);
      }
      this.#runHint = hint;
      this.#runHintAt = sentAt;
    }
    this.#runFrom = this.#runLast = this.#runWaitUntil = -Infinity;
  }

  /** A pause until `until` was advised, after `sent` requests: later estimates start there. */
  pausedFrom(until: number, sent: number): void {
    if (until <= this.#until) return;
    this.#until = until;
    this.#seq = sent;
    this.#refused = 0;
  }
}
