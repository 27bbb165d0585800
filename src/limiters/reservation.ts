/**
 * Reservations that settle: `reserve(permits)` waits like `acquire` and returns a handle; when the
 * real cost is known, `settle(actual)` gives back what was over-reserved or records the rest as debt,
 * `cancel()` gives everything back, and a reservation never settled stays counted in full. The same
 * handle ends a concurrency slot (`release()`), so one primitive serves costs known late (tokens of
 * a completion) and work that holds capacity while it runs.
 *
 * (Not to be confused with the gate's *reserved times* of stopped waiters, `scan.ts`: those are a
 * scheduling rule among waiters; these are grants whose cost is settled later.)
 *
 * A reservation is granted by the gate like any request, with one amount per policy: across a named
 * combination (`combine({ requests, tokens })`) each dimension asks its own amount, waits for its own
 * policies, and all are taken at the same instant — nothing is charged while one dimension waits.
 * Settling adjusts each policy where the grant was counted (`Policy.adjust`): a refund as if the
 * grant had been smaller, debt as a grant made at settle time (it happened, whatever the limit
 * said); then the gate rescans, so a refund lets waiters through sooner and debt holds them back.
 *
 * @module
 */
import type { Gate } from "./gate.ts";
import type { AcquireOptions } from "./limiter.ts";
import type { Policy } from "./policy.ts";
import { amountAt } from "./scan.ts";
import { grantsOnArrival } from "./predict.ts";
import { checkPriority } from "./priority.ts";
import { addInFlight, grantedAtOnce, refused } from "./stats.ts";
import { arrivalOf, PROBE, Waiter, type WaitQueue } from "./waiter.ts";
import { abortReason } from "./signals.ts";
import { MaxWaitExceededError, QueueFullError } from "../errors.ts";
import { checkPermits, describeValue, nonNegativeInteger, nonNegativeOrInfinity, optionalSignal, optionsObject } from "../validate.ts";

/**
 * Options for one `reserve` call: those of `acquire` (`signal`, `maxWait` — predicted as exactly as
 * for `acquire`, see {@link AcquireOptions.maxWait} for the one case a later request moves it —
 * and `priority`, ordering it among the limiter's waiters as it orders `acquire` callers).
 *
 * @example
 * ```ts
 * const r = await limiter.reserve({ requests: 1, tokens: 4000 }, { maxWait: 10_000, priority: 1 });
 * ```
 */
export interface ReserveOptions extends AcquireOptions {}

/**
 * What a reservation asks or settles: a number of permits (of every policy), or — on a combination
 * with named dimensions — permits per dimension (a dimension left out asks 0, or settles as reserved).
 *
 * @example
 * ```ts
 * const cost: Permits = { requests: 1, tokens: 1500 };
 * ```
 */
export type Permits = number | Readonly<Record<string, number>>;

/** @internal a named combination's dimensions: their names, and per policy the index of its dimension. */
export interface Dimensions {
  readonly names: readonly string[];
  readonly of: readonly number[];
}

/** @internal what `reserve` needs of a limiter. */
export interface ReserveContext {
  readonly queue: WaitQueue;
  readonly gate: () => Gate;
  readonly maxWait: number;
  readonly maxQueue: number;
  readonly maxPermits: number;
  readonly dimensions: Dimensions | null;
}

/** One reserve call's request: per-policy amounts (null: `permits` of each) and how it was asked. */
interface Ask {
  readonly context: ReserveContext;
  readonly permits: number;
  readonly amounts: readonly number[] | null;
  readonly asked: Permits;
}

/** A queued reservation: a waiter with its own amount per policy, resolving to its handle. */
class ReserveWaiter extends Waiter {
  readonly #ask: Ask;
  #handle: Reservation | undefined = undefined;

  constructor(ask: Ask) {
    super(ask.permits, ask.context.queue, false);
    this.#ask = ask;
  }

  override amounts(): readonly number[] | null {
    return this.#ask.amounts;
  }

  override granted(now: number): void {
    this.#handle = new Reservation(this.#ask, now, marksOf(this.#ask, 0));
  }

  override result(): unknown {
    return this.#handle;
  }
}

/**
 * A reservation dropped without being settled stops counting as open once collected (its cost stays
 * counted in full): an open one keeps its limiter from being evicted by a `KeyedLimiter`, so that a
 * later settle — debt above all — lands on the limiter that callers of the key still use. Not one
 * that holds concurrency slots: those stay held for good, and it stays in `inFlight` with them
 * (red-team, 2026-11-27: `inFlight` fell to 0 at a collection while the slot stayed taken).
 */
