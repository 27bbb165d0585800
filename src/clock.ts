/**
 * Time as a seam. Every limiter reads time and arms timers through a {@link Clock}, so the same code
 * runs on the real clock in production and on a {@link ManualClock} in tests, where time only moves
 * when the test says so. `now()` is monotonic milliseconds with an arbitrary origin (not epoch time).
 *
 * @module
 */
import {
  clockTime,
  describeValue,
  expectNumber,
  MAX_EXACT_TIME,
  nonNegativeFinite,
  nonNegativeIntegerOrInfinity,
  requireFunction,
} from "./validate.ts";

/** An opaque timer handle, as returned by {@link Clock.setTimeout}. */
export type TimerHandle = unknown;

/**
 * A source of monotonic time and timers.
 *
 * @example
 * ```ts
 * import { systemClock } from "sluice";
 * const t0 = systemClock.now();
 * systemClock.setTimeout(() => console.log(systemClock.now() - t0), 10);
 * ```
 */
export interface Clock {
  /** Monotonic milliseconds (fractions allowed); only differences are meaningful. */
  now(): number;
  /** Calls `callback` once, `delay` ms from now. */
  setTimeout(callback: () => void, delay: number): TimerHandle;
  /** Cancels a timer returned by {@link Clock.setTimeout}; unknown or fired handles are ignored. */
  clearTimeout(handle: TimerHandle): void;
}

/**
 * The largest delay every runtime's `setTimeout` accepts (2³¹−1 ms, about 24.8 days). Longer delays
 * overflow and fire at once, so limiters cap their timers here and re-check when they fire.
 */
export const MAX_TIMER_DELAY = 2_147_483_647;

/**
 * The real clock: `performance.now()` and the global timers. Web-standard, so it works on Node, Deno,
 * Bun and browsers alike.
 *
 * @example
 * ```ts
 * import { SmoothLimiter, systemClock } from "sluice";
 * const limiter = new SmoothLimiter({ limit: 5, clock: systemClock }); // the default anyway
 * ```
 */
export const systemClock: Clock = {
  now: () => performance.now(),
  // Runtimes truncate fractional delays to whole ms; round up so a timer never fires before its time
  // (firing early would only cost a re-check, but every re-check adds lateness). A delay past
  // MAX_TIMER_DELAY fires then, not at once as the runtimes would (an overflow): as on ManualClock.
  setTimeout: (callback, delay) => globalThis.setTimeout(callback, Math.min(Math.ceil(delay), MAX_TIMER_DELAY)),
  clearTimeout: (handle) => globalThis.clearTimeout(handle as ReturnType<typeof globalThis.setTimeout>),
};

/** The most timers {@link ManualClock.advanceTo} fires at one instant before it takes them for a loop. */
const SAME_INSTANT_LIMIT = 100_000;
/** The macrotask turns {@link ManualClock.runUntil} waits, with no timer pending, for the promise or a new timer. */
const IDLE_TURNS = 20;
/** Then the real time (ms) it waits so, for work outside the clock (I/O, a worker), before calling the promise stuck. */
const IDLE_MS = 500;
/** The real time (ms) the clock waits for held work (see {@link ManualClock.hold}) before letting it go. */
const HOLD_MS = 200;

interface ManualTimer {
  readonly id: number;
  readonly at: number;
  readonly callback: () => void;
}

/**
 * Lets every pending promise continuation run: a macrotask boundary drains the microtask queue.
 * `setImmediate` where there is one (Node, Bun); else a message on a fresh `MessageChannel`, closed
 * once it arrived (browsers, Deno): a `setTimeout(0)` there is clamped to 4 ms once nested, which
 * made virtual time about 250 times slower in Chromium (red-team, 2026-11-27: 1,000 timers took 4.3 s).
 */
function nextMacrotask(): Promise<void> {
  const setImmediate = (globalThis as { setImmediate?: (cb: () => void) => unknown }).setImmediate;
  return new Promise((resolve) => {
    if (typeof setImmediate === "function") setImmediate(resolve);
    else if (typeof MessageChannel === "function") {
      const { port1, port2 } = new MessageChannel();
      port2.onmessage = () => {
        port1.close();
        port2.close();
        resolve();
      };
      port1.postMessage(undefined);
    } else globalThis.setTimeout(resolve, 0);
  });
}

/**
 * A clock whose time moves only when you tell it to: test limiters, and your own code that uses
 * them, in virtual time — exact, instant and deterministic.
 *
 * `advance(ms)` fires the due timers one at a time in time order (ties in the order they were set),
 * setting `now()` to each timer's time and letting promise continuations run before the next one, so
 * code awaiting a limiter resumes at exactly the virtual time it was granted.
 *
 * @example
 * ```ts
 * import { ManualClock, WindowLimiter } from "sluice";
 *
 * const clock = new ManualClock();
 * const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
 * await limiter.acquire();              // t = 0
 * const second = limiter.acquire();     // must wait for the window to pass
 * await clock.advance(1000);
 * await second;                         // granted at t = 1000
 * ```
 */
