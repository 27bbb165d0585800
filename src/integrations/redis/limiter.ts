/**
 * `RedisLimiter`: the public face of a Redis limiter — a `Limiter` whose decisions are made by one
 * script call over all its keys and whose waiting happens in this process, with ONE timer per
 * limiter. It validates each call and hands it to its state object, {@link RedisQueue} (`queue.ts`:
 * batching, grant times, aborts, pauses, the failure policy).
 *
 * When Redis is unavailable (timeout, connection, transient error) the failure policy decides:
 * `closed` rejects with `RedisUnavailableError`, `open` grants, `local` hands the request to an
 * in-process limiter holding a share of the rate.
 *
 * @module
 */
import { QueueFullError } from "../../errors.ts";
import { abortReason } from "../../limiters/gate.ts";
import { READS_SIGNAL_LIKE } from "../../limiters/signals.ts";
import { Unstarted } from "../../limiters/settle.ts";
import type { AcquireOptions, GatedLimiter, Limiter, ScheduleOptions } from "../../limiters/limiter.ts";
import type { Permits, Reservation, ReserveOptions } from "../../limiters/reservation.ts";
import {
  checkPermits,
  describeValue,
  nonNegativeFinite,
  nonNegativeOrInfinity,
  optionalSignal,
  optionsObject,
  requireFunction,
} from "../../validate.ts";
import { RedisUnavailableError } from "./errors.ts";
import type { Amounts, PolicySpec } from "./calls.ts";
import { amountsOf, isRecord, type RedisDimensions } from "./dimensions.ts";
import { CODE } from "./scripts.ts";
import { checkFailure, type FailurePolicy, type Reply, type RedisStore } from "./store.ts";
import { parseBatchReply } from "./client.ts";
import { Probe } from "./waiter.ts";
import { RedisQueue } from "./queue.ts";
import type { RedisReservation } from "./reservation.ts";

/**
 * The longest interval, pause and time between two permits the scripts take: 1e12 ms (about 31
 * years). Times are whole µs in Lua doubles, exact up to 2^53 µs (285 years of epoch time), and key
 * expiries are whole ms: longer spans would reach Redis as `1e+…` and fail every call. @internal
 */
export const MAX_SPAN_MS = 1e12;

export type { PolicySpec } from "./calls.ts";

/** Options every Redis limiter accepts. */
export interface RedisLimiterOptions {
  /** Default `maxWait` of each call in ms; decided by the script, nothing is taken when exceeded. @default Infinity */
  maxWait?: number;
  /** Local waiters (reserving or waiting) allowed before `QueueFullError`. @default Infinity */
  maxQueue?: number;
  /** Overrides the store's failure policy for this limiter. @default the store's */
  failure?: FailurePolicy;
}

/**
 * Base of the Redis limiters: a set of policy specs evaluated atomically by the scripts, and the
 * local queue and timer. Create instances with {@link RedisSmoothLimiter}, {@link RedisWindowLimiter}
 * or {@link combineRedis}.
 *
 * @example
 * ```ts
 * import { RedisWindowLimiter, RedisLimiter } from "sluice/redis";
 * new RedisWindowLimiter({ store, key: "api", limit: 10, interval: 1000 }) instanceof RedisLimiter; // true
 * ```
 */
export abstract class RedisLimiter implements Limiter {
  static {
    // Its queue reads only `aborted`, `reason` and the "abort" event of a signal (limiters/signals.ts).
    Object.defineProperty(this.prototype, READS_SIGNAL_LIKE, { value: true });
  }
  /** The store (client, family, policies) this limiter uses. */
  readonly store: RedisStore;
  /** The policies every decision covers, in key order. @internal */
  readonly specs: readonly PolicySpec[];
  /** Its local state: batchers, waiters, timer, pause. */
  readonly #queue: RedisQueue;
  readonly #maxWait: number;
  readonly #maxQueue: number;
  readonly #maxPermits: number;
  readonly #failure: FailurePolicy;
  readonly #locals = new Map<number, GatedLimiter>();

