/**
 * WindowLimiter: the strict rolling window — never more than `limit` permits granted in ANY
 * half-open window `[t, t + interval)`, whatever t.
 *
 * State is the log of grants still inside the window, in a ring buffer of (time, cumulative permits)
 * pairs: a multi-permit grant is one entry, grants at the same instant merge, so the log holds at
 * most `limit` entries (each carries ≥ 1 permit) and grows only as far as it is used. Grants are
 * recorded in time order (the gate never goes backwards), which is what makes the log a queue.
 *
 * `earliest(n)`: if the permits in the window plus n fit the limit, now. Otherwise the oldest grants
 * must leave the window first: with cumulative counts, the last grant that must leave is found by
 * binary search, and it leaves exactly `interval` after it was granted. O(log limit) per decision,
 * O(1) amortised per grant; memory 16 bytes per live entry.
 *
 * A grant at g counts in the windows [t, t + interval) with t ≤ g < t + interval, so a permit
 * granted at g frees its slot at g + interval exactly: 10 per second, ten at t = 0, the eleventh at
 * t = 1000.
 *
 * `countFrom: "completion"`: permits taken through `schedule(task)` stay *in flight* — occupying
 * their slots — until the task settles, and then count as if granted at that moment. Against a server
 * that enforces the same strict window on arrival, that is safe whatever the latency: a response
 * leaves the server after the request arrived, so a slot reused `interval` after the response cannot
 * put one more request into any server window. The cost is the latency, taken once per slot. While
 * in-flight permits are what blocks a request, its time is unknown (`earliest` is `Infinity`) and the
 * gate waits for a release; predictions assume in-flight work completes now (a lower bound — except
 * with priorities and aging, where that assumption can also change the order: see the README's Priorities).
 *
 * @module
 */
import { BASE_OPTIONS, type BaseLimiterOptions, GatedLimiter, resolveClock } from "./limiter.ts";
import { type AdjustablePolicy, type SetLimitOptions, setWindowLimit } from "./set-limit.ts";
import { describeValue, keysOf, onlyKnown, optionsObject, positiveInteger, timeInterval } from "../validate.ts";

/**
 * Options of {@link WindowLimiter}.
 *
 * @example
 * ```ts
 * const options: WindowLimiterOptions = { limit: 100, interval: 60_000 };
 * ```
 */
export interface WindowLimiterOptions extends BaseLimiterOptions {
  /** The most permits granted in any window of `interval` ms. */
  limit: number;
  /** The window length in ms, at least 0.001 (1 µs). */
  interval: number;
  /**
   * When a permit starts to count. `"grant"`: for `acquire()`, at the grant; for `schedule(task)`, at
   * the moment the task starts (tasks granted together start one after another, so each is stamped
   * with its own start: start times keep the window). `"completion"`: for `schedule(task)`, when the
   * task settles — safe against a server counting arrivals, whatever the latency (see the module
   * note). `acquire()` has no task to wait for and always counts from the grant.
   * @default "grant"
   */
  countFrom?: "grant" | "completion";
}

/** @internal the strict rolling window over explicit time. */
export class WindowPolicy implements AdjustablePolicy {
  #limit: number;
  heldEpoch = 0;
  #interval: number;
  #times: Float64Array;
  #cums: Float64Array;
  #head = 0;
  #size = 0;
  /** Permits granted ever (the cumulative count of the newest entry). */
  #total = 0;
  /** Cumulative count of the newest entry that has left the window. */
  #left = 0;
  #pausedUntil = -Infinity;
  /** Permits granted with `hold` and not yet released (they occupy slots but have no time yet). */
  #inFlight = 0;
  /** A queued task's permits count from the moment it starts (or, with `countFrom`, ends). */
  readonly holdsUntilRelease = true;
  readonly countsFromCompletion: boolean;

  constructor(limit: number, interval: number, countFromCompletion = false) {
    this.#limit = limit;
    this.#interval = interval;
    this.countsFromCompletion = countFromCompletion;
    const capacity = Math.min(limit, 8);
    this.#times = new Float64Array(capacity);
    this.#cums = new Float64Array(capacity);
  }

  get maxPermits(): number {
    return this.#limit;
  }

  get interval(): number {
    return this.#interval;
  }

  /**
   * Changes the numbers at `now`. The grants still in the window at `now` (under the old interval)
   * keep counting, each until `interval` (the new one) after its grant; permits in flight stay in
   * flight. When they already fill the new limit, nothing more is granted until enough leave.
   */
  setLimit(limit: number, interval: number, now: number): void {
    this.#evict(now);
    this.#limit = limit;
    this.#interval = interval;
  }

