/**
 * The adaptive rate controller: a pure, clock-driven state machine that learns a server's rate from
 * its answers. No timers and no clock of its own: every input carries `now`, so it is exact and
 * testable in virtual time. `AdaptiveLimiter` applies its rate to a limiter.
 *
 * Design (see the README's "Adaptive rate"; TCP's congestion control translated to a request rate):
 * - **Slow start.** With nothing known it starts at `initialRate` and doubles every 0.6 probe step
 *   (`probeInterval`), only on the answer to a request sent at the current rate (so each doubling is
 *   confirmed by the server) and only while callers wait (a client that does not use its rate learns
 *   nothing from it). Told a limit (`maxRate`), it starts there and never exceeds it; that limit
 *   is in doubt (paced evenly, no window-sized burst) until the server accepts a second's worth
 *   sent at it, at the start and again after each cut (`confirmed`).
 * - **One cut per overload event.** Each request is tagged at its send with the current `epoch`. A
 *   throttle (429, or 503 with a delay) whose request was sent in the current epoch cuts once and
 *   starts a new epoch; throttles of requests sent before that cut (the same event, seen late) never
 *   cut again — without this, k requests in flight shrink the rate k times (AWS's adaptive mode).
 *   The cut is sized by what the server accepted over the last seconds (see `SendLog.measured`):
 *   `decrease` × that, or half as deep when it accepted nearly everything (a small overshoot).
 * - **Search.** Slow start's cut measures the server roughly (at a rate it had only just doubled
 *   to), so the rate then steps up 10 % a step until the next throttle, which pins the limit. A cut
 *   far below a rate that had held (or the first cut of a told limit) searches back up the same way,
 *   to `decrease` × that rate and no further.
 * - **Recover, then probe.** After a later cut the rate follows a cubic curve back to the last rate
 *   known to work, dwells there, then probes past it, faster the longer no throttle comes (a raised
 *   limit is found eventually). Every increase needs waiting callers and a probe step since the last
 *   change; the step is never shorter than the server's window — stated (RateLimit-Policy `w`) or
 *   inferred from a long Retry-After (`PauseWindows`) — as a probe faster than the window measures
 *   nothing; behind such a pause a cut is sized by what one window accepted.
 * - **Server headers are authoritative.** A stated limit (RateLimit-Policy `q`/`w`, or a limit with
 *   a known `limitWindow`) becomes the ceiling and, until a throttle says otherwise, the rate:
 *   no probing above it. A reported `remaining` is a snapshot: the requests still in flight are
 *   counted against it, and when they use it up the advice is to pause until the reset.
 *
 * @module
 */
import { cubicRate, curveK, MAX_STEP, SEARCH_STEP, START_STEP } from "./curve.ts";
import { type Phase, planCut } from "./cut.ts";
import { ADAPTIVE_OPTIONS, type AdaptiveOptions, MAX_ADAPTIVE_RATE, resolveAdaptiveOptions, type ResolvedAdaptiveOptions } from "./options.ts";
import { onlyKnown, optionsObject } from "../validate.ts";
import { type SendRecord, SendLog } from "./send-log.ts";
import type { Advice, RateChange, RateChangeReason, ResponseOutcome, SendTag } from "./types.ts";
import { PauseWindows } from "./windows.ts";

export type { Advice, RateChange, RateChangeReason, ResponseOutcome, SendTag } from "./types.ts";

/** A rate in force (within 5 % of where it stood) for this many probe steps before a throttle had held: the throttle was noise, not its limit. */
const HELD_STEPS = 2;
/**
 * The band of "the same rate" for {@link HELD_STEPS}, measured from the rate where it began — not
 * step to step, so a slow recovery (2–3 % a step) toward a known rate counts as held, as it is.
 */
const SAME_RATE = 1.05;

/**
 * The rate may grow only while the client sends at least this share of it (since the last change):
 * callers that wait for slots or the server's answers rather than for the rate would otherwise let
 * it double without bound, never tried by a single request.
 */
const APP_LIMITED = 0.5;

