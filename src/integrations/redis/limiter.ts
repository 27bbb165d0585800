/**
 * The in-process half of a Redis limiter: a `Limiter` whose decisions are made by one script call
 * and whose waiting happens here, with ONE timer per limiter.
 *
 * Flow of `acquire(n)`: the request is queued with the limiter's batcher (`batch.ts`), which sends
 * it one microtask later in one `reserve` call with every request made meanwhile, in arrival order
 * (so one connection keeps this limiter's requests FIFO on the server); the call names it
 * `<call id>/<i>`. Each reply's delay is turned into a local grant time `receipt + delay` — never
 * earlier than the server's grant, since the reply left the server after it decided. Waiters sit in
 * a heap ordered by (grant time, arrival); one timer is armed for the head and none when nothing
 * waits. A waiter aborted before its grant is rejected at once and its reservation cancelled, so
 * the permits go back to the whole fleet.
 *
 * When Redis is unavailable (timeout, connection, transient error) the failure policy decides:
 * `closed` rejects with `RedisUnavailableError`, `open` grants, `local` hands the request to an
 * in-process limiter holding a share of the rate. A reserve that timed out may still execute later;
 * its cancel is sent right behind it and a tombstone voids it if it arrives after the cancel, so a
 * timeout never leaks permits for long nor takes them twice. Waiters that already hold a reservation
 * keep waiting through an outage — their grant time is already decided.
 *
 * @module
 */
import type { Clock } from "../../clock.ts";
import { MaxWaitExceededError, QueueFullError } from "../../errors.ts";
import { abortReason } from "../../limiters/gate.ts";
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
import { RedisCommandError, RedisUnavailableError } from "./errors.ts";
import { type PolicySpec, PolicyCalls } from "./calls.ts";
import { acquireUnavailable, tryUnavailable } from "./fallback.ts";
import { GrantTimer } from "./grants.ts";
import { CODE } from "./scripts.ts";
import type { FailurePolicy, Reply, RedisStore } from "./store.ts";
import { type BatchHandler, ReserveBatcher } from "./batch.ts";
import { CancelBatcher } from "./cancels.ts";
import { parseBatchReply } from "./client.ts";
import { Probe, RESOLVED, Waiter } from "./waiter.ts";
import { RedisReservation } from "./reservation.ts";

