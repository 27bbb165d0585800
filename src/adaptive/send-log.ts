/**
 * The recent sends of one adaptive key and what the server made of them: the measure a cut is
 * sized by (the rate the server accepted just before the throttled send).
 *
 * @module
 */
import type { SendTag } from "./types.ts";

/** What {@link SendLog.tally} counts. */
export interface Tally {
  readonly sent: number;
  readonly accepted: number;
  readonly refused: number;
  readonly failed: number;
}

/** A send as the log keeps it: its tag, and whether the server accepted it once answered. */
export interface SendRecord extends SendTag {
  outcome: "pending" | "accepted" | "throttled" | "failed";
  /** Sent while the rate was at the ceiling (what confirms a ceiling; see `AdaptiveController.confirmed`). */
  atCeiling: boolean;
}

/** How far back answers are counted when sizing a cut: at least 2 s, and 4 requests' worth... */
const MEASURE_MIN_MS = 2000;
const MEASURE_REQUESTS = 4;
/** ...and never over less than 1 s (a server's window is rarely shorter): a burst it accepts in its first second is not its rate. */
const MEASURE_FLOOR_MS = 1000;

/**
 * Recent sends, oldest first, pruned to two measuring spans: bounded in time (4–8 s of sends), so
 * its memory grows with the rate (about 120 bytes a send: some 8 MB at 29,000 requests a second).
 *
 * @example
 * ```ts
 * const log = new SendLog();
 * const record = log.push({ epoch: 0, gen: 0, at: 0, seq: 0 }, false);
 * record.outcome = "accepted";
 * log.measured(1000, 1000, 1); // requests per second the server accepted
 * ```
 */
export class SendLog {
  #sends: SendRecord[] = [];
  #head = 0;
  /** The first send's time: a measure never reaches before it. */
  #start: number | undefined;

  /** Records a send; returns the record whose `outcome` the controller sets on the answer. */
  push(tag: SendTag, atCeiling: boolean): SendRecord {
    const record: SendRecord = { ...tag, outcome: "pending", atCeiling };
    this.#start ??= tag.at;
    this.#sends.push(record);
    return record;
  }

  /** The span a measure looks back at the rate `rate`, ms. */
  static span(rate: number): number {
    return Math.max(MEASURE_MIN_MS, (MEASURE_REQUESTS * 1000) / rate);
  }

  /** Drops sends older than two spans at `rate` (a cut measures the span before a send that may be a span old). */
  prune(now: number, rate: number): void {
    const from = now - 2 * SendLog.span(rate);
    const a = this.#sends;
    // Pending ones go too: one that never gets an answer must not hold the array.
    while (this.#head < a.length && a[this.#head]!.at < from) this.#head++;
    if (this.#head > 1024 && this.#head * 2 > a.length) {
      this.#sends = a.slice(this.#head);
      this.#head = 0;
    }
  }

  /**
   * The sends from `from` on (at most the last two spans): how many went, and of their answers so
   * far how many the server accepted, refused (throttled) and failed (5xx, no throttle). One pass.
   */
  tally(from: number): Tally {
    const a = this.#sends;
    let sent = 0;
    let accepted = 0;
    let refused = 0;
    let failed = 0;
    for (let i = a.length - 1; i >= this.#head && a[i]!.at >= from; i--) {
      sent++;
      const outcome = a[i]!.outcome;
      if (outcome === "accepted") accepted++;
      else if (outcome === "throttled") refused++;
      else if (outcome === "failed") failed++;
    }
    return { sent, accepted, refused, failed };
  }

  /**
   * What the server accepted in the span before `until` (the throttled request's send), requests per
   * second: the sends in that span, times the share of their answers so far that were accepted, over
   * the span's length (from the first send at the earliest, and at least 1 s). A pause in the span
   * counts: a server that makes its clients wait (a fixed window's Retry-After) serves that rate. Answers still on
   * their way are assumed to fare alike, so the measure does not lag. `fallback` when none answered.
   */
  measured(until: number, now: number, rate: number, fallback: number): number {
    this.prune(now, rate);
    const span = SendLog.span(rate);
    let sent = 0;
    let accepted = 0;
    let answered = 0;
    const a = this.#sends;
    for (let i = a.length - 1; i >= this.#head; i--) {
      const r = a[i]!;
      if (r.at > until) continue;
      if (r.at < until - span) break;
      sent++;
      if (r.outcome !== "pending" && r.outcome !== "failed") answered++;
      if (r.outcome === "accepted") accepted++;
    }
    if (answered === 0) return fallback;
    // A span reaching before the first send covers only the sends' time: n sends spread over d ms
    // stand for n intervals of d / (n − 1).
    const first = this.#start ?? until;
    const covered = first > until - span && sent > 1 ? ((until - first) * sent) / (sent - 1) : span;
    const length = Math.max(MEASURE_FLOOR_MS, Math.min(span, covered));
    return ((sent * 1000) / length) * (accepted / answered);
  }
}
