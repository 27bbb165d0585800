/**
 * Costs that settle, and concurrency slots, for the throttled fetch: what one attempt reserves
 * (`cost`), what it turned out to use (`settle`), and how long it holds a slot (`maxConcurrent`).
 *
 * An attempt made with any of these options takes a {@link Reservation} (`limiter.reserve(cost)`)
 * instead of a scheduled task. The reservation ends exactly once ({@link AttemptHold}):
 * - with the actual cost from `settle` (refund, or debt when higher), as soon as it is known — or,
 *   when the attempt holds a slot, once the slot ends too (one handle ends both);
 * - as reserved when `settle` gives `undefined`, rejects or throws late, when the attempt failed,
 *   when `settle` is not given, or when a slot is freed by its idle timer;
 * - cancelled (given back whole) only when nothing was sent.
 *
 * A slot (`maxConcurrent`) is held from the grant until the response body is fully read, cancelled or
 * errors — for a response without a body, until its headers — because that is when the server is
 * done with the request: a stream still being read still occupies a connection (and, at an LLM API,
 * a generation). A body nobody touches for `slotTimeout` ms frees its slot (the body stays readable),
 * so a response the caller never reads cannot hold a slot forever (the body's end: `body-end.ts`).
 *
 * @module
 */
import { type Clock, MAX_TIMER_DELAY, type TimerHandle } from "../clock.ts";
import type { Permits, Reservation } from "../limiters/reservation.ts";
import { describeValue, positiveInteger, quietly, requireFunction } from "../validate.ts";
import { isResponse } from "./body.ts";
import { trackBody } from "./body-end.ts";
import { armSlotTimer, clearSlotTimer } from "./slot-timers.ts";
import { HTTP_DEFAULTS } from "./defaults.ts";

export { trackBody };

/**
 * What one attempt reserves: a number of permits, or per dimension of a limiter made with
 * `combine({ requests, tokens })` (a dimension left out reserves 0).
 *
 * @example
 * ```ts
 * const cost: Cost = { requests: 1, tokens: 4000 };
 * ```
 */
export type Cost = Permits;

/**
 * What `settle` is told about the attempt whose response it reads.
 *
 * @example
 * ```ts
 * const settle = (response: Response, { reserved, attempt }: SettleContext) => (attempt > 1 ? undefined : reserved);
 * ```
 */
export interface SettleContext {
  /** The call, as a `Request`. */
  readonly request: Request;
  /** What this attempt reserved. */
  readonly reserved: Cost;
  /** Which attempt got the response (1-based). */
  readonly attempt: number;
}

/**
 * What `settle` returns: the actual cost (now or later), `undefined` to keep it as reserved, or — to
 * read a streamed body without buffering the caller's — the response to hand the caller and a
 * promise of the actual cost.
 *
 * @example
 * ```ts
 * const result: SettleResult = { response: tapped, actual: usagePromise };
 * ```
 */
export type SettleResult =
  | Cost
  | undefined
  | Promise<Cost | undefined>
  | { readonly response: Response; readonly actual: Promise<Cost | undefined> };

/**
 * `settle`'s type: reads the actual cost of an attempt from its response.
 *
 * @example
 * ```ts
 * const settle: SettleFunction = async (r) => ({ tokens: (await r.clone().json()).usage.total_tokens });
 * ```
 */
export type SettleFunction = (response: Response, context: SettleContext) => SettleResult;

/** The resolved cost options. @internal */
export interface ResolvedCosts {
  readonly cost: Cost | ((request: Request) => Cost | Promise<Cost>);
  readonly settle: SettleFunction | undefined;
  readonly maxConcurrent: number | undefined;
  readonly slotTimeout: number;
  /**
   * True when attempts take reservations (`cost` or `settle` given). With `maxConcurrent` alone an
   * attempt stays a scheduled task, lasting until its body ends: a window counted from completion
   * then counts it from there (later than the headers: still safe against a strict server).
   */
  readonly reserve: boolean;
  /** The option the cost came from, for error messages: `cost`, or `permits` (with `settle` alone). */
  readonly named: "cost" | "permits";
}