/** The id of a waiter whose reserve is queued here, not yet sent (non-empty: "" means between two reservations). */
const QUEUED = "queued";

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
  /** The store (client, family, policies) this limiter uses. */
  readonly store: RedisStore;
  /** The policies every decision covers, in key order. @internal */
  readonly specs: readonly PolicySpec[];
  readonly #clock: Clock;
  readonly #calls: PolicyCalls;
  readonly #batch: ReserveBatcher<Waiter | Probe>;
  readonly #cancels: CancelBatcher;
  readonly #maxWait: number;
  readonly #maxQueue: number;
  readonly #maxPermits: number;
  readonly #failure: FailurePolicy;
  readonly #locals = new Map<number, GatedLimiter>();
  readonly #grants: GrantTimer;
  #reserving = 0;
  /** Local pause: waiters whose reserve was sent before `#pausedSince` and granted before `#pausedUntil` re-reserve. */
  #pausedSince = -Infinity;
  #pausedUntil = -Infinity;
  /** Settles when the latest pause (and the cancels it caused) has been answered. */
  #pauseSettled: Promise<unknown> = RESOLVED;
  /** Latest local time at which something is known to be granted (for the tryAcquire hint). */
  #hintAt = -Infinity;

  /** Binds the policies to a store; subclasses choose the policies. */
  protected constructor(store: RedisStore, specs: readonly PolicySpec[], options: RedisLimiterOptions) {
    this.store = store;
    this.specs = specs;
    this.#clock = store.clock;
    this.#calls = new PolicyCalls(store, specs);
    this.#grants = new GrantTimer(this.#clock, (waiters) => {
      for (const waiter of waiters) this.#settle(waiter, true);
    });
    this.#batch = new ReserveBatcher<Waiter | Probe>(this.#calls, this.#batchHandler);
    this.#cancels = new CancelBatcher(this.#calls);
    this.#maxWait = nonNegativeOrInfinity("maxWait", options.maxWait ?? Infinity);
    this.#maxQueue = nonNegativeOrInfinity("maxQueue", options.maxQueue ?? Infinity);
    this.#maxPermits = Math.min(...specs.map((s) => (s.kind === "w" ? s.limit : Infinity)));
    this.#failure = options.failure ?? store.failure;
  }

  /** Every Redis key this limiter's decisions touch (besides per-reservation records). */
  get keys(): readonly string[] {
    return this.#calls.policyKeys;
  }

  /** How many callers wait on this limiter in this process (reserving or holding a reservation). */
  get queued(): number {
    return this.#reserving + this.#grants.size;
  }

  /** How many reserve calls of this limiter await a reply. */
  get inFlight(): number {
    return this.#reserving;
  }

  /** True while a timer is armed (only while waiters hold reservations). */
  get hasTimer(): boolean {
    return this.#grants.armed;
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
   * (store option, default 10 minutes) for the settle, then goes. A number of permits of every key
   * (no named dimensions on Redis).
   *
   * @example
   * ```ts
   * const r = await limiter.reserve(4000, { maxWait: 10_000 });
   * const used = await work();
   * r.settle(used);
   * ```
   */
  reserve(permits: Permits = 1, options?: ReserveOptions): Promise<RedisReservation & Reservation> {
    // Typed as the core's `Reservation` too: `Limiter.reserve` names that class, whose public members
    // the Redis handle has one for one (a record of dimensions is refused by both alike).
    return this.#request(permits, options, true) as Promise<RedisReservation & Reservation>;
  }

  /** A reservation handle for `id` ('' when the failure policy granted it), granted now. */
  #handle(id: string, permits: number): RedisReservation {
    return new RedisReservation(this.#sendSettle, id === "" ? undefined : id, permits, this.#clock.now());
  }

  readonly #sendSettle = (id: string, actual: number): Promise<Reply | undefined> => this.#cancels.settle(id, actual);

  /** `acquire` (resolving to nothing) or `reserve` (`settles`: to a handle). */
  #request(permits: unknown, options: AcquireOptions | undefined, settles: boolean): Promise<unknown> {
    this.#checkPermits(permits);
    const opts = optionsObject("options", options);
    const signal = optionalSignal("signal", opts.signal);
    const maxWait = opts.maxWait === undefined ? this.#maxWait : nonNegativeOrInfinity("maxWait", opts.maxWait);
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.queued >= this.#maxQueue) return Promise.reject(new QueueFullError(this.#maxQueue));
    if (this.store.isDown()) {
      const granted = this.#unavailable(permits, maxWait, signal, new RedisUnavailableError("reserve", "recent failure"));
      return settles ? granted.then(() => this.#handle("", permits)) : granted;
    }
    const waiter = new Waiter(permits, maxWait, signal, settles);
    const promise = new Promise<unknown>((resolve, reject) => {
      // the id read at the grant: the one Redis granted ('' when the failure policy did)
      waiter.resolve = settles ? () => resolve(this.#handle(waiter.id, permits)) : () => resolve(undefined);
      waiter.reject = reject;
    });
    if (signal !== undefined) {
      waiter.onAbort = () => this.#abort(waiter);
      signal.addEventListener("abort", waiter.onAbort, { once: true });
    }
    this.#reserve(waiter);
    return promise;
  }

  /**
   * Redis decides asynchronously, so this synchronous form never takes anything: it returns a hint
   * (≥ 1 ms) of when capacity may be free, from what this process last learned. Use
   * {@link RedisLimiter.tryAcquireAsync} for an exact, atomic try.
   */
  tryAcquire(permits: number = 1): number {
    this.#checkPermits(permits);
    return Math.max(1, Math.ceil(this.#hintAt - this.#clock.now()));
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
    if (!this.store.isDown()) {
      try {
        const probe = new Probe(permits);
        const replied = new Promise<Reply>((resolve, reject) => {
          probe.resolve = resolve;
          probe.reject = reject;
        });
        this.#batch.enqueue(probe, 0);
        const reply = await replied;
        if (reply.code === CODE.ok || reply.code === CODE.replay) {
          if (reply.delay === 0) return 0;
        }
        const wait = Math.max(1, Math.ceil(reply.delay / 1000));
        this.#hint(wait);
        return wait;
      } catch (error) {
        if (!(error instanceof RedisUnavailableError)) throw error; // misconfiguration is never failed open
        this.store.report("reserve", error);
        return this.#tryUnavailable(permits, error);
      }
    }
    return this.#tryUnavailable(permits, new RedisUnavailableError("reserve", "recent failure"));
  }

  /** Runs `task` once permits are granted across the fleet; see {@link Limiter.schedule}. */
  schedule<T>(task: () => T | PromiseLike<T>, options?: ScheduleOptions): Promise<T> {
    requireFunction("task", task);
    const permits = options?.permits ?? 1;
    return this.acquire(permits, options).then(() => task());
  }

  /**
   * Grants nothing on any of this limiter's keys for `ms`, across the whole fleet: new reservations
   * from every process start after the pause. This process's queued waiters keep their order and
   * are rescheduled after it at the limiter's rate; reservations other processes already hold keep
   * their times.
   */
  pause(ms: number): void {
    nonNegativeFinite("ms", ms);
    if (ms === 0) return;
    const now = this.#clock.now();
    this.#pausedSince = now;
    if (now + ms > this.#pausedUntil) this.#pausedUntil = now + ms;
    this.#hint(ms);
    let args: string[];
    try {
      args = this.#pauseArgs(ms);
    } catch (error) {
      this.store.report("pause", new RedisCommandError("pause", (error as Error).message, { cause: error }));
      return;
    }
    const paused = this.store.call("pause", this.#calls.pauseKeys(), args).catch((error) => this.store.report("pause", error));
    // Waiters due before the pause ends give their slots back (newest first, so the freed suffix is
    // reclaimed whole) and queue again behind the pause, in order. The new reserves wait for the pause
    // and the cancels to be answered: a NOSCRIPT resend must not let them overtake.
    const due = this.#grants.items().filter((w) => w.grantAt < this.#pausedUntil);
    due.sort((a, b) => a.grantAt - b.grantAt || a.seq - b.seq);
    const cancels: Promise<unknown>[] = [paused];
    for (let i = due.length - 1; i >= 0; i--) {
      const waiter = due[i]!;
      this.#grants.remove(waiter);
      cancels.push(this.#cancel(waiter.id));
    }
    this.#pauseSettled = Promise.allSettled(cancels);
    this.#requeue(due, this.#pauseSettled);
  }

  /** Sends new reserves for `waiters`, in order, once `after` settles; they count as in flight meanwhile. */
  #requeue(waiters: readonly Waiter[], after: Promise<unknown>): void {
    for (const waiter of waiters) {
      waiter.state = "reserving";
      waiter.id = "";
      this.#reserving++;
    }
    void after.then(() => {
      for (const waiter of waiters) {
        if (waiter.state !== "reserving" || waiter.id !== "") continue; // aborted meanwhile
        this.#reserving--;
        this.#reserve(waiter, Infinity);
      }
    });
  }

  /** @internal one reserve script call, bypassing the local queue (tests, benchmarks). */
  reserveOnce(batch: string, permits: number, maxWait: number = Infinity): Promise<Reply> {
    return this.reserveBatch(batch, [permits], [maxWait]).then((replies) => replies[0]!);
  }

  /**
   * @internal one reserve script call deciding several requests in order, bypassing the local queue
   * (tests, benchmarks); the i-th request (from 1) is the reservation `<batch>/<i>`.
   */
  reserveBatch(
    batch: string,
    permits: readonly number[],
    maxWaits: readonly number[],
    settles?: readonly boolean[],
  ): Promise<Reply[]> {
    const calls = this.#calls;
    return this.store.call("reserve", calls.reserveKeys(batch), calls.reserveArgs(batch, permits, maxWaits, settles), (reply) =>
      parseBatchReply(reply, permits.length));
  }

  /** @internal one cancel script call settling `ids` with `actuals` (undefined: a cancel), in order (tests). */
  settleBatch(ids: readonly string[], actuals: readonly (number | undefined)[]): Promise<Reply[]> {
    const { keys, args } = this.#calls.cancelCall(ids, actuals);
    return this.store.call("cancel", keys, args, (reply) => parseBatchReply(reply, ids.length));
  }

  /** @internal one cancel script call (tests): reservation `<batch>/<i>`, or a bare `batch` for `<batch>/1`. */
  cancelOnce(id: string): Promise<Reply> {
    return this.cancelBatch([id]).then((replies) => replies[0]!);
  }

  /** @internal one cancel script call giving back `ids` in order, bypassing the local queue (tests). */
  cancelBatch(ids: readonly string[]): Promise<Reply[]> {
    const { keys, args } = this.#calls.cancelCall(ids);
    return this.store.call("cancel", keys, args, (reply) => parseBatchReply(reply, ids.length));
  }

  /** @internal one pause script call (tests); `ms` may carry µs fractions. */
  pauseOnce(ms: number): Promise<Reply> {
    return this.store.call("pause", this.#calls.pauseKeys(), this.#pauseArgs(ms));
  }

  #pauseArgs(ms: number): string[] {
    return this.#calls.pauseArgs(ms);
  }

  #reserve(waiter: Waiter, maxWait: number = waiter.maxWait): void {
    waiter.id = QUEUED; // the batcher names it when its call goes out
    waiter.state = "reserving";
    waiter.sentAt = this.#clock.now();
    this.#reserving++;
    this.#batch.enqueue(waiter, maxWait);
  }

  /** How the batcher hands each request's outcome back: waiters to the queue, probes to `tryAcquireAsync`. */
  readonly #batchHandler: BatchHandler<Waiter | Probe> = {
    live: (item) => item instanceof Probe || item.state === "reserving",
    reply: (item, reply) => {
      if (item instanceof Probe) item.resolve(reply);
      else this.#onReply(item, item.id, reply);
    },
    fail: (item, error, sent) => {
      if (item instanceof Probe) item.reject(error);
      else this.#onFailure(item, item.id, error, sent);
    },
    broken: (item, error) => {
      if (item instanceof Probe) {
        item.reject(error);
        return;
      }
      if (item.state === "done") return;
      if (item.state === "reserving") this.#reserving--;
      else this.#grants.remove(item);
      this.#settle(item, false, error);
    },
  };

  #onReply(waiter: Waiter, id: string, reply: Reply): void {
    if (waiter.id !== id || waiter.state !== "reserving") return; // aborted: its cancel is already on its way
    this.#reserving--;
    const now = this.#clock.now();
    switch (reply.code) {
      case CODE.ok:
      case CODE.replay: {
        const grantAt = now + reply.delay / 1000;
        this.#hint(grantAt - now);
        if (grantAt < this.#pausedUntil && waiter.sentAt < this.#pausedSince) {
          // Decided before the pause reached the server: give it back and queue again behind the pause.
          this.#requeue([waiter], Promise.allSettled([this.#pauseSettled, this.#cancel(id)]));
          return;
        }
        if (reply.delay === 0) {
          this.#settle(waiter, true);
          return;
        }
        waiter.state = "waiting";
        waiter.grantAt = grantAt;
        this.#grants.push(waiter);
        return;
      }
      case CODE.wait:
        this.#hint(reply.delay / 1000);
        this.#settle(waiter, false, new MaxWaitExceededError(reply.delay / 1000, waiter.maxWait));
        return;
      case CODE.full:
        this.#settle(waiter, false, new QueueFullError(this.store.maxPending));
        return;
      default:
        this.#settle(
          waiter,
          false,
          new RedisCommandError("reserve", `reservation ${id} was cancelled before it reached the server`),
        );
    }
  }

  #onFailure(waiter: Waiter, id: string, error: unknown, sent: boolean): void {
    if (sent && error instanceof RedisUnavailableError) this.#cancel(id); // it may still execute: void it
    if (waiter.id !== id || waiter.state !== "reserving") {
      if (error instanceof RedisUnavailableError || error instanceof RedisCommandError) {
        this.store.report("reserve", error);
      }
      return;
    }
    this.#reserving--;
    if (!(error instanceof RedisUnavailableError)) {
      this.#settle(waiter, false, error);
      return;
    }
    this.store.report("reserve", error);
    waiter.state = "done";
    waiter.id = ""; // granted (if at all) by the failure policy, not by Redis
    this.#detach(waiter);
    this.#unavailable(waiter.permits, waiter.maxWait, waiter.signal, error).then(waiter.resolve, waiter.reject);
  }

  /** The failure policy for one acquire. */
  #unavailable(permits: number, maxWait: number, signal: AbortSignal | undefined, error: RedisUnavailableError): Promise<void> {
    return acquireUnavailable(this.#failure, () => this.fallbackLimiter(), permits, maxWait, signal, error);
  }

  #tryUnavailable(permits: number, error: RedisUnavailableError): number {
    return tryUnavailable(this.#failure, () => this.fallbackLimiter(), permits, error);
  }

  #abort(waiter: Waiter): void {
    if (waiter.state === "done") return;
    if (waiter.state === "reserving") this.#reserving--;
    else {
      this.#grants.remove(waiter);
    }
    // "" = between two reservations, the old one already cancelled; unsent = still queued here, the
    // batcher skips it and Redis never hears of it.
    if (waiter.id !== "" && waiter.sent) this.#cancel(waiter.id);
    this.#settle(waiter, false, abortReason(waiter.signal!));
  }

  /**
   * Gives a reservation back, in one call with the other cancels of this tick; best effort, failures
   * go to `onError` (a lost cancel only wastes capacity, never lets more through). The promise
   * always resolves.
   */
  #cancel(id: string): Promise<unknown> {
    return this.#cancels.cancel(id);
  }

  #detach(waiter: Waiter): void {
    if (waiter.onAbort !== undefined) {
      waiter.signal!.removeEventListener("abort", waiter.onAbort);
      waiter.onAbort = undefined;
    }
  }

  #settle(waiter: Waiter, granted: boolean, reason?: unknown): void {
    waiter.state = "done";
    this.#detach(waiter);
    if (granted) waiter.resolve();
    else waiter.reject(reason);
  }

  #hint(ms: number): void {
    const at = this.#clock.now() + ms;
    if (at > this.#hintAt) this.#hintAt = at;
  }

  #checkPermits(permits: unknown): asserts permits is number {
    checkPermits(permits, this.#maxPermits);
  }
}