const dropped = new FinalizationRegistry<WaitQueue>((queue) => {
  addInFlight(queue, -1);
});

/** Each policy's mark (see `Policy.mark`), plus `add` times its amount (marks read before a take). */
function marksOf(ask: Ask, add: number): number[] {
  const policies = ask.context.queue.policies;
  return policies.map((p, i) => (p.mark?.() ?? 0) + add * amountAt(ask.amounts, i, ask.permits));
}

/**
 * A granted reservation. Settle it once, when the real cost is known: `settle(actual)`, `cancel()`
 * or `release()` (the first call wins; later ones return false and change nothing). Until then its
 * permits count in full, and its concurrency slots (if any) stay held.
 *
 * @example
 * ```ts
 * import { combine, SmoothLimiter } from "sluice";
 *
 * const openai = combine({
 *   requests: new SmoothLimiter({ limit: 500, interval: 60_000 }),
 *   tokens: new SmoothLimiter({ limit: 30_000, interval: 60_000 }),
 * });
 * const r = await openai.reserve({ requests: 1, tokens: 4000 }); // the most this call may use
 * const completion = await callModel();
 * r.settle({ tokens: completion.usage.total_tokens }); // refund the rest, or record debt
 * ```
 */
export class Reservation {
  /** The time (the limiter clock's ms) at which it was granted. */
  readonly grantedAt: number;
  /** What was reserved, as asked. */
  readonly permits: Permits;
  readonly #ask: Ask;
  readonly #marks: readonly number[];
  #settled = false;

  /** @internal made by the limiter at the grant. */
  constructor(ask: Ask, grantedAt: number, marks: readonly number[]) {
    addInFlight(ask.context.queue, +1); // open: in flight until settled (see `stats().inFlight`)
    if (!ask.context.queue.slots) dropped.register(this, ask.context.queue, this);
    this.#ask = ask;
    this.grantedAt = grantedAt;
    this.permits = ask.asked;
    this.#marks = marks;
  }

  /** True once `settle`, `cancel` or `release` was called. */
  get settled(): boolean {
    return this.#settled;
  }

