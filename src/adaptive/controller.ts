/**
 * The adaptive rate controller: a pure, clock-driven state machine that learns a server's rate from
 * its answers. No timers and no clock of its own: every input carries `now`, so it is exact and
 * testable in virtual time. `AdaptiveLimiter` applies its rate to a limiter.
 *
 * Design (see the README's "Adaptive rate"; TCP's congestion control translated to a request rate):
 * - **Slow start.** With nothing known it starts at `initialRate` and doubles once per
 *   `probeInterval`, only on the answer to a request sent at the current rate (so each doubling is
 *   confirmed by the server) and only while callers wait (a client that does not use its rate learns
 *   nothing from it). Told a limit (`maxRate`), it starts there and never exceeds it.
 * - **One cut per overload event.** Each request is tagged at its send with the current `epoch`. A
 *   throttle (429, or 503 with a delay) whose request was sent in the current epoch cuts once and
 *   starts a new epoch; throttles of requests sent before that cut (the same event, seen late) never
 *   cut again — without this, k requests in flight shrink the rate k times (AWS's adaptive mode).
 *   The cut is sized by what the server accepted: `decrease` × the rate of successful answers over the
 *   last few seconds (never less than half the current rate, as that measure lags), which is also
 *   remembered as the last rate known to work.
 * - **Recover, then probe.** After a cut the rate climbs back toward the last good rate (halving the
 *   gap each step), then probes past it, slowly at first (+2 % a step) and faster the longer no
 *   throttle comes (+2 % more each step, at most +50 %): a raised limit is found eventually. Every
 *   increase needs waiting callers and `probeInterval` since the last change — and no less than the
 *   server's stated window, as a probe faster than the window measures nothing.
 * - **Server headers are authoritative.** A stated limit (RateLimit-Policy `q`/`w`, or a limit with
 *   a known `limitWindow`) becomes the ceiling and, until a throttle says otherwise, the rate:
 *   no probing above it. A reported `remaining` is a snapshot: the requests still in flight are
 *   counted against it, and when they use it up the advice is to pause until the reset.
 *
 * @module
 */
import type { RateLimitInfo } from "../http/headers.ts";
import { type AdaptiveOptions, resolveAdaptiveOptions, type ResolvedAdaptiveOptions } from "./options.ts";

/** Why the rate last changed. */
export type RateChangeReason =
  /** Nothing known yet: doubled while callers waited and no throttle came. */
  | "slow-start"
  /** Climbing back toward the last rate known to work, after a cut. */
  | "recover"
  /** Past the last rate known to work, looking for more (a raised limit). */
  | "probe"
  /** The one cut of an overload event (a throttle of a request sent in the current epoch). */
  | "throttled"
  /** The server stated its limit in headers. */
  | "server-limit"
  /** The told limit (`maxRate`) changed. */
  | "set-limit";

/**
 * One change of the rate.
 *
 * @example
 * ```ts
 * const change: RateChange = { rate: 9, previous: 16, reason: "throttled", at: 4200, epoch: 1 };
 * ```
 */
export interface RateChange {
  /** The new rate, requests per second. */
  readonly rate: number;
  /** The rate before. */
  readonly previous: number;
  /** Why it changed. */
  readonly reason: RateChangeReason;
  /** When, on the controller's clock (ms). */
  readonly at: number;
  /** The epoch after the change (a cut starts a new one). */
  readonly epoch: number;
}

/**
 * What the controller remembers about one request it was told was sent.
 *
 * @example
 * ```ts
 * const tag = controller.onSent(now, true); // { epoch: 0, gen: 3, at: now, seq: 41 }
 * ```
 */
export interface SendTag {
  /** The overload epoch at the send: a throttle of an older epoch never cuts again. */
  readonly epoch: number;
  /** The rate generation at the send: only answers to requests sent at the current rate raise it. */
  readonly gen: number;
  /** The send time. */
  readonly at: number;
  /** How many requests were sent before this one (to count those a header snapshot did not see). */
  readonly seq: number;
}

/** A send as the controller keeps it: its tag, and whether the server accepted it once answered. */
interface SendRecord extends SendTag {
  outcome: "pending" | "accepted" | "throttled";
}

/**
 * What one response said, as far as the rate is concerned (read it with `readServerSignals` and
 * `parseRateLimit`, or let `AdaptiveLimiter.onResponse` do it).
 *
 * @example
 * ```ts
 * const outcome: ResponseOutcome = { throttled: true, delayMs: 2000 };
 * ```
 */
