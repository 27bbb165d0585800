/**
 * The in-process state of one Redis limiter, as one object: its reserve and cancel batchers, the
 * waiters holding grant times and their timer, the local pause, and what happens to each waiter as
 * replies (or failures) come back. `RedisLimiter` (`limiter.ts`) validates calls and hands them here.
 *
 * Flow of a request: queued with the batcher (`batch.ts`), which sends it one microtask later in one
 * `reserve` call with every request made meanwhile, in arrival order (so one connection keeps this
 * limiter's requests FIFO on the server); the call names it `<call id>/<i>`. Each reply's delay is
 * turned into a local grant time `receipt + delay` — never earlier than the server's grant, since the
 * reply left the server after it decided. Waiters sit in a heap ordered by (grant time, arrival); one
 * timer is armed for the head and none when nothing waits. A waiter aborted before its grant is
 * rejected at once and its reservation cancelled, so the permits go back to the whole fleet.
 *
 * When Redis is unavailable (timeout, connection, transient error) the failure policy decides. A
 * reserve that timed out may still execute later; its cancel is sent right behind it and a tombstone
 * voids it if it arrives after the cancel, so a timeout never leaks permits for long nor takes them
 * twice. Waiters that already hold a reservation keep waiting through an outage — their grant time is
 * already decided.
 *
 * @module
 */
import type { Clock } from "../../clock.ts";
import { MaxWaitExceededError, QueueFullError } from "../../errors.ts";
import { abortReason } from "../../limiters/gate.ts";
import type { Limiter } from "../../limiters/limiter.ts";
import type { Permits } from "../../limiters/reservation.ts";
import { type BatchHandler, ReserveBatcher } from "./batch.ts";
import { type Amounts, PolicyCalls, type PolicySpec } from "./calls.ts";
import { CancelBatcher } from "./cancels.ts";
import type { RedisDimensions } from "./dimensions.ts";
import { RedisCommandError, RedisUnavailableError } from "./errors.ts";
import { fallBack, outagePolicy, outageTry } from "./outage.ts";
import { GrantTimer } from "./grants.ts";
import { RedisReservation } from "./reservation.ts";
import { CODE } from "./scripts.ts";
import type { FailurePolicy, RedisStore, Reply } from "./store.ts";
import { Probe, RESOLVED, Waiter } from "./waiter.ts";

/** The id of a waiter whose reserve is queued here, not yet sent (non-empty: "" means between two reservations). */
const QUEUED = "queued";

/**
 * One Redis limiter's local state and waiting logic. @internal
 *
 * @example
 * ```ts
 * const queue = new RedisQueue(store, specs, "closed", () => undefined);
 * queue.reserve(new Waiter(1, Infinity, undefined)); // goes out with the next batch
 * ```
 */
export class RedisQueue {
  readonly store: RedisStore;
  readonly clock: Clock;
  readonly calls: PolicyCalls;
  readonly batch: ReserveBatcher<Waiter | Probe>;
  readonly cancels: CancelBatcher;
  readonly grants: GrantTimer;
  readonly failure: FailurePolicy;
  /** The limiter the failure policy falls back to (built on first use), or undefined. */
  readonly fallback: () => Limiter | undefined;
  /** Its named dimensions (a named combination), or null. */
  readonly dimensions: RedisDimensions | null;
  /** Waiters whose reserve is queued or out. */
  reserving = 0;
  /**
   * Local pause: a reserve granted before `pausedUntil` re-reserves when it may have been decided
   * before the pause reached Redis — requested while a pause was unanswered (a NOSCRIPT resend puts
   * the pause behind reserves sent after it), or before the latest pause was answered.
   */
  pausedUntil = -Infinity;
  /** Sequence of reserves and pauses in call order (a ms timestamp ties within one millisecond). */
  #seq = 0;
  /** Pauses sent and not answered yet. */
  #pausesInFlight = 0;
  /** `#seq` when the latest pause was answered: reserves requested up to then may precede it in Redis. */
  #answeredSeq = 0;
  /** Settles when the latest pause (and the cancels it caused) has been answered. */
  pauseSettled: Promise<unknown> = RESOLVED;
  /** Latest local time at which something is known to be granted (for the tryAcquire hint). */
  hintAt = -Infinity;