  /**
   * Settles with the actual cost: a number (every policy), or per dimension on a named combination
   * (a dimension left out settles as reserved). Less than reserved gives the rest back; more is
   * recorded as debt (never clamped) that later requests wait for. Frees concurrency slots. Returns
   * false, changing nothing, when the reservation was already settled — whatever `actual` is.
   * @throws {RangeError | TypeError} when `actual` is not a non-negative integer (or such a record of
   * known dimensions) on a reservation not yet settled; nothing changes then
   */
  settle(actual?: Permits): boolean {
    // The first call wins: a later one, valid or not, returns false (checked before the value).
    if (this.#settled) return false;
    const policies = this.#ask.context.queue.policies;
    const reserved = policies.map((_, i) => amountAt(this.#ask.amounts, i, this.#ask.permits));
    const actuals = actual === undefined ? reserved : this.#actuals(actual, reserved);
    return this.#end(reserved, actuals);
  }

  /** Gives everything back, as if never granted (slots too). False when already settled. */
  cancel(): boolean {
    const policies = this.#ask.context.queue.policies;
    const reserved = policies.map((_, i) => amountAt(this.#ask.amounts, i, this.#ask.permits));
    return this.#end(reserved, reserved.map(() => 0));
  }

  /** Ends it with the cost as reserved: frees its concurrency slots. Same as `settle()`. */
  release(): boolean {
    return this.settle();
  }

  #actuals(actual: Permits, reserved: number[]): number[] {
    if (typeof actual === "number") {
      nonNegativeInteger("actual", actual);
      return reserved.map(() => actual);
    }
    const dims = this.#ask.context.dimensions;
    if (dims === null || typeof actual !== "object" || actual === null) {
      throw new TypeError(
        `\`actual\` must be a non-negative integer${dims === null ? "" : " or a record of dimensions"}, got ${describeValue(actual)}`,
      );
    }
    const given = perDimension("actual", actual, dims, null);
    return reserved.map((n, i) => given[dims.of[i]!] ?? n);
  }

  #end(reserved: readonly number[], actuals: readonly number[]): boolean {
    if (this.#settled) return false;
    this.#settled = true;
    const context = this.#ask.context;
    addInFlight(context.queue, -1);
    dropped.unregister(this);
    const gate = context.gate();
    const now = gate.now();
    const policies = context.queue.policies;
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i]!;
      if (policy.holdsUntilFinish === true) {
        if (reserved[i]! > 0) policy.finish?.(reserved[i]!, now);
        continue;
      }
      const delta = actuals[i]! - reserved[i]!;
      if (delta === 0) continue;
      if (policy.adjust !== undefined) policy.adjust(delta, this.grantedAt, this.#marks[i]!, now);
      else if (delta > 0) policy.take(delta, now, false);
    }
    gate.scan(now); // a refund may let waiters through sooner; debt holds them back
    return true;
  }
}

/**
 * Validates a record of per-dimension amounts: known names, non-negative integers, each at most
 * `max[d]` when given. Returns the amount per dimension index (undefined where left out). Shared
 * with sluice/redis's named dimensions, so both say the same to a caller.
 *
 * @example
 * ```ts
 * perDimension("permits", { tokens: 900 }, { names: ["requests", "tokens"] }, [10, 1000]); // [undefined, 900]
 * ```
 * @internal
 */
export function perDimension(
  name: string,
  record: Readonly<Record<string, unknown>>,
  dims: { readonly names: readonly string[] },
  max: readonly number[] | null,
): Array<number | undefined> {
  const out: Array<number | undefined> = dims.names.map(() => undefined);
  for (const key of Object.keys(record)) {
    const d = dims.names.indexOf(key);
    if (d < 0) {
      throw new TypeError(`\`${name}.${key}\` is not a dimension of this limiter (${dims.names.join(", ")})`);
    }
    const value = nonNegativeInteger(`${name}.${key}`, record[key]);
    if (max !== null && value > max[d]!) {
      throw new RangeError(`\`${name}.${key}\` must be at most ${max[d]} for this limiter (it can never grant more), got ${value}`);
    }
    out[d] = value;
  }
  return out;
}

/** The per-policy amounts of a reservation asked per dimension. */
function amountsOf(context: ReserveContext, asked: Readonly<Record<string, unknown>>): number[] {
  const dims = context.dimensions!;
  const policies = context.queue.policies;
  const max = dims.names.map((_, d) => Math.min(...policies.filter((_, i) => dims.of[i] === d).map((p) => p.maxPermits)));
  const given = perDimension("permits", asked, dims, max);
  return policies.map((_, i) => given[dims.of[i]!] ?? 0);
}

/**
 * Reserves `permits` on a limiter: the grant rule of `acquire`, resolving to a {@link Reservation}.
 * @internal called by `GatedLimiter.reserve`
 */
export function reserveOn(context: ReserveContext, permits: unknown, options: ReserveOptions | undefined): Promise<Reservation> {
  let ask: Ask;
  if (typeof permits === "number") {
    checkPermits(permits, context.maxPermits);
    ask = { context, permits, amounts: null, asked: permits };
  } else if (context.dimensions !== null && typeof permits === "object" && permits !== null && !Array.isArray(permits)) {
    const amounts = amountsOf(context, permits as Readonly<Record<string, unknown>>);
    // `permits` of a per-policy request only marks "something is asked" for predictions.
    ask = { context, permits: Math.max(1, ...amounts), amounts, asked: Object.freeze({ ...permits }) as Permits };
  } else {
    throw new TypeError(
      `\`permits\` must be a positive integer${context.dimensions === null ? "" : " or a record of dimensions"}, got ${describeValue(permits)}`,
    );
  }
  const opts = optionsObject("options", options);
  const signal = optionalSignal("signal", opts.signal);
  const maxWait = opts.maxWait === undefined ? context.maxWait : nonNegativeOrInfinity("maxWait", opts.maxWait);
  const priority = opts.priority === undefined ? 0 : checkPriority(opts.priority);
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  const gate = context.gate();
  const now = gate.now();
  gate.serveOverdue(now);
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  const marks = marksOf(ask, 1);
  const queue = context.queue;
  if (gate.tryTakeNow(queue, ask.permits, now, false, ask.amounts)) {
    grantedAtOnce(queue, ask.permits);
    return Promise.resolve(new Reservation(ask, now, marks));
  }
  if (maxWait !== Infinity) {
    const wait = gate.predict(queue, ask.permits, now, ask.amounts, priority, maxWait);
    if (wait > maxWait) {
      if ((opts as { [PROBE]?: unknown })[PROBE] !== true) refused(queue, ask.permits, "maxWait", wait);
      return Promise.reject(new MaxWaitExceededError(wait, maxWait));
    }
  }
  if (queue.size >= context.maxQueue && !grantsOnArrival(gate, queue, ask.permits, now, ask.amounts, priority)) {
    refused(queue, ask.permits, "maxQueue");
    return Promise.reject(new QueueFullError(context.maxQueue));
  }
  return gate.enqueueWaiter(new ReserveWaiter(ask), now, signal, priority, arrivalOf(opts)) as unknown as Promise<Reservation>;
}
