/**
 * Reservations that settle, across the fleet: the handle `RedisLimiter.reserve` resolves to. It has
 * the in-memory `Reservation`'s semantics — `settle(actual)` gives back what was over-reserved or
 * records debt (never clamped), `cancel()` gives everything back, `release()` settles as reserved,
 * the first call wins, a reservation never settled counts in full — applied by one script call in
 * Redis (sent with the limiter's cancels of that tick).
 *
 * Idempotent by reservation id: Redis marks the reservation's record settled, so a settle resent by
 * the client after a reconnect applies once, and a cancel (an ambiguous timeout's) and a settle of
 * one reservation apply the first that arrives. The record is kept `settleTtl` past the grant; a
 * settle arriving later changes nothing, and the reservation stays counted as reserved.
 *
 * @module
 */
import type { Permits } from "../../limiters/reservation.ts";
import { describeValue, nonNegativeInteger } from "../../validate.ts";
import type { Amounts } from "./calls.ts";
import { actualsOf, isRecord, type RedisDimensions } from "./dimensions.ts";
import type { Reply } from "./store.ts";

const APPLIED: Promise<boolean> = Promise.resolve(true);

/**
 * A reservation's shape on a named combination: its dimensions and what it reserved of each policy
 * (a number asked of a named combination: that number of each). @internal
 */
export interface Shape {
  readonly dimensions: RedisDimensions;
  readonly amounts: readonly number[];
}

/**
 * A reservation granted by a Redis limiter (`reserve`). Settle it once, when the real cost is known:
 * `settle(actual)`, `cancel()` or `release()` — the first call wins; later ones return false and
 * change nothing. Until then (or until `settleTtl` after its grant) its permits count in full across
 * the fleet. On a named combination (`combineRedis({ requests, tokens })`) it settles per dimension.
 *
 * @example
 * ```ts
 * import { combineRedis, RedisSmoothLimiter } from "sluice/redis";
 *
 * const llm = combineRedis({
 *   requests: new RedisSmoothLimiter({ store, key: "rpm", limit: 500, interval: 60_000 }),
 *   tokens: new RedisSmoothLimiter({ store, key: "tpm", limit: 30_000, interval: 60_000 }),
 * });
 * const r = await llm.reserve({ requests: 1, tokens: 4000 }); // the most this call may use
 * const completion = await callModel();
 * r.settle({ tokens: completion.usage.total_tokens }); // refund the rest across the fleet, or record debt
 * ```
 */
export class RedisReservation {
  /** The local clock's time (ms) at which it was granted. */
  readonly grantedAt: number;
  /** What was reserved, as asked: a number, or per dimension on a named combination. */
  readonly permits: Permits;
  /**
   * The reservation's id in Redis (`<call>/<i>`), or `undefined` when the failure policy granted it
   * (Redis was unavailable): settling it then changes nothing in Redis.
   */
  readonly id: string | undefined;
  readonly #send: (id: string, actual: Amounts) => Promise<Reply | undefined>;
  readonly #shape: Shape | null;
  #settled = false;
  #applied: Promise<boolean> | undefined = undefined;

  /**
   * @internal made by the limiter at the grant; `send` sends a settle of reservation `id`; `shape`
   * for a reservation asked per dimension (null: `permits` of every policy).
   */
  constructor(
    send: (id: string, actual: Amounts) => Promise<Reply | undefined>,
    id: string | undefined,
    permits: Permits,
    grantedAt: number,
    shape: Shape | null = null,
  ) {
    this.#send = send;
    this.id = id;
    this.permits = permits;
    this.grantedAt = grantedAt;
    this.#shape = shape;
  }

  /** True once `settle`, `cancel` or `release` was called. */
  get settled(): boolean {
    return this.#settled;
  }

  /**
   * After the first settle, cancel or release: resolves `true` once Redis applied it (or there was
   * nothing to change: a release, a settle at the reserved amount), `false` when it was not applied
   * (its record expired after `settleTtl`, Redis was unreachable — reported to `onError` —, or the
   * failure policy granted it). Never rejects. `undefined` before.
   */
  get applied(): Promise<boolean> | undefined {
    return this.#applied;
  }

  /**
   * Settles with the actual cost — a number (of every dimension), or per dimension on a named
   * combination (a dimension left out settles as reserved): less than reserved gives the rest back
   * to the fleet, more is recorded as debt (never clamped) that later requests wait for. All
   * dimensions change in one atomic script call. Returns false, changing nothing, when the
   * reservation was already settled.
   * @throws {RangeError | TypeError} when `actual` is not a non-negative integer (or such a record of
   * known dimensions); nothing changes then
   */
  settle(actual?: Permits): boolean {
    if (actual === undefined) return this.#end(null);
    if (typeof actual === "number") return this.#end(nonNegativeInteger("actual", actual));
    const shape = this.#shape;
    if (shape === null || !isRecord(actual)) {
      throw new TypeError(
        `\`actual\` must be a non-negative integer${shape === null ? "" : " or a record of dimensions"}, got ${describeValue(actual)}`,
      );
    }
    return this.#end(actualsOf(shape.dimensions, actual, shape.amounts));
  }

  /** Gives everything back, as if never granted (a settle at 0). False when already settled. */
  cancel(): boolean {
    return this.#end(0);
  }

  /** Ends it with the cost as reserved. Same as `settle()`. */
  release(): boolean {
    return this.#end(null);
  }

  /** `actual`: a number of every policy, one per policy, or null (as reserved). */
  #end(actual: Amounts | null): boolean {
    if (this.#settled) return false;
    this.#settled = true;
    if (this.id === undefined) this.#applied = Promise.resolve(false);
    // As reserved changes nothing in Redis: no call (the record expires on its own).
    else if (actual === null || this.#asReserved(actual)) this.#applied = APPLIED;
    else this.#applied = this.#send(this.id, actual).then((reply) => reply?.code === 1);
    return true;
  }

  #asReserved(actual: Amounts): boolean {
    const reserved = this.#shape?.amounts ?? null;
    if (reserved === null) return actual === this.permits;
    return reserved.every((n, i) => n === (typeof actual === "number" ? actual : actual[i]));
  }
}