export interface ResponseOutcome {
  /** 429, or 503 with a delay: the server refused the request to slow us down. */
  readonly throttled: boolean;
  /** The delay the server asked for, in ms. */
  readonly delayMs?: number | undefined;
  /** The RateLimit / X-RateLimit state it reported. */
  readonly rateLimit?: RateLimitInfo | undefined;
}

/**
 * The controller's answer to one response.
 *
 * @example
 * ```ts
 * const { change, pauseMs } = controller.onResponse(tag, { throttled: true, delayMs: 1000 }, now);
 * ```
 */
export interface Advice {
  /** The rate change to apply, if any. */
  readonly change: RateChange | undefined;
  /** Pause every caller this many ms (the server's delay, or until a used-up quota resets); 0 for none. */
  readonly pauseMs: number;
}

/** The cubic curve's K: the time to climb back to the known rate, about this many requests' worth... */
const CURVE_REQUESTS = 300;
/** ...but at least 10 s and at most 60 s. */
const CURVE_MIN_MS = 10_000;
const CURVE_MAX_MS = 60_000;
/** The most one step past the known rate multiplies the rate by (Linux CUBIC caps at 1.5 per RTT; a server's burst hides an overshoot for a while, so less). */
const MAX_STEP = 1.25;
/** After slow start, a cut trusts the rate at the cut down to this share of it (see `#cut`). */
const CUT_TRUST = 0.75;

/** How far back successful answers are counted when sizing a cut: at least 2 s, and 4 requests' worth. */
const MEASURE_MIN_MS = 2000;
const MEASURE_REQUESTS = 4;

/**
 * The adaptive rate state machine of one key. See the module note for the algorithm.
 *
 * @example
 * ```ts
 * import { AdaptiveController } from "sluice";
 * const c = new AdaptiveController({}, 0);
 * const tag = c.onSent(0, true);
 * c.onResponse(tag, { throttled: false }, 1000); // after 1 s of demand: slow start doubles
 * c.rate; // 2
 * ```
 */
export class AdaptiveController {
  readonly #o: ResolvedAdaptiveOptions;
  #maxRate: number;
  #rate: number;
  /** The rate the server stated in headers, requests per second. */
  #serverRate: number | undefined = undefined;
  /** The server's stated window (ms): no probe faster than it. */
  #serverWindow = 0;
  /** The last rate known to work (what the server accepted at the last cut), or the stated limit. */
  #known: number | undefined;
  #epoch = 0;
  #gen = 0;
  #lastChangeAt: number;
  /** A caller waited for the rate since the last change: demand exceeds the rate. */
  #demand = false;
  /** Time on the cubic curve since the last cut (advanced only while callers wait), and its K. */
  #curveTime = 0;
  #curveK = CURVE_MIN_MS;
  #inFlight = 0;
  /** Requests sent ever. */
  #sent = 0;
  /** The `seq` of the request whose answer carried the newest header snapshot read so far. */
  #snapshotSeq = -1;
  /** Recent sends, oldest first from `#head` on (pruned to a few measuring spans). */
  #sends: SendRecord[] = [];
  #head = 0;
  #lastChange: RateChange | undefined = undefined;

