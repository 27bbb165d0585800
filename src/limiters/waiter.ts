/**
 * Waiters and the per-limiter queue they wait in. A waiter IS the promise its caller awaits (its fields
 * live on the promise object) and a node of a doubly linked list in its limiter's {@link WaitQueue}
 * (one list per priority), so a queued caller costs one object and an abort unlinks in O(1).
 *
 * @module
 */
import type { Gate } from "./gate.ts";
import type { Policy } from "./policy.ts";
import { LIMITER_DEFAULTS } from "./defaults.ts";
import type { LimiterEvents } from "./events.ts";
import { type Level, ranksBefore } from "./priority.ts";
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
 * An options key (internal): `true` marks a `maxWait` refusal as a probe's — "would this wait?" —
 * not a caller turned away, so the limiter's `refused` count and `refuse` event leave it out (the
 * adaptive fetch asks its learned rate so before every attempt).
 *
 * @example
 * ```ts
 * await limiter.reserve(1, { maxWait: 0, [PROBE]: true } as ReserveOptions); // MaxWaitExceededError, uncounted
 * ```
 */
export const PROBE: unique symbol = Symbol("sluice.probe");

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

/**
 * A task whose held permits count from its completion whatever its queue's `countFrom` (a
 * `schedule(task, { countFrom: "completion" })` call): a subclass rather than a field, so no other
 * waiter grows.
 */
export class CompletionTaskWaiter extends TaskWaiter {}

/**
 * The queue of one limiter object: FIFO per priority (see `priority.ts`). Priority 0 waiters are a
 * doubly linked list held here (`head`/`tail`), so an abort unlinks in O(1) and the default path
 * costs what a plain FIFO does; other priorities get a {@link Level} each, once used.
 */
export class WaitQueue implements ScanQueue {
  readonly policies: readonly Policy[];
  /** The priority-0 waiters, oldest first. */
  head: Waiter | null = null;
  tail: Waiter | null = null;
  /** Waiters of every priority. */
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
  /** ms of waiting at the front of its level worth one priority level (set by its limiter). */
  aging: number = LIMITER_DEFAULTS.priorityAging;
  /** The non-empty levels of non-zero priority; `null` while there are none (the plain FIFO path). */
  levels: Level[] | null = null;
  /** When `head` reached the front of priority 0 (kept on the default path too: one store per change). */
  since = 0;

  // --- stats and events (see stats.ts): plain counters, kept here so a limiter needs no extra object ---
  granted = 0;
  refused = 0;
  aborted = 0;
  /** Running scheduled tasks plus open reservations (one counter: `stats().inFlight`, slots held). */
  inFlight = 0;
  /** The limit shown by `stats().rate`, for a limiter with one (two numbers: no object per limiter). */
  rateLimit: number | undefined = undefined;
  rateInterval = 0;
  /** `limiter.events`, made on first use. */
  events: LimiterEvents | null = null;
  /** While a grant or abort listener exists: arrival time of each waiter (its wait, once granted). */
  arrivals: Map<Waiter, number> | null = null;
  /** Ends a scheduled task's time in flight (one per queue, so a task carries no closure for it). */
  taskDone: (() => void) | undefined = undefined;

  constructor(policies: readonly Policy[]) {
    this.policies = policies;
  }

  /** The waiter that goes next: the lowest-ranked level front (see `priority.ts`). */
  front(): Waiter | null {
    const levels = this.levels;
    if (levels === null) return this.head;
    let best = this.head;
    let since = this.since;
    let priority = 0;
    for (let i = 0; i < levels.length; i++) {
      const level = levels[i]!;
      const head = level.head!;
      if (best === null || ranksBefore(level.since, level.priority, head.seq, since, priority, best.seq, this.aging)) {
        best = head;
        since = level.since;
        priority = level.priority;
      }
    }
    return best;
  }