export class ManualClock implements Clock {
  #now: number;
  #nextId = 1;
  /** Pending timers, kept sorted by (at, id); only a few exist at once (one per limiter). */
  #timers: ManualTimer[] = [];
  /** Real asynchronous work the clock waits for before it fires the next timer (see {@link ManualClock.hold}). */
  readonly #held = new Set<Promise<unknown>>();

  /**
   * A clock standing at `start`.
   * @param start the initial value of `now()` (default 0): a number of ms within ±2⁵³ µs, the range in
   *   which limiters' time arithmetic is exact to the µs.
   * @throws {TypeError} when `start` is not a number; {RangeError} when it is out of range.
   */
  constructor(start = 0) {
    this.#now = clockTime("start", start);
  }

  /** The current virtual time in ms. */
  now(): number {
    return this.#now;
  }

  /**
   * Schedules `callback` at `now() + delay` (negative or NaN delays count as 0; a delay past
   * {@link MAX_TIMER_DELAY}, `Infinity` included, counts as that, as on `systemClock`).
   */
  setTimeout(callback: () => void, delay: number): TimerHandle {
    requireFunction("callback", callback);
    expectNumber("delay", delay);
    const at = this.#now + (delay > 0 ? Math.min(delay, MAX_TIMER_DELAY) : 0);
    const timer: ManualTimer = { id: this.#nextId++, at, callback };
    let i = this.#timers.length;
    while (i > 0 && this.#timers[i - 1]!.at > at) i--;
    this.#timers.splice(i, 0, timer);
    return timer.id;
  }

  /** Cancels a pending timer. */
  clearTimeout(handle: TimerHandle): void {
    const i = this.#timers.findIndex((t) => t.id === handle);
    if (i !== -1) this.#timers.splice(i, 1);
  }

  /**
   * Holds the clock while `work` — real asynchronous work, such as reading a request's body — is
   * pending: no timer fires until it settles, so virtual time does not move on meanwhile. Returns a
   * promise of its outcome. The simulated fetch of `sluice/testing` holds the clock while its server
   * reads a request, so a run does not depend on how many event-loop turns a runtime needs for that
   * (a browser needs more than Node). Work still pending after 0.2 s of real time is let go: it may
   * wait for one of this clock's own timers, which would then never fire.
   *
   * @example
   * ```ts
   * const body = await clock.hold(request.text()); // no timer fires before the body is read
   * ```
   */
  hold<T>(work: PromiseLike<T>): Promise<T> {
    const held = Promise.resolve(work);
    const settled = held.then(() => undefined, () => undefined);
    this.#held.add(settled);
    void settled.then(() => this.#held.delete(settled));
    return held;
  }

  /**
   * After a timer fired: every promise continuation runs, and the work held meanwhile settles. Held
   * work still pending after {@link HOLD_MS} of real time is let go: it may wait for this clock (a
   * simulated server's handler that sleeps on it), which would then never move (review, 2026-11-27:
   * it hung). Letting go on a timer being set instead was tried: the limiters re-arm theirs while a
   * body is read, and browsers' runs differed again.
   */
  async #settle(): Promise<void> {
    await nextMacrotask();
    while (this.#held.size > 0) {
      let timeout: ReturnType<typeof globalThis.setTimeout> | undefined;
      const letGo = new Promise<boolean>((resolve) => (timeout = globalThis.setTimeout(() => resolve(true), HOLD_MS)));
      const stuck = await Promise.race([Promise.all(this.#held).then(() => false), letGo]);
      globalThis.clearTimeout(timeout);
      if (stuck) this.#held.clear(); // it waits for the clock (or for ever): hold it no longer
      await nextMacrotask();
    }
  }

  /** How many timers are pending: a test can assert that an idle limiter holds none. */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  /** The time of the next pending timer, or `undefined` when none is pending. */
  get nextTimerAt(): number | undefined {
    return this.#timers[0]?.at;
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way, in time order, and
   * letting promise continuations run after each one. Timers set by those continuations fire too if
   * they fall within the advanced span.
   */
  async advance(ms: number): Promise<void> {
    nonNegativeFinite("ms", ms);
    if (!(this.#now + ms <= MAX_EXACT_TIME)) {
      throw new RangeError(`\`ms\` must keep the time within ±2^53 µs (about ±9.007e12 ms), got ${describeValue(ms)}`);
    }
    await this.advanceTo(this.#now + ms);
  }

  /**
   * Like {@link ManualClock.advance}, to an absolute time (never backwards).
   * @throws {RangeError} after 100,000 timers set during the call fired within 1 µs of each other:
   *   a timer that re-arms itself with no (or a vanishing) delay would never let time move (runtimes
   *   wait at least 1 ms; this clock would hang). Timers set before the call do not count.
   */
  async advanceTo(time: number): Promise<void> {
    clockTime("time", time);
    await this.#settle();
    // Timers set while this runs and fired at the instant they were set: many of those means a
    // timer that re-arms itself with no delay (timers set before, however many, do not count).
    // (Within 1 µs counts as the same instant: a re-arm by 1e-9 ms would otherwise creep on for ever.)
    const setBefore = this.#nextId;
    let sameInstant = 0;
    let instant = this.#now;
    for (;;) {
      const next = this.#timers[0];
      if (next === undefined || next.at > time) break;
      this.#timers.shift();
      if (next.at > this.#now) this.#now = next.at;
      if (this.#now - instant >= 0.001) {
        instant = this.#now;
        sameInstant = 0;
      } else if (next.id >= setBefore && ++sameInstant > SAME_INSTANT_LIMIT) {
        throw new RangeError(`more than ${SAME_INSTANT_LIMIT} timers set and fired within 1 µs of ${instant} ms: a timer that re-arms itself with no delay?`);
      }
      next.callback();
      await this.#settle();
    }
    if (time > this.#now) this.#now = time;
    await this.#settle();
  }

  /**
   * Fires pending timers in time order until none is left (or `limit` have fired), advancing time to
   * each. Useful to drain a queue without computing how long it takes.
   * @param limit the most timers to fire: a non-negative integer, or `Infinity` (default 100,000,
   *   so a timer that re-arms itself forever cannot hang a test)
   * @returns how many timers fired
   */
  async runAll(limit = 100_000): Promise<number> {
    nonNegativeIntegerOrInfinity("limit", limit);
    let fired = 0;
    await this.#settle();
    while (this.#timers.length > 0 && fired < limit) {
      const next = this.#timers.shift()!;
      if (next.at > this.#now) this.#now = next.at;
      next.callback();
      fired++;
      await this.#settle();
    }
    return fired;
  }

  /**
   * Fires pending timers in time order (as {@link ManualClock.runAll}) until `promise` settles, and
   * returns its outcome: resolves with its value or rejects with its reason. Its handlers are
   * attached at once, so a rejection while the timers run is not reported as unhandled (with
   * `const done = job(); await clock.runAll(); await done;` it is: nothing awaits `done` yet).
   * @param limit the most timers to fire (default 100,000)
   * @throws {Error} when the promise is still pending once no timer is left (it waits for
   *   something this clock does not drive) — after half a second of real time with no timer set, for
   *   work outside the clock (file I/O, a worker) to finish — or after `limit` timers
   *
   * @example
   * ```ts
   * const result = await clock.runUntil(runBatch(documents, { fetch: api })); // minutes of traffic, at once
   * ```
   */
  async runUntil<T>(promise: PromiseLike<T>, limit = 100_000): Promise<T> {
    nonNegativeIntegerOrInfinity("limit", limit);
    let settled = false;
    const outcome = Promise.resolve(promise).finally(() => {
      settled = true;
    });
    outcome.catch(() => {}); // handled here; the caller gets it below
    let fired = 0;
    let idle = 0;
    let idleSince: number | undefined;
    await this.#settle();
    while (!settled && fired < limit) {
      if (this.#timers.length === 0) {
        // Nothing to fire: give work outside the clock a few turns (an msw handler's own hops), then
        // some real time (a file written, a hash computed off the main thread: red-team, 2026-11-27,
        // a job appending each result to a file failed at random after 20 turns) to settle the
        // promise or set a timer, before calling it stuck.
        if (++idle <= IDLE_TURNS) await this.#settle();
        else {
          idleSince ??= Date.now();
          if (Date.now() - idleSince >= IDLE_MS) break;
          await new Promise((resolve) => globalThis.setTimeout(resolve, 2));
        }
        continue;
      }
      idle = 0;
      idleSince = undefined;
      const next = this.#timers.shift()!;
      if (next.at > this.#now) this.#now = next.at;
      next.callback();
      fired++;
      await this.#settle();
    }
    if (!settled) {
      throw new Error(fired >= limit
        ? `the promise was still pending after ${limit} timers (raise \`limit\`, or it never settles)`
        : `the promise is still pending and no timer is left at ${this.#now} ms: it waits for something this clock does not drive`);
    }
    return outcome;
  }

  /**
   * Sets the time without firing timers — even backwards, to test code against a misbehaving clock.
   * (Limiters clamp backward steps: a clock that goes back never mints permits.)
   */
  jumpTo(time: number): void {
    this.#now = clockTime("time", time);
  }
}
