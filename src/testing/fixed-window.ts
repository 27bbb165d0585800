/**
 * Fixed windows: time is cut into `[phase + k·interval, phase + (k+1)·interval)` and each window
 * admits `limit` units. The phase is the server's, not the client's — a client that starts at an
 * arbitrary time sees a first window of any length, which is why "N per window" clients must not
 * assume windows start when they do.
 *
 * State: the current window's index and its count. Some servers count refused requests too
 * (`countRejected`), so a client that keeps retrying inside the window stays locked out.
 *
 * @module
 */
import { describeValue, keysOf, nonNegativeFinite, onlyKnown, optionsObject, positiveFinite, positiveInteger } from "../validate.ts";
import { SeededRandom } from "./random.ts";
import {
  checkCall, checkChanges, decision, limitAt, resolveHeaders,
  type Decision, type HeaderOptions, type LimitChange, type MeteredModel, type ResolvedHeaders,
} from "./decision.ts";

/**
 * Options of a {@link FixedWindowServer}.
 *
 * @example
 * ```ts
 * new FixedWindowServer({ limit: 100, interval: 60_000, phase: "random", seed: 3, countRejected: true });
 * ```
 */
export interface FixedWindowOptions extends HeaderOptions {
  /** Units admitted per window. */
  limit: number;
  /** The window's length in ms. @default 1000 */
  interval?: number;
  /** Where windows start: a time in ms (taken modulo `interval`), or `"random"` (drawn from `seed`). @default 0 */
  phase?: number | "random";
  /** The seed of a `"random"` phase. @default 1 */
  seed?: number;
  /** Count refused requests against the window too. @default false */
  countRejected?: boolean;
  /** Steps of the limit over time; a change takes effect at once, against what the current window has counted. */
  changes?: readonly LimitChange[];
}

/**
 * A simulated fixed-window server. Headers report reset = the time until the window ends.
 *
 * @example
 * ```ts
 * import { FixedWindowServer } from "sluice/testing";
 * const server = new FixedWindowServer({ limit: 2, interval: 1000, phase: 300 });
 * server.decide(0).allowed;          // true  (window [-700, 300))
 * server.decide(1).allowed;          // true
 * server.decide(2).retryAfterMs;     // 298: the next window starts at 300
 * server.decide(300).allowed;        // true
 * ```
 */
export class FixedWindowServer implements MeteredModel {
  readonly #h: ResolvedHeaders;
  readonly #limit: number;
  readonly #interval: number;
  readonly #changes: readonly LimitChange[];
  readonly #countRejected: boolean;
  /** The phase, in [0, interval). */
  readonly phase: number;
  #window = -Infinity;
  #count = 0;
  #last = -Infinity;

  /** Checks the options; a `RangeError`/`TypeError` names a bad one. */
  constructor(options: FixedWindowOptions) {
    const o = optionsObject("options", options);
    onlyKnown("FixedWindowServer", o, keysOf<FixedWindowOptions>()("limit", "interval", "phase", "seed", "countRejected", "changes", "headers", "policy", "epochMs", "status"));
    this.#h = resolveHeaders(o);
    this.#limit = positiveInteger("limit", o.limit);
    this.#interval = positiveFinite("interval", o.interval ?? 1000);
    this.#changes = checkChanges(o.changes);
    if (o.countRejected !== undefined && typeof o.countRejected !== "boolean") {
      throw new TypeError(`\`countRejected\` must be a boolean, got ${describeValue(o.countRejected)}`);
    }
    this.#countRejected = o.countRejected ?? false;
    const phase = o.phase === "random"
      ? new SeededRandom(o.seed ?? 1).int(0, Math.ceil(this.#interval) - 1)
      : nonNegativeFinite("phase", o.phase ?? 0);
    this.phase = phase % this.#interval;
  }

  #roll(now: number): void {
    const window = Math.floor((now - this.phase) / this.#interval);
    if (window !== this.#window) {
      this.#window = window;
      this.#count = 0;
    }
    this.#last = now;
  }

  /** Decides a request of `cost` units arriving at `now` (see `ServerModel.decide`). */
  decide(now: number, cost = 1): Decision {
    checkCall(now, cost, this.#last);
    this.#roll(now);
    const limit = limitAt(this.#limit, this.#changes, now);
    const allowed = this.#count + cost <= limit;
    if (allowed || this.#countRejected) this.#count += cost;
    const end = this.phase + (this.#window + 1) * this.#interval;
    return decision(this.#h, now, {
      allowed,
      // A request larger than the limit never passes; otherwise the next window is empty.
      retryAfterMs: cost > limit ? Infinity : end - now,
      limit,
      remaining: limit - this.#count,
      resetMs: end - now,
      windowMs: this.#interval,
    });
  }

  /** Charges `amount` more units at `now` (negative refunds; the model may go into debt). */
  charge(now: number, amount: number): void {
    if (typeof amount !== "number" || !Number.isFinite(amount)) throw new RangeError(`\`amount\` must be a finite number, got ${describeValue(amount)}`);
    checkCall(now, 1, this.#last);
    this.#roll(now);
    this.#count = Math.max(0, this.#count + amount);
  }
}