  isEmpty(): boolean {
    return this.size === 0;
  }
  /**
   * The queue's place in the domain's order: the arrival of the waiter that goes next. Not the
   * oldest waiter's: an old low-priority waiter held back by priorities would lend its early place to
   * later high-priority fronts, which would then jump other limiters' earlier waiters.
   */
  headSeq(): number {
    const front = this.front();
    return front === null ? Infinity : front.seq;
  }
  headPermits(): number {
    return this.front()!.permits;
  }
  headAmounts(): readonly number[] | null {
    return this.front()!.amounts();
  }
  headHolds(): boolean {
    return this.front()!.hold;
  }

  /** Appends `waiter` to its priority's FIFO at gate time `now`. */
  push(waiter: Waiter, priority: number, now: number): void {
    this.size++;
    if (priority === 0) {
      waiter.prev = this.tail;
      if (this.tail === null) {
        this.head = waiter;
        this.since = now;
      } else this.tail.next = waiter;
      this.tail = waiter;
      return;
    }
    let levels = this.levels;
    if (levels === null) this.levels = levels = [];
    let level: Level | undefined;
    for (let i = 0; i < levels.length; i++) if (levels[i]!.priority === priority) level = levels[i];
    if (level === undefined) levels.push(level = { priority, head: null, tail: null, since: now });
    waiter.prev = level.tail;
    if (level.tail === null) level.head = waiter;
    else level.tail.next = waiter;
    level.tail = waiter;
  }

  /**
   * Queues `waiter` in its priority's FIFO at its arrival number rather than last (see
   * {@link ARRIVAL}). O(its position in that FIFO): it walks from the front, and a call that kept its
   * place is usually near it (it arrived before the others queued). Inserted before a level's front,
   * it takes that front's `since` (the place it kept was there first).
   */
  insert(waiter: Waiter, priority: number, now: number): void {
    let list: { head: Waiter | null; tail: Waiter | null } | undefined;
    if (priority === 0) list = this;
    else for (const level of this.levels ?? []) if (level.priority === priority) list = level;
    if (list === undefined || list.tail === null || list.tail.seq < waiter.seq) {
      this.push(waiter, priority, now);
      return;
    }
    let after: Waiter | null = null;
    for (let w = list.head; w !== null && w.seq < waiter.seq; w = w.next) after = w;
    const before = after === null ? list.head : after.next;
    waiter.prev = after;
    waiter.next = before;
    if (after === null) list.head = waiter;
    else after.next = waiter;
    if (before === null) list.tail = waiter;
    else before.prev = waiter;
    this.size++;
  }

  /** Takes `waiter` out at gate time `now` (the next of its level reaches the front then). */
  unlink(waiter: Waiter, now: number): void {
    const prev = waiter.prev;
    const next = waiter.next;
    if (prev !== null) prev.next = next;
    if (next !== null) next.prev = prev;
    waiter.prev = waiter.next = null;
    this.size--;
    if (prev !== null && next !== null) return;
    if (this.head === waiter || this.tail === waiter) {
      if (prev === null) {
        this.head = next;
        this.since = now;
      }
      if (next === null) this.tail = prev;
      return;
    }
    const levels = this.levels!;
    for (let i = 0; i < levels.length; i++) {
      const level = levels[i]!;
      if (level.head !== waiter && level.tail !== waiter) continue;
      if (prev === null) {
        level.head = next;
        level.since = now;
      }
      if (next === null) level.tail = prev;
      if (level.head === null) {
        levels[i] = levels[levels.length - 1]!;
        levels.pop();
        if (levels.length === 0) this.levels = null; // back to the plain FIFO path (and its fast predictions)
      }
      return;
    }
  }

  /** Every waiter, each level oldest first. */
  waiters(): Waiter[] {
    const all: Waiter[] = [];
    for (let w = this.head; w !== null; w = w.next) all.push(w);
    for (const level of this.levels ?? []) for (let w = level.head; w !== null; w = w.next) all.push(w);
    return all;
  }

  /** Forgets every waiter (they were failed). */
  clear(): void {
    this.head = this.tail = null;
    this.levels = null;
    this.size = 0;
  }
}