  /** Permits granted inside the window that ends at the last `earliest`/`take` time. */
  get inWindow(): number {
    return this.#total - this.#left;
  }

  #evict(now: number): void {
    const capacity = this.#times.length;
    // `time + interval <= now` is the very expression `earliest` returns, so the two always agree.
    while (this.#size > 0 && this.#times[this.#head]! + this.#interval <= now) {
      this.#left = this.#cums[this.#head]!;
      this.#head = this.#head + 1 === capacity ? 0 : this.#head + 1;
      this.#size--;
    }
  }

  earliest(permits: number, now: number): number {
    return this.earliestAfter(0, permits, now);
  }

  /**
   * `earliest(permits, now)` as it would be after `take(taken, now)`, without taking: the gate asks it
   * to check a reservation, which would otherwise cost a copy of the log.
   */
  earliestAfter(taken: number, permits: number, now: number): number {
    this.#evict(now);
    const at = this.#pausedUntil > now ? this.#pausedUntil : now;
    const free = this.maxPermits - this.#inFlight;
    const total = this.#total + taken;
    if (total - this.#left + permits <= free) return at;
    if (permits > free) return Infinity; // only a release can make room: the gate waits for it
    // Oldest entry j whose leaving brings the window down to `free - permits`.
    const threshold = total - free + permits;
    // Only the hypothetical grant itself, at `now`, would do: it leaves `interval` after now.
    if (threshold > this.#total) return Math.max(now + this.#interval, at);
    const capacity = this.#times.length;
    let lo = 0;
    let hi = this.#size - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.#cums[(this.#head + mid) % capacity]! >= threshold) hi = mid;
      else lo = mid + 1;
    }
    const leaves = this.#times[(this.#head + lo) % capacity]! + this.#interval;
    return leaves > at ? leaves : at;
  }

  get holding(): boolean {
    return this.#inFlight > 0;
  }

  take(permits: number, at: number, hold = false): void {
    if (hold) {
      this.#inFlight += permits;
      return;
    }
    this.#record(permits, at);
  }

  release(permits: number, at: number): void {
    this.#inFlight -= permits;
    this.#record(permits, at);
  }

  unhold(permits: number): void {
    this.#inFlight -= permits;
  }

  #record(permits: number, at: number): void {
    this.#evict(at);
    const capacity = this.#times.length;
    this.#total += permits;
    if (this.#size > 0) {
      let last = this.#head + this.#size - 1;
      if (last >= capacity) last -= capacity;
      if (this.#times[last] === at) {
        this.#cums[last] = this.#total;
        return;
      }
    }
    if (this.#size === capacity) this.#grow();
    let tail = this.#head + this.#size;
    if (tail >= this.#times.length) tail -= this.#times.length;
    this.#times[tail] = at;
    this.#cums[tail] = this.#total;
    this.#size++;
  }

  /**
   * Settles a reservation granted at `grantedAt`. A refund comes off the log entry of that instant,
   * as if the grant had been smaller (nothing to do once it has left the window). Debt is recorded
   * at `now`: the usage is known to have happened by then, and recording it later than the grant
   * keeps it counting for a full `interval` from the moment it is known, instead of letting the
   * next grants fill a window that already holds it.
   */
  adjust(delta: number, grantedAt: number, _mark: number, now: number): void {
    if (delta > 0) {
      this.#record(delta, now);
      return;
    }
    this.#evict(now);
    const capacity = this.#times.length;
    let j = this.#size - 1;
    while (j >= 0 && this.#times[(this.#head + j) % capacity]! > grantedAt) j--;
    if (j < 0 || this.#times[(this.#head + j) % capacity] !== grantedAt) return;
    for (let m = j; m < this.#size; m++) this.#cums[(this.#head + m) % capacity]! += delta;
    this.#total += delta;
    const before = j === 0 ? this.#left : this.#cums[(this.#head + j - 1) % capacity]!;
    if (this.#cums[(this.#head + j) % capacity] !== before) return;
    // The entry is empty: drop it, so the log keeps at most `limit` entries (each ≥ 1 permit).
    for (let m = j; m < this.#size - 1; m++) {
      const to = (this.#head + m) % capacity;
      const from = (this.#head + m + 1) % capacity;
      this.#times[to] = this.#times[from]!;
      this.#cums[to] = this.#cums[from]!;
    }
    this.#size--;
  }

  #grow(): void {
    const capacity = this.#times.length;
    const size = Math.max(8, capacity * 2);
    const times = new Float64Array(size);
    const cums = new Float64Array(size);
    // The live entries run from the head to the end of the ring, then on from its start: two block
    // copies (a log that never binds grows to millions of entries, and an element loop with a
    // modulo per entry was a tenth of `schedule`'s time there).
    const head = this.#head;
    const first = Math.min(this.#size, capacity - head);
    times.set(this.#times.subarray(head, head + first));
    cums.set(this.#cums.subarray(head, head + first));
    if (first < this.#size) {
      times.set(this.#times.subarray(0, this.#size - first), first);
      cums.set(this.#cums.subarray(0, this.#size - first), first);
    }
    this.#times = times;
    this.#cums = cums;
    this.#head = 0;
  }

  pause(until: number): void {
    if (until > this.#pausedUntil) this.#pausedUntil = until;
  }

  isAtRest(now: number): boolean {
    this.#evict(now);
    return this.#size === 0 && this.#inFlight === 0 && this.#pausedUntil <= now;
  }

  clone(now: number): WindowPolicy {
    const copy = new WindowPolicy(this.maxPermits, this.#interval, this.countsFromCompletion);
    copy.#times = this.#times.slice();
    copy.#cums = this.#cums.slice();
    copy.#head = this.#head;
    copy.#size = this.#size;
    copy.#total = this.#total;
    copy.#left = this.#left;
    copy.#pausedUntil = this.#pausedUntil;
    // For a prediction, work in flight is assumed to complete now (the earliest it could).
    if (this.#inFlight > 0) copy.#record(this.#inFlight, Math.max(now, this.#lastTime()));
    return copy;
  }

  #lastTime(): number {
    if (this.#size === 0) return -Infinity;
    return this.#times[(this.#head + this.#size - 1) % this.#times.length]!;
  }
}

/**
 * The strict contract: never more than `limit` permits in ANY window of `interval` ms. Use it when a
 * server counts requests in a rolling window, or when you must be able to prove a bound.
 * Multi-permit; a request for more than `limit` permits can never be granted and throws RangeError.
 *
 * @example
 * ```ts
 * import { WindowLimiter } from "sluice";
 *
 * const limiter = new WindowLimiter({ limit: 10, interval: 1000 });
 * for (let i = 0; i < 10; i++) await limiter.acquire(); // all at once
 * await limiter.acquire(); // waits until the first grant leaves the window, 1000 ms later
 * ```
 */
export class WindowLimiter extends GatedLimiter {
  /**
   * Creates the limiter; it starts empty (nothing granted, nothing queued).
   * @throws {RangeError | TypeError} when an option is invalid, naming it and its value.
   */
  constructor(options: WindowLimiterOptions) {
    const o = optionsObject("options", options);
    onlyKnown("WindowLimiter", o, keysOf<WindowLimiterOptions>()(...BASE_OPTIONS, "limit", "interval", "countFrom"));
    const limit = positiveInteger("limit", o.limit);
    const interval = timeInterval("interval", o.interval);
    const countFrom = o.countFrom ?? "grant";
    if (countFrom !== "grant" && countFrom !== "completion") {
      throw new RangeError(`\`countFrom\` must be "grant" or "completion", got ${describeValue(countFrom)}`);
    }
    const policy = new WindowPolicy(limit, interval, countFrom === "completion");
    super([policy], { ...o, clock: resolveClock(o.clock) });
    this.#policy = policy;
  }

  readonly #policy: WindowPolicy;

  /** The most permits per window now (changed by {@link WindowLimiter.setLimit}). */
  get limit(): number {
    return this.#policy.maxPermits;
  }

  /** The window length in ms now. */
  get interval(): number {
    return this.#policy.interval;
  }

  /**
   * Changes the limit (and optionally the window length) from now on and re-times the callers
   * already queued; validated like the constructor's options, `interval` defaulting to the current one.
   * The grants still in the window keep counting, each until `interval` (the new one) after its
   * grant, and permits in flight stay in flight: when they already fill the new limit, nothing more is
   * granted until enough of them leave. A grant that left the window before the change never counts
   * again, even when the window grows.
   * @throws {RangeError | TypeError} when an option is invalid, naming it and its value — or when a
   *   queued request asks for more permits than the new limit (nothing changes then).
   * @example
   * ```ts
   * import { WindowLimiter } from "sluice";
   * const limiter = new WindowLimiter({ limit: 100, interval: 60_000 });
   * limiter.setLimit({ limit: 50 }); // the grants of the last minute count against the 50
   * ```
   */
  setLimit(options: SetLimitOptions): void {
    setWindowLimit(this, this.#policy, options);
  }
}
