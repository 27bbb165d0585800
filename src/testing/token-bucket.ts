/**
 * A token bucket (equivalently GCRA, the "generic cell rate algorithm" many API gateways run): the
 * bucket holds up to `burst` tokens and refills continuously at `limit` per `interval`; a request of
 * cost c passes when c tokens are there, and takes them.
 *
 * State: `level`, the tokens at time `last`, kept multiplied by `interval` so refills (`elapsed ·
 * limit`) and charges (`cost · interval`) are exact integers at integer times — a step table can
 * assert grant times to the ms. Invariant: level ≤ burst · interval; it goes below 0 only through
 * {@link TokenBucketServer.charge} (debt, repaid by the refill).
 *
 * @module
 */
import { describeValue, keysOf, onlyKnown, optionsObject, positiveFinite, positiveInteger } from "../validate.ts";
import {
  checkCall, checkChanges, decision, limitAt, resolveHeaders,
  type Decision, type HeaderOptions, type LimitChange, type MeteredModel, type ResolvedHeaders,
} from "./decision.ts";

/**
 * Options of a {@link TokenBucketServer}.
 *
 * @example
 * ```ts
 * new TokenBucketServer({ limit: 100, interval: 60_000, burst: 10 });
 * ```
 */
export interface TokenBucketOptions extends HeaderOptions {
  /** Tokens refilled per `interval` (the sustained rate). */
  limit: number;
  /** The refill period in ms. @default 1000 */
  interval?: number;
  /** The bucket's size: how many tokens an idle client can spend at once. Starts full. @default the limit in force */
  burst?: number;
  /** Steps of the limit over time (the rate, and the burst unless `burst` is set). */
  changes?: readonly LimitChange[];
}

/**
 * A simulated token-bucket / GCRA server. Its headers report `remaining` = whole tokens left and
 * reset = the time until the bucket is full again (OpenAI's meaning of "reset").
 *
 * @example
 * ```ts
 * import { TokenBucketServer } from "sluice/testing";
 * const server = new TokenBucketServer({ limit: 10, interval: 1000, burst: 2, headers: ["ietf", "retry-after"] });
 * server.decide(0).allowed;   // true
 * server.decide(0).allowed;   // true (burst of 2)
 * server.decide(0).retryAfterMs; // 100: one token refills every 100 ms
 * server.charge(50, 3);       // usage metered after the fact: the bucket is now in debt
 * ```
 */
export class TokenBucketServer implements MeteredModel {
  readonly #h: ResolvedHeaders;
  readonly #limit: number;
  readonly #interval: number;
  readonly #burst: number | undefined;
  readonly #changes: readonly LimitChange[];
  #level: number;
  #last = -Infinity;

  /** Checks the options; a `RangeError`/`TypeError` names a bad one. */
  constructor(options: TokenBucketOptions) {
    const o = optionsObject("options", options);
    onlyKnown("TokenBucketServer", o, keysOf<TokenBucketOptions>()("limit", "interval", "burst", "changes", "headers", "policy", "epochMs", "status"));
    this.#h = resolveHeaders(o);
    this.#limit = positiveInteger("limit", o.limit);
    this.#interval = positiveFinite("interval", o.interval ?? 1000);
    this.#burst = o.burst === undefined ? undefined : positiveInteger("burst", o.burst);
    this.#changes = checkChanges(o.changes);
    this.#level = this.#capacity(this.#changes[0] !== undefined && this.#changes[0].at <= 0 ? this.#changes[0].limit : this.#limit);
  }

  #capacity(limit: number): number {
    return (this.#burst ?? limit) * this.#interval;
  }

  /** Refills from `last` to `now`, piece by piece across limit changes. */
  #advance(now: number): number {
    if (this.#last === -Infinity) this.#last = now;
    let limit = limitAt(this.#limit, this.#changes, this.#last);
    for (const c of this.#changes) {
      if (c.at <= this.#last) continue;
      if (c.at > now) break;
      this.#level = Math.min(this.#level + (c.at - this.#last) * limit, this.#capacity(limit));
      this.#last = c.at;
      limit = c.limit;
      this.#level = Math.min(this.#level, this.#capacity(limit));
    }
    this.#level = Math.min(this.#level + (now - this.#last) * limit, this.#capacity(limit));
    this.#last = now;
    return limit;
  }

  /** Decides a request of `cost` units arriving at `now` (see `ServerModel.decide`). */
  decide(now: number, cost = 1): Decision {
    checkCall(now, cost, this.#last);
    const limit = this.#advance(now);
    const need = cost * this.#interval;
    const capacity = this.#capacity(limit);
    const allowed = need <= capacity && this.#level >= need;
    if (allowed) this.#level -= need;
    return decision(this.#h, now, {
      allowed,
      retryAfterMs: need > capacity ? Infinity : (need - this.#level) / limit,
      limit,
      remaining: this.#level / this.#interval,
      resetMs: (capacity - this.#level) / limit,
      windowMs: this.#interval,
    });
  }

  /** Charges `amount` more units at `now` (negative refunds; the model may go into debt). */
  charge(now: number, amount: number): void {
    if (typeof amount !== "number" || !Number.isFinite(amount)) throw new RangeError(`\`amount\` must be a finite number, got ${describeValue(amount)}`);
    checkCall(now, 1, this.#last);
    const limit = this.#advance(now);
    this.#level = Math.min(this.#level - amount * this.#interval, this.#capacity(limit));
  }

  /**
   * Ms from `now` until `cost` tokens are there (0: now; `Infinity`: more than the bucket holds),
   * deciding nothing — so a server with several buckets can check them all before charging any.
   */
  waitFor(now: number, cost = 1): number {
    checkCall(now, cost, this.#last);
    const limit = this.#advance(now);
    const need = cost * this.#interval;
    if (need > this.#capacity(limit)) return Infinity;
    return Math.max(0, (need - this.#level) / limit);
  }

  /** Whole tokens available at `now` (negative while in debt), without deciding anything. */
  available(now: number): number {
    checkCall(now, 1, this.#last);
    this.#advance(now);
    return Math.floor(this.#level / this.#interval);
  }

  /** Ms from `now` until the bucket is full again. */
  timeToFull(now: number): number {
    checkCall(now, 1, this.#last);
    const limit = this.#advance(now);
    return (this.#capacity(limit) - this.#level) / limit;
  }
}
