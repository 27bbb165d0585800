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
 * One queued request — and the very promise its caller awaits: the fields live on the promise object
 * itself, which saves a separate object per waiter (100k waiters are normal). `.then` on it makes
 * plain Promises (`Symbol.species`), so callers never construct waiters by accident.
 */
export class Waiter extends Promise<void> {
  static override get [Symbol.species](): PromiseConstructor {
    return Promise;
  }
  readonly permits: number;
  readonly seq: number;
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

/**
 * A task whose held permits count from its completion whatever its queue's `countFrom` (a
 * `schedule(task, { countFrom: "completion" })` call): a subclass rather than a field, so no other
 * waiter grows.
 */
export class CompletionTaskWaiter extends TaskWaiter {}

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

  unlink(waiter: Waiter): void {
    if (waiter.prev === null) this.head = waiter.next;
    else waiter.prev.next = waiter.next;
    if (waiter.next === null) this.tail = waiter.prev;
    else waiter.next.prev = waiter.prev;
    waiter.prev = waiter.next = null;
    this.size--;
  }
}
