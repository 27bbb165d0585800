/**
 * Waiters and the per-limiter FIFO they wait in. A waiter IS the promise its caller awaits (its fields
 * live on the promise object) and a node of its limiter's doubly linked {@link WaitQueue}, so a queued
 * caller costs one object and an abort unlinks in O(1).
 *
 * @module
 */
import type { Gate } from "./gate.ts";
import type { Policy } from "./policy.ts";
import type { ScanQueue } from "./scan.ts";

/** Global arrival order, shared by all gates so that merged domains keep one order. */
let nextSeq = 0;

/**
 * A new arrival number, taken ahead of queueing: a call that makes several requests in turn (the
 * throttled fetch's retries) queues each of them at its first arrival (see {@link ARRIVAL}).
 * @internal
 *
 * @example
 * ```ts
 * const place = newArrival(); // later: limiter.schedule(task, { [ARRIVAL]: place })
 * ```
 */
export function newArrival(): number {
  return nextSeq++;
}

/**
 * Internal option of `acquire`/`schedule`/`reserve` (a symbol, so not part of the public options):
 * queue the request at this arrival number (from {@link newArrival}) instead of a new one, i.e.
 * behind the waiters that arrived before it and ahead of those that came after. It still waits for
 * its permits like any waiter. @internal
 *
 * @example
 * ```ts
 * await limiter.schedule(send, { permits: 1, [ARRIVAL]: place } as ScheduleOptions);
 * ```
 */
export const ARRIVAL: unique symbol = Symbol("sluice.arrival");

/**
 * The arrival number an options object asks for (see {@link ARRIVAL}), or undefined.
 * @internal
 *
 * @example
 * ```ts
 * arrivalOf({ [ARRIVAL]: 7 }); // 7
 * ```
 */
export function arrivalOf(options: object | undefined): number | undefined {
  const seq = (options as { [ARRIVAL]?: unknown } | undefined)?.[ARRIVAL];
  // Only numbers handed out by `newArrival` (integers below the counter) are honoured.
  return typeof seq === "number" && Number.isInteger(seq) && seq >= 0 && seq < nextSeq ? seq : undefined;
}

/**
 * One queued request — and the very promise its caller awaits: the fields live on the promise object
 * itself, which saves a separate object per waiter (100k waiters are normal). `.then` on it makes
 * plain Promises (`Symbol.species`), so callers never construct waiters by accident.
 */
export class Waiter extends Promise<void> {
  static override get [Symbol.species](): PromiseConstructor {
    return Promise;
  }
  readonly permits: number;
  /** Arrival number: the queue's order. Set at construction; only the gate changes it, before queueing (see {@link ARRIVAL}). */
  seq: number;
  prev: Waiter | null = null;
  next: Waiter | null = null;
  /**
   * Settles the caller's promise. Only `resolve` is kept — a rejection resolves it with a rejected
   * promise — so V8 can collect the unused `reject` closure: about 60 bytes less per waiter.
   */
  readonly resolve: (value?: PromiseLike<void>) => void;
  readonly queue: WaitQueue;
  signal: AbortSignal | undefined = undefined;
  /** Granted through `schedule` on a policy that counts from completion: released when the task ends. */
  readonly hold: boolean;

  constructor(permits: number, queue: WaitQueue, hold: boolean) {
    let resolve!: (value?: PromiseLike<void>) => void;
    super((r) => {
      resolve = r;
    });
    this.resolve = resolve;
    this.permits = permits;
    this.queue = queue;
    this.hold = hold;
    this.seq = nextSeq++;
  }

  /** Its own amount per policy of its queue, or null: `permits` of each (see `ReserveWaiter`). */
  amounts(): readonly number[] | null {
    return null;
  }

  /** Called by the gate at the grant, right after the takes (a reservation records its time). */
  granted(_now: number): void {}

  /** What the caller's promise resolves with once granted. */
  result(): unknown {
    return undefined;
  }
}

/** A scheduled task and what to do when it settles (e.g. release permits held until completion). */
export type Task = () => unknown;

/**
 * A waiter that carries its scheduled task: at its grant the gate runs the task itself, at once,
 * so the task starts at the moment it was granted (a grant for a task that only starts later would
 * let start times bunch up beyond the limit), and no extra promise or closure waits per task.
 */
export class TaskWaiter extends Waiter {
  readonly task: Task;

  constructor(permits: number, queue: WaitQueue, hold: boolean, task: Task) {
    super(permits, queue, hold);
    this.task = task;
  }
}

/** The FIFO of one limiter object: a doubly linked list, so an abort unlinks in O(1). */
export class WaitQueue implements ScanQueue {
  readonly policies: readonly Policy[];
  head: Waiter | null = null;
  tail: Waiter | null = null;
  size = 0;
  /** The gate this queue is registered with while it has waiters (kept current across merges). */
  gate: Gate | null = null;
  /**
   * When a held task's permits count (set by its limiter): from the task's start, or its completion.
   * Kept here, not per waiter, so a queued task carries no closure.
   */
  countFrom: "start" | "completion" = "start";
  /** True when a grant holds concurrency slots until its task (or reservation) ends. */
  slots = false;
  /** Reservations granted on this limiter and not yet settled (they count as in flight). */
  openReservations = 0;

  constructor(policies: readonly Policy[]) {
    this.policies = policies;
  }

  isEmpty(): boolean {
    return this.head === null;
  }
  headSeq(): number {
    return this.head!.seq;
  }
  headPermits(): number {
    return this.head!.permits;
  }
  headAmounts(): readonly number[] | null {
    return this.head!.amounts();
  }
  headHolds(): boolean {
    return this.head!.hold;
  }

  push(waiter: Waiter): void {
    waiter.prev = this.tail;
    if (this.tail === null) this.head = waiter;
    else this.tail.next = waiter;
    this.tail = waiter;
    this.size++;
  }

  /**
   * Queues `waiter` at its arrival number rather than last (see {@link ARRIVAL}); returns true when it
   * became the head. O(its position): it walks from the head, and a call that kept its place is
   * usually near the front (it arrived before the others queued).
   */
  insert(waiter: Waiter): boolean {
    const tail = this.tail;
    if (tail === null || tail.seq < waiter.seq) {
      this.push(waiter);
      return this.head === waiter;
    }
    let after: Waiter | null = null;
    for (let w = this.head; w !== null && w.seq < waiter.seq; w = w.next) after = w;
    const before = after === null ? this.head : after.next;
    waiter.prev = after;
    waiter.next = before;
    if (after === null) this.head = waiter;
    else after.next = waiter;
    if (before === null) this.tail = waiter;
    else before.prev = waiter;
    this.size++;
    return after === null;
  }

  unlink(waiter: Waiter): void {
    if (waiter.prev === null) this.head = waiter.next;
    else waiter.prev.next = waiter.next;
    if (waiter.next === null) this.tail = waiter.prev;
    else waiter.next.prev = waiter.prev;
    waiter.prev = waiter.next = null;
    this.size--;
  }
}