  /** Binds the policies to a store; subclasses choose the policies (and a named combination its dimensions). */
  protected constructor(
    store: RedisStore,
    specs: readonly PolicySpec[],
    options: RedisLimiterOptions,
    dimensions: RedisDimensions | null = null,
  ) {
    this.store = store;
    this.specs = specs;
    this.#maxWait = nonNegativeOrInfinity("maxWait", options.maxWait ?? Infinity);
    this.#maxQueue = nonNegativeOrInfinity("maxQueue", options.maxQueue ?? Infinity);
    // A window holds at most its limit; a smooth key's debt must stay within the scripts' span (a
    // larger ask would push every later grant past what Redis can hold and break the key for the fleet).
    this.#maxPermits = Math.min(...specs.map((s) => (s.kind === "w" ? s.limit : Math.floor((MAX_SPAN_MS * s.limit) / s.interval))));
    this.#failure = options.failure === undefined ? store.failure : checkFailure(options.failure);
    this.#queue = new RedisQueue(store, specs, this.#failure, () => this.fallbackLimiter(), dimensions);
  }

  /** Every Redis key this limiter's decisions touch (besides per-reservation records). */
  get keys(): readonly string[] {
    return this.#queue.calls.policyKeys;
  }

  /** The names of its dimensions (a named combination, `combineRedis({ … })`), or null. */
  get dimensionNames(): readonly string[] | null {
    return this.#queue.dimensions?.names ?? null;
  }

  /** How many callers wait on this limiter in this process (reserving or holding a reservation). */
  get queued(): number {
    return this.#queue.size;
  }

  /** How many reserve calls of this limiter await a reply. */
  get inFlight(): number {
    return this.#queue.reserving;
  }

  /** True while a timer is armed (only while waiters hold reservations). */
  get hasTimer(): boolean {
    return this.#queue.grants.armed;
  }

  /**
   * The in-process limiter used while Redis is unavailable under a `local` failure policy (built on
   * first use), or `undefined` for other policies. @internal
   */
  fallbackLimiter(): Limiter | undefined {
    const failure = this.#failure;
    if (typeof failure !== "object") return undefined;
    if ("fallback" in failure) return failure.fallback;
    return this.localFallback(failure.local);
  }

  /** The in-process equivalent holding `share` of every rate, built once per share. @internal */
  localFallback(share: number): GatedLimiter {
    let local = this.#locals.get(share);
    if (local === undefined) this.#locals.set(share, (local = this.buildFallback(share)));
    return local;
  }

  /** Builds the in-process equivalent holding `share` of every rate. @internal */
  protected abstract buildFallback(share: number): GatedLimiter;

  /** Resolves when `permits` are granted across the fleet; see {@link Limiter.acquire}. An abort cancels the reservation in Redis, so the permits go back to every process. */
  acquire(permits: number = 1, options?: AcquireOptions): Promise<void> {
    return this.#request(permits, options, false) as Promise<void>;
  }

  /**
   * Reserves `permits` across the fleet when the real cost is only known later: waits exactly like
   * `acquire` (same queue, `maxWait`, abort, failure policy) and resolves to a
   * {@link RedisReservation} to settle with the actual cost — the rest goes back to the whole fleet,
   * or the excess is recorded as debt. Unsettled, it counts in full; its record waits `settleTtl`
   * (store option, default 10 minutes) for the settle, then goes.
   *
   * On a named combination (`combineRedis({ requests, tokens })`), `permits` may give each dimension
   * its own amount (a dimension left out asks 0 and takes no part): every dimension is taken at the
   * same instant in one script call, or none is; the handle settles per dimension, atomically too.
   *
   * @example
   * ```ts
   * const r = await limiter.reserve(4000, { maxWait: 10_000 });
   * r.settle(await work()); // what it used
   * const q = await llm.reserve({ requests: 1, tokens: 900 }); // llm = combineRedis({ requests, tokens })
   * q.settle({ tokens: 640 });
   * ```
   */
  reserve(permits: Permits = 1, options?: ReserveOptions): Promise<RedisReservation & Reservation> {
    // Typed as the core's `Reservation` too: `Limiter.reserve` names that class, whose public members
    // the Redis handle has one for one.
    const dims = this.#queue.dimensions;
    if (dims === null || !isRecord(permits)) {
      if (typeof permits !== "number") {
        throw new TypeError(
          `\`permits\` must be a positive integer${dims === null ? "" : " or a record of dimensions"}, got ${describeValue(permits)}`,
        );
      }
      return this.#request(permits, options, true) as Promise<RedisReservation & Reservation>;
    }
    const amounts = amountsOf(dims, permits);
    // `permits` of a per-dimension request only sizes it for the local queue and the failure policy.
    const asked = Object.freeze({ ...permits }) as Permits;
    return this.#request(Math.max(1, ...amounts), options, true, asked, amounts) as Promise<RedisReservation & Reservation>;
  }

