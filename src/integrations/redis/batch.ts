/**
 * Coalesces one limiter's reserve calls. Requests made in the same tick, or while the limiter already
 * has {@link MAX_IN_FLIGHT} reserve calls awaiting a reply, go out together as ONE script call
 * (at most {@link MAX_BATCH} requests each), in arrival order. The script decides them one after the
 * other exactly as separate calls would — each its own grant time, refusal or replay, each atomic
 * over every key — but loads and saves the policy state once per call. So throughput grows with
 * concurrency instead of being capped by one round trip and one script start per decision, and a
 * lone caller still goes out at once (one microtask later).
 *
 * Why a cap on calls in flight: with every call pipelined, a burst becomes a burst of single-request
 * calls and nothing is ever shared. With a small cap, the requests that arrive during a round trip
 * wait for the next call and share it; two calls in flight keep the client and the server busy at
 * the same time.
 *
 * @module
 */
import { type PolicyCalls, reservationId } from "./calls.ts";
import { parseBatchReply } from "./client.ts";
import { RedisUnavailableError } from "./errors.ts";
import type { Reply } from "./store.ts";
import { newId } from "./waiter.ts";

/** Most requests in one reserve call: bounds the script's run time (Redis answers BUSY meanwhile) and its size. */
export const MAX_BATCH = 128;
/** Reserve calls one limiter keeps awaiting a reply; later requests queue and share the next call. */
export const MAX_IN_FLIGHT = 2;

/** A request as the batcher sees it. @internal */
export interface Reservation {
  /** The reservation id (fleet-unique), `<batch>/<i>`: assigned when its call goes out. */
  id: string;
  readonly permits: number;
  /** Per policy, what a reservation asked per named dimension; null: `permits` of every policy. */
  readonly amounts?: readonly number[] | null;
  /** Set when its call goes out: only a sent reserve may execute later and need a cancel. */
  sent: boolean;
  /** True for a reservation that settles (`reserve`): its record is kept `settleTtl`, with marks. */
  readonly settles?: boolean;
}

/** What the limiter does with each request's outcome. @internal */
export interface BatchHandler<T extends Reservation> {
  /** False once the request no longer wants a reservation (aborted while queued): it is skipped. */
  live(item: T): boolean;
  /** The script's decision for this request. */
  reply(item: T, reply: Reply): void;
  /** The call failed (`sent`) or could not be sent (`!sent`). */
  fail(item: T, error: unknown, sent: boolean): void;
  /** A handler threw: settle the request with `error` so nothing is left hanging. */
  broken(item: T, error: unknown): void;
}

/**
 * The reserve queue of one limiter: requests in arrival order, sent in batches.
 *
 * @example
 * ```ts
 * const batcher = new ReserveBatcher(calls, handler);
 * batcher.enqueue(waiter, Infinity); // goes out in the next microtask, with whatever else arrived
 * ```
 * @internal
 */
export class ReserveBatcher<T extends Reservation> {
  readonly #calls: PolicyCalls;
  readonly #handler: BatchHandler<T>;
  /** Queued requests and their maxWait (ms); `#head` is the first not yet sent. */
  #items: T[] = [];
  #waits: number[] = [];
  #head = 0;
  #inFlight = 0;
  #scheduled = false;

  constructor(calls: PolicyCalls, handler: BatchHandler<T>) {
    this.#calls = calls;
    this.#handler = handler;
  }

  /** Reserve calls awaiting a reply. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Queues a request; it goes out with the next call (this tick's, or when a call in flight returns). */
  enqueue(item: T, maxWait: number): void {
    item.sent = false;
    this.#items.push(item);
    this.#waits.push(maxWait);
    if (!this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(this.#flush);
    }
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    if (this.#head < this.#items.length && this.#calls.store.isDown()) {
      // Redis failed meanwhile: the queued requests go to the failure policy now, not after a timeout each.
      const error = new RedisUnavailableError("reserve", "recent failure");
      for (const item of this.#take(Infinity).items) this.#settle(item, () => this.#handler.fail(item, error, false));
      return;
    }
    while (this.#inFlight < MAX_IN_FLIGHT && this.#head < this.#items.length) this.#send();
  };

  /** Removes up to `max` live requests from the head of the queue. */
  #take(max: number): { items: T[]; waits: number[] } {
    const items: T[] = [];
    const waits: number[] = [];
    let i = this.#head;
    for (; i < this.#items.length && items.length < max; i++) {
      const item = this.#items[i]!;
      if (!this.#handler.live(item)) continue;
      items.push(item);
      waits.push(this.#waits[i]!);
    }
    if (i === this.#items.length) {
      this.#items = [];
      this.#waits = [];
      this.#head = 0;
    } else if (i > 1024 && i * 2 > this.#items.length) {
      // Compact now and then, so a long queue is not shifted on every call.
      this.#items = this.#items.slice(i);
      this.#waits = this.#waits.slice(i);
      this.#head = 0;
    } else this.#head = i;
    return { items, waits };
  }

  #send(): void {
    const { items, waits } = this.#take(MAX_BATCH);
    if (items.length === 0) return;
    const batch = newId();
    let keys: string[];
    let args: string[];
    try {
      keys = this.#calls.reserveKeys(batch);
      args = this.#calls.reserveArgs(batch, items.map((item) => item.amounts ?? item.permits), waits, items.map((item) => item.settles === true));
    } catch (error) {
      for (const item of items) this.#settle(item, () => this.#handler.fail(item, error, false));
      return;
    }
    items.forEach((item, i) => {
      item.id = reservationId(batch, i + 1);
      item.sent = true;
    });
    this.#inFlight++;
    const count = items.length;
    this.#calls.store.call("reserve", keys, args, (reply) => parseBatchReply(reply, count)).then(
      (replies) => {
        for (let i = 0; i < count; i++) this.#settle(items[i]!, () => this.#handler.reply(items[i]!, replies[i]!));
        this.#done();
      },
      (error: unknown) => {
        for (const item of items) this.#settle(item, () => this.#handler.fail(item, error, true));
        this.#done();
      },
    );
  }

  /**
   * A call returned and its waiters are settled: the queued requests go out in a microtask, after
   * the settled callers' continuations, so whatever they ask next shares that call.
   */
  #done(): void {
    this.#inFlight--;
    if (!this.#scheduled && this.#head < this.#items.length) {
      this.#scheduled = true;
      queueMicrotask(this.#flush);
    }
  }

  #settle(item: T, run: () => void): void {
    try {
      run();
    } catch (error) {
      this.#handler.broken(item, error); // defensive: every request settles, nothing escapes unhandled
    }
  }
}