  /**
   * A controller starting at `options.initialRate` (or the ceiling `maxRate` when given).
   * @param now the creation time (ms on the caller's clock).
   * @throws {RangeError | TypeError} when an option is invalid, naming it and its value.
   */
  constructor(options: AdaptiveOptions | undefined, now: number) {
    this.#o = resolveAdaptiveOptions(options);
    this.#maxRate = this.#o.maxRate;
    this.#rate = this.#o.initialRate;
    // Told a limit, the controller starts there: that rate is the one known to work.
    this.#known = undefined;
    if (this.#maxRate !== Infinity) this.#startCurve(this.#maxRate);
    this.#lastChangeAt = now;
  }

  /** The current rate, requests per second. */
  get rate(): number {
    return this.#rate;
  }

  /** The rate a fresh controller with the same options starts at, requests per second. */
  get initialRate(): number {
    return this.#o.initialRate;
  }

  /** The current overload epoch (a cut starts a new one). */
  get epoch(): number {
    return this.#epoch;
  }

  /** The last change of the rate, or `undefined` before the first. */
  get lastChange(): RateChange | undefined {
    return this.#lastChange;
  }

  /** The ceiling in force: the told limit, or the server's stated one when lower. */
  get ceiling(): number {
    return Math.min(this.#maxRate, this.#serverRate ?? Infinity);
  }

  /** Requests sent and not yet answered. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * Records a request sent at `now`; `waited` says whether its caller had to wait for the rate
   * (demand exceeds the rate: only then may the rate grow). Returns the tag to pass back with its
   * outcome.
   */
  onSent(now: number, waited: boolean): SendTag {
    this.#inFlight++;
    if (waited) this.#demand = true;
    const record: SendRecord = { epoch: this.#epoch, gen: this.#gen, at: now, seq: this.#sent++, outcome: "pending" };
    this.#sends.push(record);
    this.#prune(now);
    return record;
  }

  /** A request that got no response (a network error, an abort): it only leaves the in-flight count. */
  onAbandoned(_tag: SendTag): void {
    if (this.#inFlight > 0) this.#inFlight--;
  }

  /** Records the response to the request tagged `tag`, arrived at `now`; returns what to apply. */
  onResponse(tag: SendTag, outcome: ResponseOutcome, now: number): Advice {
    if (this.#inFlight > 0) this.#inFlight--;
    (tag as SendRecord).outcome = outcome.throttled ? "throttled" : "accepted";
    let pauseMs = 0;
    let change = this.#readHeaders(outcome, now);
    const info = outcome.rateLimit;
    if (outcome.throttled) {
      pauseMs = outcome.delayMs ?? 0;
      if (tag.epoch === this.#epoch) change = this.#cut(tag, now) ?? change;
    } else {
      // Remaining is a snapshot taken when this request arrived: the requests sent after it will use
      // some of it. (An older snapshot arriving late says nothing new.)
      if (info !== undefined && tag.seq > this.#snapshotSeq) {
        this.#snapshotSeq = tag.seq;
        const after = this.#sent - tag.seq - 1;
        if (info.resetMs !== undefined && info.resetMs > 0 && info.remaining <= after) {
          // With a stated rate, the quota refills at it: the requests sent since are covered sooner
          // than a full reset (a token bucket's reset is the time until it is full).
          const refill = this.#serverRate === undefined ? Infinity : ((after - info.remaining + 1) * 1000) / this.#serverRate;
          pauseMs = Math.min(info.resetMs, Math.ceil(refill));
        }
      }
      if (tag.epoch === this.#epoch && tag.gen === this.#gen) change = this.#increase(now) ?? change;
    }
    return { change, pauseMs };
  }

  /** Changes the told limit (the ceiling and the starting point) at `now`. */
  setMaxRate(maxRate: number, now: number): RateChange | undefined {
    const o = resolveAdaptiveOptions({ ...this.#o, maxRate, initialRate: undefined });
    this.#maxRate = o.maxRate;
    const ceiling = this.ceiling;
    if (ceiling === Infinity) return undefined;
    this.#startCurve(ceiling);
    return this.#set(ceiling, "set-limit", now);
  }

  #readHeaders(outcome: ResponseOutcome, now: number): RateChange | undefined {
    const info = outcome.rateLimit;
    if (info?.limit === undefined || (info.quotaUnit !== undefined && info.quotaUnit !== "requests")) return undefined;
    const window = info.windowMs ?? this.#o.limitWindow;
    if (window === undefined || !(info.limit > 0)) return undefined;
    const stated = (info.limit * 1000) / window;
    if (stated === this.#serverRate) return undefined;
    this.#serverRate = stated;
    this.#serverWindow = window;
    const ceiling = this.ceiling;
    this.#startCurve(ceiling);
    // Authoritative: the rate follows the stated limit, down at once and up at once.
    return this.#set(Math.max(this.#o.minRate, ceiling), "server-limit", now);
  }

  #cut(tag: SendTag, now: number): RateChange | undefined {
    const measured = this.#measured(tag.at, now);
    const rate = this.#rate;
    // In slow start the rate may be far past the server's (it doubled while the answers were on
    // their way): what the server accepted says how far. Later a probe oversteps by a few per cent,
    // so the rate at the cut is the better measure — unless the server now accepts much less (its
    // limit dropped). Successes are counted as they arrive, which lags: never cut below half.
    const base = this.#known === undefined
      ? Math.min(rate, Math.max(rate / 2, measured))
      : Math.min(rate, Math.max(rate * CUT_TRUST, measured));
    const known = this.#known;
    this.#epoch++;
    const next = Math.max(this.#o.minRate, base * this.#o.decrease);
    if (known !== undefined && rate <= known * 1.001) {
      // Overloaded at or below the rate believed to work: that belief was wrong (the limit dropped,
      // or a server's burst hid an earlier overshoot). Climbing back to it would overload again, so
      // the new rate becomes the known one, reached already (the curve's plateau), and only slow
      // probing goes past it.
      this.#startCurve(next);
      this.#curveTime = this.#curveK;
    } else {
      this.#startCurve(base);
    }
    // A cut always starts a new rate generation, even at the floor: answers already on their way
    // were sent at the overloading rate and must not raise it.
    return this.#set(next, "throttled", now, true);
  }

  #increase(now: number): RateChange | undefined {
    const ceiling = this.ceiling;
    const rate = this.#rate;
    if (!this.#demand || rate >= ceiling) return undefined;
    const every = Math.max(this.#o.probeInterval, this.#serverWindow);
    const since = now - this.#lastChangeAt;
    if (since < every) return undefined;
    const known = this.#known;
    let next: number;
    let reason: RateChangeReason;
    if (known === undefined) {
      next = rate * 2;
      reason = "slow-start";
    } else {
      // CUBIC rescaled by the known rate W: W·(1 + (1 − β)·((t − K)/K)³) climbs fast from βW, dwells
      // near W around t = K, then probes past it, faster and faster. Its clock runs only while the
      // rate is what holds callers back (at most two steps per step), so idle time never turns into
      // a jump; and one step at most multiplies the rate by MAX_STEP.
      this.#curveTime += Math.min(since, 2 * every);
      const k = this.#curveK;
      const x = (this.#curveTime - k) / k;
      next = Math.min(rate * MAX_STEP, known * (1 + (1 - this.#o.decrease) * x * x * x));
      if (next <= rate) return undefined;
      reason = next <= known ? "recover" : "probe";
    }
    return this.#set(Math.min(ceiling, next), reason, now);
  }

  /** Starts the cubic curve from a cut (or a stated limit) toward the known rate W. */
  #startCurve(known: number): void {
    this.#known = known;
    this.#curveTime = 0;
    this.#curveK = Math.min(CURVE_MAX_MS, Math.max(CURVE_MIN_MS, (CURVE_REQUESTS * 1000) / known));
  }

  #set(rate: number, reason: RateChangeReason, now: number, force = false): RateChange | undefined {
    const previous = this.#rate;
    if (rate === previous && !force) return undefined;
    this.#rate = rate;
    this.#gen++;
    this.#lastChangeAt = now;
    this.#demand = false;
    if (rate === previous) return undefined;
    return (this.#lastChange = { rate, previous, reason, at: now, epoch: this.#epoch });
  }

  #span(): number {
    return Math.max(MEASURE_MIN_MS, (MEASURE_REQUESTS * 1000) / this.#rate);
  }

  #prune(now: number): void {
    // Keep two spans: a cut measures the span before a send that may be a span old.
    const from = now - 2 * this.#span();
    const a = this.#sends;
    // Pending ones go too: one that never gets an answer must not hold the array (a measure only
    // looks a span back, and its caller keeps the tag).
    while (this.#head < a.length && a[this.#head]!.at < from) this.#head++;
    // Compact now and then, so the array holds about two spans of sends.
    if (this.#head > 1024 && this.#head * 2 > a.length) {
      this.#sends = a.slice(this.#head);
      this.#head = 0;
    }
  }

  /**
   * What the server accepted in the span before `until` (the throttled request's send), requests per
   * second: the rate of sends in that span times the share of their answers so far that were
   * accepted. Answers still on their way are assumed to fare alike, so the measure does not lag.
   */
  #measured(until: number, now: number): number {
    this.#prune(now);
    const span = this.#span();
    let sent = 0;
    let accepted = 0;
    let answered = 0;
    const a = this.#sends;
    for (let i = a.length - 1; i >= this.#head; i--) {
      const r = a[i]!;
      if (r.at > until) continue;
      if (r.at < until - span) break;
      sent++;
      if (r.outcome !== "pending") answered++;
      if (r.outcome === "accepted") accepted++;
    }
    if (answered === 0) return this.#rate;
    return ((sent * 1000) / span) * (accepted / answered);
  }
}