  /**
   * `acquire` (resolving to nothing, or with `withId` to the granted reservation's id) or `reserve`
   * (`settles`: to a handle); `amounts` per policy when asked per dimension.
   */
  #request(
    permits: unknown,
    options: AcquireOptions | undefined,
    settles: boolean,
    asked?: Permits,
    amounts: readonly number[] | null = null,
    withId = false,
  ): Promise<unknown> {
    if (amounts === null) this.#checkPermits(permits);
    const opts = optionsObject("options", options);
    const signal = optionalSignal("signal", opts.signal);
    const maxWait = opts.maxWait === undefined ? this.#maxWait : nonNegativeOrInfinity("maxWait", opts.maxWait);
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.queued >= this.#maxQueue) return Promise.reject(new QueueFullError(this.#maxQueue));
    return this.#queue.request(permits as number, maxWait, signal, settles, asked ?? (permits as number), amounts, withId);
  }

  /**
   * Redis decides asynchronously, so this synchronous form never takes anything: it returns a hint
   * (≥ 1 ms) of when capacity may be free, from what this process last learned. Use
   * {@link RedisLimiter.tryAcquireAsync} for an exact, atomic try.
   */
  tryAcquire(permits: number = 1): number {
    this.#checkPermits(permits);
    return Math.max(1, Math.ceil(this.#queue.hintAt - this.#queue.clock.now()));
  }

  /**
   * Takes `permits` only if the whole fleet's budget allows it right now: resolves `0` (taken) or
   * the ms until it could be granted (nothing taken). One script call; the failure policy applies
   * when Redis is unavailable (`open` resolves 0, `local` asks the fallback's `tryAcquire`).
   *
   * @example
   * ```ts
   * const wait = await limiter.tryAcquireAsync();
   * if (wait > 0) return respondBusy(wait);
   * ```
   */
  async tryAcquireAsync(permits: number = 1): Promise<number> {
    this.#checkPermits(permits);
    const queue = this.#queue;
    // This process paused the limiter and the pause is not over: nothing is granted before it ends,
    // whatever Redis would answer a probe that overtook the pause (a NOSCRIPT resend reorders them).
    const paused = queue.pausedUntil - queue.clock.now();
    if (paused > 0) return Math.ceil(paused);
    if (!this.store.isDown()) {
      try {
        const probe = new Probe(permits);
        const replied = new Promise<Reply>((resolve, reject) => {
          probe.resolve = resolve;
          probe.reject = reject;
        });
        queue.batch.enqueue(probe, 0);
        const reply = await replied;
        if (reply.code === CODE.ok || reply.code === CODE.replay) {
          if (reply.delay === 0) return 0;
        }
        const wait = Math.max(1, Math.ceil(reply.delay / 1000));
        queue.hint(wait);
        return wait;
      } catch (error) {
        if (!(error instanceof RedisUnavailableError)) throw error; // misconfiguration is never failed open
        this.store.report("reserve", error);
        return queue.tryUnavailable(permits, error);
      }
    }
    return queue.tryUnavailable(permits, new RedisUnavailableError("reserve", "recent failure"));
  }

  /**
   * Runs `task` once permits are granted across the fleet; see {@link Limiter.schedule}. A task that
   * finds, as it starts, that its caller has left (the throttled fetch and `sluice/undici` reject
   * with an internal `Unstarted`: aborted between the grant and the send) gives its reservation
   * back to the whole fleet, as the in-memory limiters give back theirs: nothing was sent.
   */
  schedule<T>(task: () => T | PromiseLike<T>, options?: ScheduleOptions): Promise<T> {
    requireFunction("task", task);
    const permits = options?.permits ?? 1;
    return (this.#request(permits, options, false, undefined, null, true) as Promise<string>).then((id) => {
      const giveBack = (error: unknown): never => {
        // '' = granted by the failure policy, not by Redis: nothing to give back there.
        if (error instanceof Unstarted && id !== "") void this.#queue.cancel(id);
        throw error;
      };
      let result: T | PromiseLike<T>;
      try {
        result = task();
      } catch (error) {
        return giveBack(error);
      }
      return Promise.resolve(result).then(undefined, giveBack);
    });
  }

  /**
   * Grants nothing on any of this limiter's keys for `ms`, across the whole fleet: new reservations
   * from every process start after the pause. This process's queued waiters keep their order and
   * are rescheduled after it at the limiter's rate; reservations other processes already hold keep
   * their times.
   */
  pause(ms: number): void {
    nonNegativeFinite("ms", ms);
    if (ms > MAX_SPAN_MS) throw new RangeError(`\`ms\` must be at most 1e12 (about 31 years) in Redis, got ${ms}`);
    if (ms === 0) return;
    void this.#queue.pause(ms);
  }

  /**
   * @internal Pauses this limiter for `ms` (validated, > 0) and resolves once Redis answered:
   * `sent` when the pause is already on its way (a combination's members paused), else sent here.
   */
  pauseAnswered(ms: number, sent?: Promise<unknown>): Promise<unknown> {
    return this.#queue.pause(ms, sent);
  }

  /** @internal one reserve script call, bypassing the local queue (tests, benchmarks). */
  reserveOnce(batch: string, permits: Amounts, maxWait: number = Infinity): Promise<Reply> {
    return this.reserveBatch(batch, [permits], [maxWait]).then((replies) => replies[0]!);
  }

  /**
   * @internal one reserve script call deciding several requests in order, bypassing the local queue
   * (tests, benchmarks); the i-th request (from 1) is the reservation `<batch>/<i>`.
   */
  reserveBatch(
    batch: string,
    permits: readonly Amounts[],
    maxWaits: readonly number[],
    settles?: readonly boolean[],
  ): Promise<Reply[]> {
    const calls = this.#queue.calls;
    return this.store.call("reserve", calls.reserveKeys(batch), calls.reserveArgs(batch, permits, maxWaits, settles), (reply) =>
      parseBatchReply(reply, permits.length));
  }

  /** @internal one cancel script call settling `ids` with `actuals` (undefined: a cancel), in order (tests). */
  settleBatch(ids: readonly string[], actuals: readonly (Amounts | undefined)[]): Promise<Reply[]> {
    const { keys, args } = this.#queue.calls.cancelCall(ids, actuals);
    return this.store.call("cancel", keys, args, (reply) => parseBatchReply(reply, ids.length));
  }

  /** @internal one cancel script call (tests): reservation `<batch>/<i>`, or a bare `batch` for `<batch>/1`. */
  cancelOnce(id: string): Promise<Reply> {
    return this.cancelBatch([id]).then((replies) => replies[0]!);
  }

  /** @internal one cancel script call giving back `ids` in order, bypassing the local queue (tests). */
  cancelBatch(ids: readonly string[]): Promise<Reply[]> {
    const { keys, args } = this.#queue.calls.cancelCall(ids);
    return this.store.call("cancel", keys, args, (reply) => parseBatchReply(reply, ids.length));
  }

  /** @internal one pause script call (tests); `ms` may carry µs fractions. */
  pauseOnce(ms: number): Promise<Reply> {
    const calls = this.#queue.calls;
    return this.store.call("pause", calls.pauseKeys(), calls.pauseArgs(ms));
  }

  #checkPermits(permits: unknown): asserts permits is number {
    checkPermits(permits, this.#maxPermits);
  }
}
