/**
 * nginx's `limit_req zone=… rate=R burst=B [nodelay | delay=D]`, as ngx_http_limit_req_module
 * documents and implements it: a leaky bucket of "excess" requests that drains at the rate.
 *
 * - Each request computes `excess = max(0, excess − elapsed · rate + 1)`: so requests at exactly the
 *   rate have excess 0, and one that comes 1/(2·rate) early has excess ½.
 * - If the new excess would pass `burst`, the request is refused (status 503 unless `limit_req_status`
 *   says otherwise) and **changes nothing**: refused requests do not count.
 * - Otherwise it is accepted. Without `nodelay` it is *delayed*, not refused: served after
 *   `excess / rate` — so a burst is smoothed out to the rate. With `delay=D` the first D excess
 *   requests go at once; `nodelay` is `delay=burst`.
 *
 * With nginx's own integer arithmetic: the rate is kept in thousandths of a request per second,
 * truncated (`rate=1r/m` is 16, not 16.67: a request every 60 s builds up 40 thousandths of excess),
 * the excess in thousandths, drained per whole ms (`rate · ms / 1000`, truncated), and a hold is
 * whole ms. At per-minute rates this decides differently from exact arithmetic — requests exactly at
 * the rate are refused now and then without `burst`, as real nginx refuses them (red-team,
 * 2026-11-27: an exact model accepted them all).
 *
 * @module
 */
import { keysOf, nonNegativeInteger, onlyKnown, optionsObject, positiveFinite, positiveInteger } from "../validate.ts";
import { checkCall, decision, resolveHeaders, type Decision, type HeaderOptions, type ResolvedHeaders, type ServerModel } from "./decision.ts";

/**
 * Options of a {@link LeakyBucketServer}, named as in nginx.
 *
 * @example
 * ```ts
 * new LeakyBucketServer({ rate: 10, interval: 60_000, burst: 5, nodelay: true }); // rate=10r/m burst=5 nodelay
 * ```
 */
export interface LeakyBucketOptions extends HeaderOptions {
  /** `rate=`: requests per `interval`. */
  rate: number;
  /** The rate's period in ms (`r/s` = 1000, `r/m` = 60000). @default 1000 */
  interval?: number;
  /** `burst=`: excess requests the bucket holds beyond the one being served. @default 0 */
  burst?: number;
  /** `nodelay`: serve accepted excess requests at once instead of spacing them at the rate. @default false */
  nodelay?: boolean;
  /** `delay=`: the number of excess requests served at once before delaying starts. @default 0 (or `burst` with `nodelay`) */
  delay?: number;
}

/**
 * A simulated nginx `limit_req`. Refusals are 503 by default, as in nginx (`status: 429` to match
 * `limit_req_status 429`); nginx sends no rate-limit headers, so none are sent unless asked for.
 * An allowed request's `delayMs` is how long nginx holds it before passing it upstream.
 *
 * @example
 * ```ts
 * import { LeakyBucketServer } from "sluice/testing";
 * const nginx = new LeakyBucketServer({ rate: 1, burst: 2 }); // limit_req rate=1r/s burst=2
 * nginx.decide(0).delayMs;   // 0
 * nginx.decide(0).delayMs;   // 1000: delayed, not refused
 * nginx.decide(0).delayMs;   // 2000
 * nginx.decide(0).status;    // 503: the burst is full
 * ```
 */
export class LeakyBucketServer implements ServerModel {
  readonly #h: ResolvedHeaders;
  /** `rate=` as given: requests per `interval` (the policy it states). */
  readonly #perInterval: number;
  readonly #interval: number;
  /** nginx's `ctx->rate`: thousandths of a request per second, truncated. */
  readonly #rate: number;
  /** nginx's `limit->burst` and `limit->delay`: in thousandths. */
  readonly #burst: number;
  readonly #delay: number;
  /** nginx's `lr->excess` (thousandths) and `lr->last` (whole ms). */
  #excess = 0;
  #last = -Infinity;

  /** Checks the options; a `RangeError`/`TypeError` names a bad one. */
  constructor(options: LeakyBucketOptions) {
    const o = optionsObject("options", options);
    onlyKnown("LeakyBucketServer", o, keysOf<LeakyBucketOptions>()("rate", "interval", "burst", "nodelay", "delay", "headers", "policy", "epochMs", "status"));
    this.#h = resolveHeaders({ headers: [], status: 503, ...o });
    this.#perInterval = positiveInteger("rate", o.rate);
    this.#interval = positiveFinite("interval", o.interval ?? 1000);
    this.#rate = Math.floor((this.#perInterval * 1_000_000) / this.#interval);
    if (this.#rate < 1) {
      throw new RangeError(`\`rate\` per \`interval\` must be at least 1 request per 1000 s (nginx keeps it in thousandths a second), got ${this.#perInterval} per ${this.#interval} ms`);
    }
    const burst = nonNegativeInteger("burst", o.burst ?? 0);
    if (o.nodelay !== undefined && typeof o.nodelay !== "boolean") throw new TypeError(`\`nodelay\` must be a boolean, got ${String(o.nodelay)}`);
    this.#burst = burst * 1000;
    this.#delay = (o.nodelay === true ? burst : nonNegativeInteger("delay", o.delay ?? 0)) * 1000;
  }

  /** Decides a request of `cost` units arriving at `now` (see `ServerModel.decide`). */
  decide(now: number, cost = 1): Decision {
    checkCall(now, cost, this.#last);
    if (cost !== 1) throw new RangeError(`\`cost\` must be 1 for nginx limit_req (it counts requests), got ${cost}`);
    // As nginx (ngx_http_limit_req_lookup): drain per whole ms, add this request, clamp at 0 — so a
    // request that finds the bucket drained (≥ 1/rate after the last) has excess 0 and is neither
    // delayed nor refused.
    const ms = Math.floor(now);
    const first = this.#last === -Infinity;
    const drain = first ? 0 : Math.trunc((this.#rate * (ms - this.#last)) / 1000);
    const drained = first ? 0 : Math.max(0, this.#excess - drain);
    const excess = first ? 0 : Math.max(0, this.#excess - drain + 1000);
    const allowed = excess <= this.#burst;
    if (allowed) {
      this.#excess = excess;
      if (first || ms !== this.#last) this.#last = ms;
    }
    const current = allowed ? excess : drained;
    // Refused: the first whole ms at which the drain makes room (rate · ms / 1000 ≥ what is over).
    const over = this.#excess + 1000 - this.#burst;
    const retryAfterMs = allowed ? 0 : Math.max(0, this.#last + Math.ceil((over * 1000) / this.#rate) - now);
    return decision(this.#h, now, {
      allowed,
      delayMs: allowed && excess > this.#delay ? Math.trunc(((excess - this.#delay) * 1000) / this.#rate) : 0,
      retryAfterMs,
      // The policy it states is the sustained rate, `rate` per `interval` (as nginx's `rate=` means
      // it); `remaining` is how many more it accepts at this instant (the burst's room).
      limit: this.#perInterval,
      remaining: Math.floor((this.#burst - current) / 1000),
      resetMs: (current * 1000) / this.#rate,
      windowMs: this.#interval,
    });
  }
}