/** More than this share of the recent answers were server errors (5xx, no throttle): no increase. */
const FAILING = 0.1;
/** How long an increase found held back (`#held`) stays so without looking again, ms. */
const HOLD_CHECK_MS = 100;

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
  #phase: Phase = "start";
  /** The rate the server stated in headers, requests per second. */
  #serverRate: number | undefined = undefined;
  /** The server's window (ms), stated or inferred from a long delay: no probe faster than it. */
  #serverWindow = 0;
  /** The window the server's long delays imply, and the rate one window accepted (see `PauseWindows`). */
  readonly #windows = new PauseWindows();
  /** The last rate known to work (what the server accepted at the last cut), or the stated limit. */
  #known: number | undefined = undefined;
  #epoch = 0;
  #gen = 0;
  #lastChangeAt: number;
  /** A caller waited for the rate since the last change: demand exceeds the rate. */
  #demand = false;
  /** Accepted answers to requests sent since the last cut (in the current epoch). */
  #acceptedSinceCut = 0;
  /** Requests sent since the last change (see {@link APP_LIMITED}). */
  #sentSinceChange = 0;
  /** Until when an increase is known held back (see `#held`), without looking again. */
  #heldUntil = -Infinity;
  /** When callers began to wait (the first waited send since the last change or an idle spell): idle time before it is no unused rate. */
  #demandSince = -Infinity;
  /** The latest send whose caller waited. */
  #lastWaited = -Infinity;
  /** When the latest pause of the key ends (see {@link AdaptiveController.onPause}). */
  #pausedUntil = -Infinity;
  /** Time on the cubic curve since the last cut (advanced only while callers wait), and its K. */
  #curveTime = 0;
  #curveK = 0;
  #inFlight = 0;
  /** Since when the rate has stayed within 5 % of `#stableRate` (see `planCut` in cut.ts: `held`). */
  #stableSince: number;
  #stableRate = 0;
  /** Where the search started (a search's cut never goes below it). */
  #searchFrom = 0;
  /** Where a search stops and the curve's plateau begins (Infinity after slow start: up to the next throttle). */
  #searchCap = Infinity;
  /** Requests sent ever. */
  #sent = 0;
  /** Accepted answers to requests sent at the ceiling since the last cut (see `confirmed`). */
  #acceptedAtCeiling = 0;
  /** The `seq` of the request whose answer carried the newest header snapshot read so far. */
  #snapshotSeq = -1;
  readonly #log = new SendLog();
  #lastChange: RateChange | undefined = undefined;

  /**
   * A controller starting at `options.initialRate` (or the ceiling `maxRate` when given).
   * @param now the creation time (ms on the caller's clock).
   * @throws {RangeError | TypeError} when an option is invalid, naming it and its value.
   */
  constructor(options: AdaptiveOptions | undefined, now: number) {
    onlyKnown("AdaptiveController", optionsObject("options", options), ADAPTIVE_OPTIONS);
    this.#o = resolveAdaptiveOptions(options);
    this.#maxRate = this.#o.maxRate;
    this.#rate = this.#o.initialRate;
    this.#lastChangeAt = now;
    this.#stableSince = now;
    this.#stableRate = this.#rate;
    // Told a limit, the controller starts there, as if that rate were known to work: a throttle
    // then cuts from it and the curve dwells below it (see `planCut` in cut.ts).
    if (this.#maxRate !== Infinity) {
      this.#phase = "curve";
      this.#startCurve(this.#maxRate);
    }
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

  /**
   * The lowest rate a cut goes to: `minRate`, or the ceiling when that is lower — a limit told or
   * stated below the floor wins (50 an hour is below the default floor of 1 a minute).
   */
  #floor(): number {
    return Math.min(this.#o.minRate, this.ceiling);
  }

  /** The ceiling in force: the told limit, or the server's stated one when lower. */
  get ceiling(): number {
    return Math.min(this.#maxRate, this.#serverRate ?? Infinity);
  }

  /**
   * False while a told limit is in doubt: the server has not yet accepted a second's worth of
   * requests sent at the ceiling (from the start, and again after each cut), and states no limit
   * of its own. Until then the fetch spaces callers evenly at the ceiling instead of letting the
   * told limit's window send a whole window at once: told 2x too much, that burst would all go out
   * before the first 429 returns (and against an nginx `limit_req`, even a right window's burst
   * draws a herd of 429s). Told right, the server sees no more than the told limit in any window
   * either way, and after the first second the told limit's own limiter paces as without adaptive.
   */
  get confirmed(): boolean {
    return this.#serverRate !== undefined || this.#acceptedAtCeiling >= Math.max(1, this.ceiling);
  }

  /** The probe step in force, ms: `probeInterval`, or the server's window (stated or inferred) when longer. */
  get step(): number {
    return Math.max(this.#o.probeInterval, this.#serverWindow, this.#windows.window);
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
    this.#sentSinceChange++;
    if (waited) {
      // Demand begins anew after a spell with nobody waiting (a burst after idle time).
      if (!this.#demand || now - this.#lastWaited > SendLog.span(this.#rate)) this.#demandSince = now;
      this.#lastWaited = now;
      this.#demand = true;
    }
    const record = this.#log.push({ epoch: this.#epoch, gen: this.#gen, at: now, seq: this.#sent++ }, this.#rate >= this.ceiling);
    this.#log.prune(now, this.#rate);
    return record;
  }

  /** Records a pause of the key until `until` (the server's delay, a used-up quota): no sends then is no unused rate. */
  onPause(until: number): void {
    if (until > this.#pausedUntil) this.#pausedUntil = until;
  }

  /** When the latest pause of the key ends (ms on the caller's clock; -Infinity before any). */
  get pausedUntil(): number {
    return this.#pausedUntil;
  }

  /** A request that got no response (a network error, an abort): it only leaves the in-flight count. */
  onAbandoned(_tag: SendTag): void {
    if (this.#inFlight > 0) this.#inFlight--;
  }

  /** Records the response to the request tagged `tag`, arrived at `now`; returns what to apply. */
  onResponse(tag: SendTag, outcome: ResponseOutcome, now: number): Advice {
    if (this.#inFlight > 0) this.#inFlight--;
    const record = tag as SendRecord;
    const refused = outcome.throttled || outcome.overloaded === true;
    const failed = !refused && outcome.failed === true;
    record.outcome = refused ? "throttled" : failed ? "failed" : "accepted";
    if (record.outcome === "accepted") {
      if (record.atCeiling) this.#acceptedAtCeiling++;
      if (tag.epoch === this.#epoch && this.#acceptedSinceCut++ === 0) this.#windows.acceptedAfterCut(tag.at);
    }
    let pauseMs = 0;
    let change = this.#readHeaders(outcome, now);
    const info = outcome.rateLimit;
    if (refused) {
      pauseMs = outcome.throttled ? outcome.delayMs ?? 0 : 0;
      // A fixed or rolling window refuses until its end: a long delay says how long the window is,
      // and caps the cut's measure at what one window accepted.
      const cap = this.#windows.onThrottle(tag, pauseMs, info?.resetMs, now, this.#epoch);
      // Nothing sent since the last cut was accepted yet: the server is down or still refusing
      // everything (a maintenance window's 503 + Retry-After every second, a window used up). Its
      // pause, or a wait of our own, is the answer; cutting again on each would spiral to the floor
      // and take minutes to climb back. Bare 503s cut only between successes (the first too: at
      // start they may be an outage).
      const unproven = this.#acceptedSinceCut === 0 && (!outcome.throttled || this.#epoch > 0);
      if (tag.epoch === this.#epoch && !unproven) {
        change = this.#cut(tag, now, cap) ?? change;
        this.#windows.cut(outcome.throttled && pauseMs === 0 ? tag.at : -Infinity);
      } else if (tag.epoch === this.#epoch && outcome.throttled && pauseMs === 0) {
        // A 429 that says not when to come back, of a request sent after the cut, with nothing sent
        // since accepted: a window used up refuses everything until it ends (see `refusedInRun`).
        pauseMs = this.#windows.refusedInRun(tag.at, now, outcome.maxPauseMs);
      }
      // After the cut: the pause it starts is where the next window's estimate starts.
      if (pauseMs > 0) this.#windows.pausedFrom(now + pauseMs, this.#sent);
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
          this.#windows.pausedFrom(now + pauseMs, this.#sent);
        }
      }
      if (!failed && tag.epoch === this.#epoch && tag.gen === this.#gen) change = this.#increase(now) ?? change;
    }
    return { change, pauseMs };
  }

  /**
   * Changes the told limit (the ceiling and the starting point) at `now`. A limit above
   * {@link MAX_ADAPTIVE_RATE} is held at it; one below `minRate` is kept (the floor gives way, see `#floor`).
   */
  setMaxRate(maxRate: number, now: number): RateChange | undefined {
    const capped = Math.min(maxRate, MAX_ADAPTIVE_RATE);
    const o = resolveAdaptiveOptions({ ...this.#o, maxRate: capped, minRate: Math.min(this.#o.minRate, capped), initialRate: undefined });
    this.#maxRate = o.maxRate;
    const ceiling = this.ceiling;
    if (ceiling === Infinity) return undefined;
    this.#phase = "curve";
    this.#startCurve(ceiling);
    return this.#set(ceiling, "set-limit", now);
  }

  #readHeaders(outcome: ResponseOutcome, now: number): RateChange | undefined {
    // A limit stated with the remaining quota, or a policy stated on its own.
    const info = outcome.rateLimit?.limit !== undefined ? outcome.rateLimit : outcome.policy ?? outcome.rateLimit;
    if (info?.limit === undefined || (info.quotaUnit !== undefined && info.quotaUnit !== "requests")) return undefined;
    const window = info.windowMs ?? this.#o.limitWindow;
    if (window === undefined || !(info.limit > 0)) return undefined;
    const stated = (info.limit * 1000) / window;
    if (stated === this.#serverRate) return undefined;
    this.#serverRate = stated;
    this.#serverWindow = window;
    const ceiling = this.ceiling;
    this.#phase = "curve";
    this.#startCurve(ceiling);
    // Authoritative: the rate follows the stated limit, down at once and up at once.
    return this.#set(Math.max(this.#floor(), ceiling), "server-limit", now);
  }

  #cut(tag: SendTag, now: number, cap = Infinity): RateChange | undefined {
    const rate = this.#rate;
    const plan = planCut({
      phase: this.#phase,
      rate,
      // What the server accepted over the last seconds, capped by what one window accepted when a
      // window is known (a long delay's, or one refusal runs showed).
      measured: Math.min(cap, this.#log.measured(tag.at, now, rate, rate)),
      known: this.#known,
      afterSearchStep: this.#lastChange?.reason === "search",
      searchFrom: this.#searchFrom,
      decrease: this.#o.decrease,
      floor: this.#floor(),
      firstOfTold: this.#epoch === 0 && rate >= this.#maxRate,
      held: now - this.#stableSince >= HELD_STEPS * this.step,
    });
    this.#epoch++;
    this.#acceptedSinceCut = 0;
    this.#acceptedAtCeiling = 0;
    this.#phase = plan.phase;
    if (plan.search !== undefined) {
      this.#searchCap = plan.search.cap;
      this.#searchFrom = plan.search.from;
    }
    this.#startCurve(plan.known);
    if (plan.plateau) this.#curveTime = this.#curveK;
    // A cut always starts a new rate generation, even at the floor: answers already on their way
    // were sent at the overloading rate and must not raise it.
    return this.#set(plan.rate, "throttled", now, true);
  }

  #increase(now: number): RateChange | undefined {
    const ceiling = this.#top();
    const rate = this.#rate;
    if (!this.#demand || rate >= ceiling) return undefined;
    // Slow start doubles faster than a probe step (each doubling still confirmed by an answer at
    // the rate before it): from 1/s, 32/s takes 3 s.
    const every = this.#phase === "start" ? this.step * START_STEP : this.step;
    const since = now - this.#lastChangeAt;
    if (since < every) return undefined;
    // Checked at most every HOLD_CHECK_MS while they hold it: each is a pass over the recent sends,
    // and at thousands of answers a second a pass per answer would cost more than the requests.
    if (now < this.#heldUntil) return undefined;
    if (this.#held(rate, now)) {
      this.#heldUntil = now + HOLD_CHECK_MS;
      return undefined;
    }
    let next: number;
    let reason: RateChangeReason;
    if (this.#phase === "start") {
      next = rate * 2;
      reason = "slow-start";
    } else if (this.#phase === "search") {
      next = Math.min(rate * SEARCH_STEP, this.#searchCap);
      reason = "search";
      if (next >= this.#searchCap) {
        // Back where a cut that went too deep started from: the curve's plateau from here.
        this.#phase = "curve";
        this.#startCurve(next);
        this.#curveTime = this.#curveK;
      }
    } else {
      // The curve's clock runs only while the rate is what holds callers back (at most two steps
      // per step), so idle time never turns into a jump; one step at most multiplies by MAX_STEP.
      const known = this.#known!;
      this.#curveTime += Math.min(since, 2 * every);
      next = Math.min(rate * MAX_STEP, cubicRate(known, this.#curveTime, this.#curveK, this.#o.decrease));
      if (next <= rate) return undefined;
      reason = next <= known ? "recover" : "probe";
    }
    return this.#set(Math.min(ceiling, next), reason, now);
  }

  /**
   * What holds the rate where it is although callers wait. Server errors among the recent answers;
   * or callers waited, but the client sent far below `rate` (they queued for something else too:
   * `maxConcurrent` slots, a told window, the server's latency): a higher rate would go unconfirmed
   * by anything the server saw, and could double without bound (TCP's rule for an
   * application-limited sender). Measured over the last span since the last change and since the
   * last pause ended (a pause the server asked for is no unused rate); too short a stretch to expect
   * two sends says nothing.
   */
  #held(rate: number, now: number): boolean {
    // Server errors among the recent answers: an outage (or a backend failing) says nothing good
    // about a higher rate — the answers that still succeed must not raise it meanwhile.
    const recent = this.#log.tally(now - SendLog.span(rate));
    const answered = recent.accepted + recent.refused + recent.failed;
    if (answered > 0 && recent.failed > FAILING * answered) return true;
    // Before callers waited, the client was idle, not slow: a burst every few seconds must not be
    // held to its own size a second.
    const from = Math.max(now - SendLog.span(rate), this.#lastChangeAt, this.#pausedUntil, this.#demandSince);
    const expected = ((now - from) * rate) / 1000;
    if (expected < 2) return false;
    return Math.min(this.#sentSinceChange, this.#log.tally(from).sent) < expected * APP_LIMITED;
  }

  /** The ceiling in force, held at {@link MAX_ADAPTIVE_RATE}: the fastest a learned rate may go. */
  #top(): number {
    return Math.min(this.ceiling, MAX_ADAPTIVE_RATE);
  }

  /** Starts the cubic curve from a cut (or a stated limit) toward the known rate W. */
  #startCurve(known: number): void {
    this.#known = known;
    this.#curveTime = 0;
    this.#curveK = curveK(known, this.step);
  }

  #set(wanted: number, reason: RateChangeReason, now: number, force = false): RateChange | undefined {
    // A stated limit past what a limiter can space (a million a second) is held there too.
    const rate = Math.min(wanted, MAX_ADAPTIVE_RATE);
    const previous = this.#rate;
    if (rate === previous && !force) return undefined;
    if (rate > this.#stableRate * SAME_RATE || rate * SAME_RATE < this.#stableRate) {
      this.#stableSince = now;
      this.#stableRate = rate;
    }
    this.#rate = rate;
    this.#gen++;
    this.#lastChangeAt = now;
    this.#demand = false;
    this.#sentSinceChange = 0;
    this.#heldUntil = -Infinity;
    if (rate === previous) return undefined;
    return (this.#lastChange = { rate, previous, reason, at: now, epoch: this.#epoch });
  }
}
