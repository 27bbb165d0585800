/**
 * A strict sliding log: "never more than `limit` units in any rolling `interval`". Every admitted
 * request is logged with its time; one arriving at `now` passes when the units logged in
 * `(now − interval, now]` plus its own cost fit the limit. The strictest common server: a client
 * must space its requests by completion-safe windows to never see a 429 here.
 *
 * State: the log of admitted (time, cost), trimmed as entries leave the window (memory ≤ limit).
 *
 * @module
 */
import { keysOf, onlyKnown, optionsObject, positiveFinite, positiveInteger } from "../validate.ts";
import {
  checkCall, checkChanges, decision, limitAt, resolveHeaders,
  type Decision, type HeaderOptions, type LimitChange, type ResolvedHeaders, type ServerModel,
} from "./decision.ts";

/**
 * Options of a {@link SlidingLogServer}.
 *
 * @example
 * ```ts
 * new SlidingLogServer({ limit: 100, interval: 60_000, headers: ["ietf"] });
 * ```
 */
export interface SlidingLogOptions extends HeaderOptions {
  /** Units admitted in any rolling `interval`. */
  limit: number;
  /** The rolling window in ms. @default 1000 */
  interval?: number;
  /** Steps of the limit over time (a step down does not evict what the log already holds). */
  changes?: readonly LimitChange[];
}

/**
 * A simulated strict sliding-log server. Headers report reset = the time until the oldest logged
 * request leaves the window (when capacity next frees up).
 *
 * @example
 * ```ts
 * import { SlidingLogServer } from "sluice/testing";
 * const server = new SlidingLogServer({ limit: 2, interval: 1000 });
 * server.decide(0); server.decide(400);
 * server.decide(999).retryAfterMs;   // 1: the request at 0 leaves the window at 1000
 * server.decide(1000).allowed;       // true
 * ```
 */
export class SlidingLogServer implements ServerModel {
  readonly #h: ResolvedHeaders;
  readonly #limit: number;
  readonly #interval: number;
  readonly #changes: readonly LimitChange[];
  #times: number[] = [];
  #costs: number[] = [];
  #total = 0;
  #last = -Infinity;

  /** Checks the options; a `RangeError`/`TypeError` names a bad one. */
  constructor(options: SlidingLogOptions) {
    const o = optionsObject("options", options);
    onlyKnown("SlidingLogServer", o, keysOf<SlidingLogOptions>()("limit", "interval", "changes", "headers", "policy", "epochMs", "status"));
    this.#h = resolveHeaders(o);
    this.#limit = positiveInteger("limit", o.limit);
    this.#interval = positiveFinite("interval", o.interval ?? 1000);
    this.#changes = checkChanges(o.changes);
  }

  /** Drops entries that have left the window ending at `now`. */
  #trim(now: number): void {
    let drop = 0;
    while (drop < this.#times.length && this.#times[drop]! <= now - this.#interval) this.#total -= this.#costs[drop++]!;
    if (drop > 0) {
      this.#times.splice(0, drop);
      this.#costs.splice(0, drop);
    }
    this.#last = now;
  }

  /** Ms until `cost` fits: when enough of the oldest entries have left the window. */
  #wait(now: number, cost: number, limit: number): number {
    if (cost > limit) return Infinity;
    let freed = 0;
    for (let i = 0; this.#total - freed + cost > limit; i++) {
      freed += this.#costs[i]!;
      if (this.#total - freed + cost <= limit) return this.#times[i]! + this.#interval - now;
    }
    return 0;
  }

  /** Decides a request of `cost` units arriving at `now` (see `ServerModel.decide`). */
  decide(now: number, cost = 1): Decision {
    checkCall(now, cost, this.#last);
    this.#trim(now);
    const limit = limitAt(this.#limit, this.#changes, now);
    const allowed = this.#total + cost <= limit;
    if (allowed) {
      this.#times.push(now);
      this.#costs.push(cost);
      this.#total += cost;
    }
    return decision(this.#h, now, {
      allowed,
      retryAfterMs: allowed ? 0 : this.#wait(now, cost, limit),
      limit,
      remaining: limit - this.#total,
      resetMs: this.#times.length === 0 ? 0 : this.#times[0]! + this.#interval - now,
      windowMs: this.#interval,
    });
  }

  /** Ms from `now` until a request of `cost` would pass (0: now), deciding nothing. */
  waitFor(now: number, cost = 1): number {
    checkCall(now, cost, this.#last);
    this.#trim(now);
    return this.#wait(now, cost, limitAt(this.#limit, this.#changes, now));
  }
}