  constructor(
    store: RedisStore,
    specs: readonly PolicySpec[],
    failure: FailurePolicy,
    fallback: () => Limiter | undefined,
    dimensions: RedisDimensions | null = null,
  ) {
    this.store = store;
    this.dimensions = dimensions;
    this.clock = store.clock;
    this.failure = failure;
    this.fallback = fallback;
    this.calls = new PolicyCalls(store, specs);
    this.grants = new GrantTimer(this.clock, (waiters) => {
      for (const waiter of waiters) this.#settle(waiter, true);
    });
    this.batch = new ReserveBatcher<Waiter | Probe>(this.calls, this.#batchHandler);
    this.cancels = new CancelBatcher(this.calls);
  }

  /** Local waiters: reserving, or holding a grant time. */
  get size(): number {
    return this.reserving + this.grants.size;
  }

  /**
   * A reservation handle for `id` ('' when the failure policy granted it), granted now: `asked` as
   * the caller asked it, `amounts` per policy when asked per dimension.
   */
  handle(id: string, asked: Permits, permits: number, amounts: readonly number[] | null): RedisReservation {
    const dims = this.dimensions;
    const shape = dims === null ? null : { dimensions: dims, amounts: amounts ?? dims.of.map(() => permits) };
    return new RedisReservation(this.#sendSettle, id === "" ? undefined : id, asked, this.clock.now(), shape);
  }

  readonly #sendSettle = (id: string, actual: Amounts): Promise<Reply | undefined> => this.cancels.settle(id, actual);

  /**
   * A validated `acquire` (resolving to nothing, or with `withId` to the id Redis granted, '' when
   * the failure policy did) or `reserve` (`settles`: to a handle). `permits` of every policy, or
   * `amounts` per policy (a reservation asked per dimension, `asked`).
   */
  request(
    permits: number,
    maxWait: number,
    signal: AbortSignal | undefined,
    settles: boolean,
    asked: Permits = permits,
    amounts: readonly number[] | null = null,
    withId = false,
  ): Promise<unknown> {
    // Under "closed" a caller fails at once; under "open" or a local share it goes through
    // `fallBack` as a waiter, which can hand it back to Redis.
    if (this.store.isDown() && this.failure === "closed") {
      const error = new RedisUnavailableError("reserve", "recent failure");
      const granted = outagePolicy(this, permits, maxWait, signal, error, asked);
      return settles ? granted.then(() => this.handle("", asked, permits, amounts)) : withId ? granted.then(() => "") : granted;
    }
    const waiter = new Waiter(permits, maxWait, signal, settles, amounts, asked);
    const promise = new Promise<unknown>((resolve, reject) => {
      // the id read at the grant: the one Redis granted ('' when the failure policy did)
      waiter.resolve = settles
        ? () => resolve(this.handle(waiter.id, asked, permits, amounts))
        : withId ? () => resolve(waiter.id) : () => resolve(undefined);
      waiter.reject = reject;
    });
    if (this.store.isDown()) {
      waiter.state = "done";
      waiter.id = "";
      fallBack(this, waiter, waiter.maxWait, new RedisUnavailableError("reserve", "recent failure"));
      return promise;
    }
    this.#watch(waiter);
    this.reserve(waiter);
    return promise;
  }

  /** Aborting the caller's signal takes the waiter out of the queue (and cancels its reservation). */
  #watch(waiter: Waiter): void {
    const signal = waiter.signal;
    if (signal === undefined) return;
    waiter.onAbort = () => this.#abort(waiter);
    signal.addEventListener("abort", waiter.onAbort, { once: true });
  }

  /** Hands `waiter` back to Redis (see `outage.ts`), its signal watched again, with `maxWait` ms left. */
  resume(waiter: Waiter, maxWait: number): void {
    this.#watch(waiter);
    this.reserve(waiter, maxWait);
  }

  /** Queues `waiter`'s reserve with the batcher. */
  reserve(waiter: Waiter, maxWait: number = waiter.maxWait): void {
    waiter.id = QUEUED; // the batcher names it when its call goes out
    waiter.state = "reserving";
    waiter.sentSeq = ++this.#seq;
    this.reserving++;
    this.batch.enqueue(waiter, maxWait);
  }

  /**
   * See `RedisLimiter.pause`. `sent`: the pause is already on its way to Redis (a named
   * combination pausing some dimensions pauses their members, `RedisCombinedLimiter.pauseDimensions`);
   * else this queue sends one on its own keys. Resolves once the pause is answered (or failed).
   */
  pause(ms: number, sent?: Promise<unknown>): Promise<unknown> {
    const now = this.clock.now();
    if (now + ms > this.pausedUntil) this.pausedUntil = now + ms;
    this.hint(ms);
    let paused: Promise<unknown>;
    if (sent !== undefined) paused = sent;
    else {
      let args: string[];
      try {
        args = this.calls.pauseArgs(ms);
      } catch (error) {
        this.store.report("pause", new RedisCommandError("pause", (error as Error).message, { cause: error }));
        return RESOLVED;
      }
      paused = this.store.call("pause", this.calls.pauseKeys(), args).catch((error) => this.store.report("pause", error));
    }
    this.#pausesInFlight++;
    paused = paused.then(
      () => this.#answered(),
      () => this.#answered(),
    );
    // Waiters due before the pause ends give their slots back (newest first, so the freed suffix is
    // reclaimed whole) and queue again behind the pause, in order. The new reserves wait for the pause
    // and the cancels to be answered: a NOSCRIPT resend must not let them overtake.
    const due = this.grants.items().filter((w) => w.grantAt < this.pausedUntil);
    due.sort((a, b) => a.grantAt - b.grantAt || a.seq - b.seq);
    const cancels: Promise<unknown>[] = [paused];
    for (let i = due.length - 1; i >= 0; i--) {
      const waiter = due[i]!;
      this.grants.remove(waiter);
      cancels.push(this.cancel(waiter.id));
    }
    this.pauseSettled = Promise.allSettled([this.pauseSettled, ...cancels]);
    this.#requeue(due, this.pauseSettled);
    return paused;
  }

  #answered(): void {
    this.#pausesInFlight--;
    this.#answeredSeq = this.#seq;
  }