/**
 * Checks a `cost` option (a function, a positive integer or a record of non-negative integers; the
 * record's names are checked by the limiter at each attempt).
 * @throws {RangeError | TypeError} naming `cost` and the value
 * @example
 * ```ts
 * checkCost({ requests: 1, tokens: 100 });
 * ```
 */
export function checkCost(value: unknown): ResolvedCosts["cost"] {
  if (typeof value === "function") return value as ResolvedCosts["cost"];
  if (typeof value === "number") {
    if (!Number.isInteger(value) || value < 1) throw new RangeError(`\`cost\` must be a positive integer, got ${describeValue(value)}`);
    return value;
  }
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    for (const [name, n] of Object.entries(value)) {
      if (typeof n !== "number" || !Number.isInteger(n) || n < 0) {
        throw new RangeError(`\`cost.${name}\` must be a non-negative integer, got ${describeValue(n)}`);
      }
    }
    return Object.freeze({ ...value }) as Cost;
  }
  throw new TypeError(`\`cost\` must be a positive integer, a record of dimensions or a function, got ${describeValue(value)}`);
}

/**
 * Checks what a `cost` function returned for one call, as the static `cost` is checked.
 * @throws {RangeError | TypeError} naming `cost` and the value
 * @example
 * ```ts
 * checkCostResult(await estimate(request));
 * ```
 */
export function checkCostResult(value: unknown): Cost {
  if (typeof value === "function") {
    throw new TypeError(`\`cost\` must return a positive integer or a record of dimensions, got ${describeValue(value)}`);
  }
  return checkCost(value) as Cost;
}

/**
 * An error the limiter threw about the permits asked, renamed for the option the user gave: the
 * limiter calls its argument `permits`, the user called it `cost` (e.g. a cost above what the limiter
 * can ever grant). Any other error is returned as is.
 * @example
 * ```ts
 * throw asCostError(error, costs.named);
 * ```
 */
