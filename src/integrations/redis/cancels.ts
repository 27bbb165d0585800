/**
 * Coalesces one limiter's cancels (and settles) as `batch.ts` coalesces its reserves: the cancels asked for in the
 * same tick, or while {@link MAX_IN_FLIGHT} cancel calls await a reply, go out together as ONE
 * script call (at most {@link MAX_BATCH} each), in the order they were asked. The script gives each
 * back exactly as a call of its own would (idempotent, with its tombstone), so a timeout that
 * strikes 128 waiters of one batch costs one call, not 128.
 *
 * @module
 */
import { MAX_BATCH, MAX_IN_FLIGHT } from "./batch.ts";
import type { Amounts, PolicyCalls } from "./calls.ts";
import { parseBatchReply } from "./client.ts";
import type { Reply } from "./store.ts";
import { RedisUnavailableError } from "./errors.ts";
import type { TimerHandle } from "../../clock.ts";

/** A queued cancel (or settle, with its actual cost): its reservation id and how to tell its caller the call is over. */
interface Pending {
  readonly id: string;
  readonly actual: Amounts | undefined;
  readonly done: (reply: Reply | undefined) => void;
  /**
   * Until when (store clock ms) a failed cancel is sent again: its grant time plus `cancelGrace`,
   * while its record can still refund (set at the first failure when the grant time is unknown).
   */
  deadline?: number;
}

/** The first wait before a failed cancel is sent again, ms; doubled each time, up to {@link RETRY_MAX_MS}. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 1000;

function noReply(): void {}

/**
 * The cancel queue of one limiter.
 *
 * @example
 * ```ts
 * const cancels = new CancelBatcher(calls);
 * await cancels.cancel("3f9a…/2"); // resolves once the call is answered (or failed, reported to onError)
 * ```
 * @internal
 */
export class CancelBatcher {
  readonly #calls: PolicyCalls;
  #queue: Pending[] = [];
  #inFlight = 0;
  #scheduled = false;
  /** Cancels whose call failed, waiting to be sent again (see {@link CancelBatcher.cancel}). */
  #retries: Pending[] = [];
  #retryTimer: TimerHandle | undefined = undefined;
  #retryWait = RETRY_FIRST_MS;

  constructor(calls: PolicyCalls) {
    this.#calls = calls;
  }

  /**
   * Gives reservation `id` back; best effort: a failure goes to `onError` (a lost cancel only wastes
   * capacity, never lets more through). Resolves with the script's reply, or `undefined` when the
   * call failed; never rejects. A failed cancel is sent again in the background (100 ms, doubling
   * to 1 s) until `grantAt` (store clock ms; now when unknown) plus the store's `cancelGrace` —
   * while the reservation's record still lets it refund: a connection down at that moment (a
   * fail-fast client refuses to queue it) must not keep the permits taken. Cancels are idempotent,
   * so a resend never refunds twice.
   */
  cancel(id: string, grantAt?: number): Promise<Reply | undefined> {
    return new Promise((done) => {
      const deadline = grantAt === undefined ? undefined : grantAt + this.#calls.store.cancelGrace;
      this.#queue.push({ id, actual: undefined, done, ...(deadline !== undefined && { deadline }) });
      this.#schedule();
    });
  }

  /**
   * Settles reservation `id` with its actual cost (a number of every policy, or one per policy), in the same queue and calls as the cancels (so a
   * cancel and a settle of one reservation reach Redis in the order they were asked). Resolves like
   * {@link CancelBatcher.cancel}: the reply (code 1 = applied), or `undefined` when the call failed.
   */
  settle(id: string, actual: Amounts): Promise<Reply | undefined> {
    return new Promise((done) => {
      this.#queue.push({ id, actual, done });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(this.#flush);
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    while (this.#inFlight < MAX_IN_FLIGHT && this.#queue.length > 0) this.#send();
  };

  #send(): void {
    const items = this.#queue.length <= MAX_BATCH ? this.#queue : this.#queue.slice(0, MAX_BATCH);
    this.#queue = items === this.#queue ? [] : this.#queue.slice(MAX_BATCH);
    let call: { keys: string[]; args: string[] };
    try {
      call = this.#calls.cancelCall(items.map((item) => item.id), items.map((item) => item.actual));
    } catch {
      // The arguments cannot be built (the injected clock threw): the reserve failed the same way.
      for (const item of items) item.done(undefined);
      return;
    }
    const store = this.#calls.store;
    this.#inFlight++;
    store.call("cancel", call.keys, call.args, (reply) => parseBatchReply(reply, items.length)).then(
      (replies) => this.#finish(items, replies),
      (error) => {
        store.report("cancel", error);
        this.#retry(items.filter((item) => item.actual === undefined), error);
        this.#finish(items, undefined);
      },
    );
  }

  /** Schedules the failed cancels among `items` to be sent again, while their grace lasts. */
  #retry(items: readonly Pending[], error: unknown): void {
    if (!(error instanceof RedisUnavailableError)) return; // a misconfiguration: sending again cannot help
    const store = this.#calls.store;
    const now = store.clock.now();
    for (const item of items) {
      const deadline = item.deadline ?? now + store.cancelGrace;
      if (now < deadline) this.#retries.push({ id: item.id, actual: undefined, done: noReply, deadline });
    }
    if (this.#retries.length === 0 || this.#retryTimer !== undefined) return;
    const wait = this.#retryWait;
    this.#retryWait = Math.min(RETRY_MAX_MS, wait * 2);
    const timer = store.clock.setTimeout(() => {
      this.#retryTimer = undefined;
      this.#queue.push(...this.#retries.splice(0));
      this.#schedule();
    }, wait);
    // Not a reason to keep a process alive: if it exits, the record's expiry frees the permits.
    (timer as { unref?: () => unknown }).unref?.();
    this.#retryTimer = timer;
  }

  #finish(items: readonly Pending[], replies: readonly Reply[] | undefined): void {
    this.#inFlight--;
    if (replies !== undefined) this.#retryWait = RETRY_FIRST_MS;
    items.forEach((item, i) => item.done(replies?.[i]));
    if (this.#queue.length > 0) this.#schedule();
  }
}