  /** Sends new reserves for `waiters`, in order, once `after` settles; they count as in flight meanwhile. */
  #requeue(waiters: readonly Waiter[], after: Promise<unknown>): void {
    for (const waiter of waiters) {
      waiter.state = "reserving";
      waiter.id = "";
      this.reserving++;
    }
    void after.then(() => {
      for (const waiter of waiters) {
        if (waiter.state !== "reserving" || waiter.id !== "") continue; // aborted meanwhile
        this.reserving--;
        this.reserve(waiter, Infinity);
      }
    });
  }

  /** How the batcher hands each request's outcome back: waiters to the queue, probes to `tryAcquireAsync`. */
  readonly #batchHandler: BatchHandler<Waiter | Probe> = {
    live: (item) => item instanceof Probe || item.state === "reserving",
    reply: (item, reply) => {
      if (item instanceof Probe) item.resolve(reply);
      else this.#onReply(item, item.id, reply);
    },
    fail: (item, error, sent) => {
      if (item instanceof Probe) {
        // A probe sent whose answer was lost may still have been granted: void it, as a waiter's.
        if (sent && error instanceof RedisUnavailableError) this.cancel(item.id);
        item.reject(error);
      } else this.#onFailure(item, item.id, error, sent);
    },
    broken: (item, error) => {
      if (item instanceof Probe) {
        item.reject(error);
        return;
      }
      if (item.state === "done") return;
      if (item.state === "reserving") this.reserving--;
      else this.grants.remove(item);
      this.#settle(item, false, error);
    },
  };

  #onReply(waiter: Waiter, id: string, reply: Reply): void {
    if (waiter.id !== id || waiter.state !== "reserving") {
      // Aborted: its cancel is already on its way — sent before this grant time was known, so if it
      // fails it is sent again only until cancelGrace past the failure. A grant booked further ahead
      // can be refunded until its own time plus cancelGrace: cancel again with it (idempotent; a
      // cancel that got through makes this one a no-op). Red-team (faults test under load): a
      // waiter booked a minute ahead and aborted during its round trip kept its permits when Redis
      // refused cancels for 7 s.
      if (waiter.id === id && waiter.state === "done" && (reply.code === CODE.ok || reply.code === CODE.replay) && reply.delay > 0) {
        void this.cancel(id, this.clock.now() + reply.delay / 1000);
      }
      return;
    }
    this.reserving--;
    const now = this.clock.now();
    switch (reply.code) {
      case CODE.ok:
      case CODE.replay: {
        const grantAt = now + reply.delay / 1000;
        this.hint(grantAt - now);
        if (grantAt < this.pausedUntil && (this.#pausesInFlight > 0 || waiter.sentSeq <= this.#answeredSeq)) {
          // Granted inside the pause, so decided before the pause reached Redis (a reserve requested
          // while a pause was unanswered can overtake its NOSCRIPT resend): give it back and queue
          // again behind the pause.
          this.#requeue([waiter], Promise.allSettled([this.pauseSettled, this.cancel(id)]));
          return;
        }
        if (reply.delay === 0) {
          this.#settle(waiter, true);
          return;
        }
        waiter.state = "waiting";
        waiter.grantAt = grantAt;
        this.grants.push(waiter);
        return;
      }
      case CODE.wait:
        this.hint(reply.delay / 1000);
        this.#settle(waiter, false, new MaxWaitExceededError(reply.delay / 1000, waiter.maxWait));
        return;
      case CODE.full:
        this.#settle(waiter, false, new QueueFullError(this.store.maxPending, { option: "maxPending" }));
        return;
      case CODE.far:
        this.#settle(waiter, false, new RangeError(
          `the grant would be ${Math.round(reply.delay / 1000)} ms away, past the 1e12 ms (about 31 years) a Redis key can hold: debt piled up on this key; nothing was taken`,
        ));
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
    if (sent && error instanceof RedisUnavailableError) this.cancel(id); // it may still execute: void it
    if (waiter.id !== id || waiter.state !== "reserving") {
      if (error instanceof RedisUnavailableError || error instanceof RedisCommandError) {
        this.store.report("reserve", error);
      }
      return;
    }
    this.reserving--;
    if (!(error instanceof RedisUnavailableError)) {
      this.#settle(waiter, false, error);
      return;
    }
    this.store.report("reserve", error);
    waiter.state = "done";
    waiter.id = ""; // granted (if at all) by the failure policy, not by Redis
    this.#detach(waiter);
    fallBack(this, waiter, waiter.maxWait, error);
  }

  /** The failure policy for one try; see `outage.ts`. */
  tryUnavailable(permits: number, error: RedisUnavailableError): number {
    return outageTry(this, permits, error);
  }

  #abort(waiter: Waiter): void {
    if (waiter.state === "done") return;
    if (waiter.state === "reserving") this.reserving--;
    else this.grants.remove(waiter);
    // "" = between two reservations, the old one already cancelled; unsent = still queued here, the
    // batcher skips it and Redis never hears of it.
    // A waiter booked ahead (`grantAt`) can be refunded until its grant time plus `cancelGrace`.
    if (waiter.id !== "" && waiter.sent) this.cancel(waiter.id, waiter.state === "waiting" ? waiter.grantAt : undefined);
    this.#settle(waiter, false, abortReason(waiter.signal!));
  }

  /**
   * Gives a reservation back, in one call with the other cancels of this tick; best effort, failures
   * go to `onError` (a lost cancel only wastes capacity, never lets more through). The promise
   * always resolves.
   */
  cancel(id: string, grantAt?: number): Promise<unknown> {
    return this.cancels.cancel(id, grantAt);
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

  /** Something is known to be granted `ms` from now: moves the tryAcquire hint. */
  hint(ms: number): void {
    const at = this.clock.now() + ms;
    if (at > this.hintAt) this.hintAt = at;
  }
}