export function asCostError(error: unknown, named: "cost" | "permits"): unknown {
  if (named === "permits" || !(error instanceof RangeError || error instanceof TypeError)) return error;
  if (!error.message.startsWith("`permits")) return error;
  const renamed = new (error instanceof RangeError ? RangeError : TypeError)(`\`cost${error.message.slice("`permits".length)}`);
  return renamed;
}

/**
 * Checks `settle`.
 * @example
 * ```ts
 * checkSettle(() => undefined);
 * ```
 */
export function checkSettle(value: unknown): SettleFunction | undefined {
  return value === undefined ? undefined : requireFunction("settle", value as SettleFunction);
}

/** True for `{ response, actual }` (a streamed settle). */
function isStreamed(value: unknown): value is { response: Response; actual: Promise<Cost | undefined> } {
  return typeof value === "object" && value !== null && "actual" in value && "response" in value;
}

/**
 * One attempt's reservation until it ends: when its actual cost is known and (with a slot) its body
 * is done. Ends it once; a later `settle` result is ignored. @internal
 *
 * @example
 * ```ts
 * const hold = new AttemptHold(reservation, clock, { slot: true, slotTimeout: 30_000 });
 * hold.actual(Promise.resolve({ tokens: 900 }));
 * hold.bodyEnded();
 * ```
 */
export class AttemptHold {
  readonly #reservation: Reservation;
  readonly #clock: Clock;
  #slot: boolean;
  readonly #ownSlots: boolean;
  readonly #slotTimeout: number;
  #known = false;
  #value: Cost | undefined = undefined;
  #bodyDone = false;
  #timer: TimerHandle | undefined = undefined;

  /**
   * @param options `slot`: the reservation holds a slot of the fetch's `maxConcurrent` (it ends with
   * the body, see `bodyEnded`); `ownSlots`: the limiter holds concurrency slots of its own (a vendor
   * profile's `maxConcurrent`), which matter only once the cost comes as the body is read
   * ({@link AttemptHold.costFromBody}).
   */
  constructor(reservation: Reservation, clock: Clock, options: { readonly slot: boolean; readonly ownSlots?: boolean; readonly slotTimeout: number }) {
    this.#reservation = reservation;
    this.#clock = clock;
    this.#slot = options.slot;
    this.#ownSlots = options.ownSlots ?? false;
    this.#slotTimeout = options.slotTimeout;
  }

  /**
   * The cost comes only as the caller reads the body (settle handed back a Response of its own: a
   * tap on a stream's usage). With a limiter of its own slots the body's end then ends the
   * reservation — or `slotTimeout` without a read, as reserved: else a stream nobody reads would
   * keep its slot for good, and every later call would wait for it. (A cost known without the
   * caller reading, a JSON body read from a clone, ends it as soon as it is known.)
   */
  costFromBody(): void {
    if (this.#ownSlots) this.#slot = true;
  }

  /** True when the reservation holds a concurrency slot (its body's end matters, see `bodyEnded`). */
  get slot(): boolean {
    return this.#slot;
  }

  /** True once the reservation ended. */
  get ended(): boolean {
    return this.#reservation.settled;
  }

  /** Nothing was sent: everything goes back. */
  cancel(): void {
    this.#clear();
    this.#reservation.cancel();
  }

  /** Ends it now, as reserved (a failed attempt, a slot freed by its timer). */
  release(): void {
    this.#clear();
    this.#reservation.release();
  }

  /** The actual cost, or a promise of it (`undefined`, a rejection: as reserved). */
  actual(value: Cost | undefined | Promise<Cost | undefined>): void {
    if (value instanceof Promise) {
      value.then((v) => this.#learn(v), () => this.#learn(undefined));
    } else this.#learn(value);
  }

  /**
   * The response body is done (read, cancelled or errored), or there is none — or, `idle`, nobody
   * read it for `slotTimeout` ms: then the slot frees now, as reserved unless the cost is known (a
   * cost that needs the body read, a stream's usage, would not come before someone reads it).
   */
  bodyEnded(idle = false): void {
    this.#bodyDone = true;
    if (this.#known || !this.#slot || idle) {
      this.#end();
      return;
    }
    // The body is done but its cost is not known yet: wait for it, at most `slotTimeout` ms.
    if (this.#timer === undefined && !this.ended) this.#timer = armSlotTimer(this.#clock, () => this.release(), this.#slotTimeout);
  }

  #learn(value: Cost | undefined): void {
    this.#known = true;
    this.#value = value;
    if (!this.#slot || this.#bodyDone) this.#end();
  }

  #end(): void {
    if (this.ended) return;
    this.#clear();
    if (!this.#known) {
      if (!this.#slot) return; // no slot: wait for the cost
      this.#reservation.release();
      return;
    }
    try {
      this.#reservation.settle(this.#value);
    } catch {
      // An invalid actual cost (see the README: it counts as reserved).
      this.#reservation.release();
    }
  }

  #clear(): void {
    if (this.#timer !== undefined) clearSlotTimer(this.#clock, this.#timer);
    this.#timer = undefined;
  }
}

/**
 * Runs `settle` for a response and feeds its result to `hold`. Returns the response the caller gets:
 * `settle`'s own for a streamed result, else the one given. A throw from `settle` is the caller's
 * (the reservation counts as reserved). @internal
 *
 * @example
 * ```ts
 * const response = applySettle(settle, raw, { request, reserved, attempt }, hold);
 * ```
 */
export function applySettle(settle: SettleFunction | undefined, response: Response, context: SettleContext, hold: AttemptHold): Response {
  if (settle === undefined) {
    hold.actual(undefined);
    return response;
  }
  let result: SettleResult;
  try {
    result = settle(response, context);
  } catch (error) {
    hold.release();
    throw error;
  }
  if (isStreamed(result)) {
    if (!isResponse(result.response)) {
      // The caller must get a Response: the call fails, the reservation counts as reserved, and
      // the response nobody will read frees its connection.
      Promise.resolve(result.actual).catch(() => {});
      hold.release();
      response.body?.cancel().catch(() => {});
      throw new TypeError(`\`settle\` must return a Response as \`response\`, got ${describeValue(result.response)}`);
    }
    const actual = Promise.resolve(result.actual);
    // A Response of settle's own wraps the body (a tap that reads the usage as the caller reads):
    // its cost comes only as the body is read. The same Response back means the cost is read
    // elsewhere (a JSON body from a clone), without waiting for the caller.
    if (result.response !== response) hold.costFromBody();
    hold.actual(actual);
    return result.response;
  }
  hold.actual(result as Cost | undefined | Promise<Cost | undefined>);
  return response;
}

/**
 * The queue priority of a call: `priority(request)` when given, else the standard `init.priority`
 * ("high" → 1, "low" → -1, "auto" or none → 0).
 * @throws {TypeError | RangeError} when `priority(request)` returns anything but a finite number
 *
 * @example
 * ```ts
 * priorityOf({ priority: "high" }, undefined, undefined); // 1
 * ```
 */
export function priorityOf(
  init: RequestInit | undefined,
  request: (() => Request) | undefined,
  fn: ((request: Request) => number) | undefined,
): number {
  if (fn !== undefined) {
    const p = fn(request!());
    if (typeof p !== "number" || !Number.isFinite(p)) {
      quietly(p);
      throw new TypeError(`\`priority\` must return a finite number, got ${describeValue(p)}`);
    }
    return p;
  }
  const given = (init as { priority?: unknown } | undefined)?.priority;
  return given === "high" ? 1 : given === "low" ? -1 : 0;
}

/**
 * Validates `cost`, `settle`, `maxConcurrent` and `slotTimeout`; undefined when none of the first
 * three is given (attempts are scheduled tasks then, at no extra cost). @internal
 * @throws {RangeError | TypeError} naming the option and the value
 *
 * @example
 * ```ts
 * resolveCosts({ cost: 2, maxConcurrent: 4 }); // { cost: 2, settle: undefined, maxConcurrent: 4, slotTimeout: 30000 }
 * ```
 */
export function resolveCosts(o: {
  readonly permits?: unknown;
  readonly cost?: unknown;
  readonly settle?: unknown;
  readonly maxConcurrent?: unknown;
  readonly slotTimeout?: unknown;
}): ResolvedCosts | undefined {
  if (o.cost !== undefined && o.permits !== undefined) {
    throw new TypeError("`cost` replaces `permits`: give one of them, not both");
  }
  const maxConcurrent = o.maxConcurrent === undefined ? undefined : positiveInteger("maxConcurrent", o.maxConcurrent);
  const slotTimeout = o.slotTimeout === undefined ? HTTP_DEFAULTS.slotTimeout : o.slotTimeout;
  if (typeof slotTimeout !== "number") throw new TypeError(`\`slotTimeout\` must be a number, got ${describeValue(slotTimeout)}`);
  if (!(slotTimeout > 0 && slotTimeout <= MAX_TIMER_DELAY)) {
    throw new RangeError(`\`slotTimeout\` must be a positive number of ms up to ${MAX_TIMER_DELAY}, got ${describeValue(o.slotTimeout)}`);
  }
  if (o.cost === undefined && o.settle === undefined && maxConcurrent === undefined) return undefined;
  const permits = o.permits;
  const cost = o.cost !== undefined ? checkCost(o.cost) : typeof permits === "function"
    ? permits as (request: Request) => number
    : permits === undefined ? HTTP_DEFAULTS.permits : positiveInteger("permits", permits);
  return {
    cost,
    settle: checkSettle(o.settle),
    maxConcurrent,
    slotTimeout,
    reserve: o.cost !== undefined || o.settle !== undefined,
    named: o.cost !== undefined ? "cost" : "permits",
  };
}

/**
 * Schedules `send` as a task that lasts past its response until `end()` — so that a concurrency slot
 * (and a window counted from completion) is held until the body is done. `response` settles with
 * `send`'s outcome, or with the limiter's refusal. @internal
 *
 * @example
 * ```ts
 * const { response, end } = scheduleUntilEnd(limiter, send, { signal });
 * trackBody(await response, end, clock, 30_000);
 * ```
 */
export function scheduleUntilEnd(
  limiter: { schedule<T>(task: () => T | PromiseLike<T>, options?: object): Promise<T> },
  send: () => Promise<Response>,
  options: object,
): { readonly response: Promise<Response>; readonly end: () => void } {
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  let deliver!: (response: Response) => void;
  let fail!: (error: unknown) => void;
  const response = new Promise<Response>((resolve, reject) => {
    deliver = resolve;
    fail = reject;
  });
  limiter.schedule(async () => {
    deliver(await send());
    await ended;
  }, options).catch(fail); // a refusal, an abort while queued, or send's own failure
  return { response, end };
}
