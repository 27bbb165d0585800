/**
 * The gate: the one waiting mechanism every limiter shares. Policies decide (`earliest`/`take`);
 * the gate queues callers, arms ONE timer for the whole domain, and grants in order.
 *
 * A *domain* is a set of limiters connected through shared policies (e.g. an overall limit and the
 * per-channel combinations that include it). It has one gate, one timer and one order. Each limiter
 * object owns a FIFO {@link WaitQueue}; every waiter carries a global arrival number (`seq`).
 *
 * The grant rule, evaluated by {@link scanQueues} at each instant, visiting waiters in arrival order:
 *   a waiter behind another on the same limiter waits for it (FIFO per limiter) and holds nothing;
 *   a waiter at the front is granted when none of its policies is *held* and every policy allows it
 *   now; otherwise it *holds* the policies that stop it: those held already (it queues behind the
 *   earlier waiter) and those whose `earliest` is still in the future.
 * So waiters are served first come, first served on every limiter they share; ties at one instant go
 * in submission order; a large request at the front is never starved by later small ones; and a
 * waiter that only waits for its own channel's limit holds no place on the shared (overall) limit —
 * a request on another channel never waits for this channel's limit.
 * A grant makes its policies less available, so after each grant the waiters already stopped in the
 * pass are re-checked on the policies they share with it: one that now stops them is held too (else a
 * stream of small requests could starve a large one). With that, one pass in arrival order decides the
 * instant: nothing stopped can become grantable again within it.
 *
 * Invariants: waiters hold nothing (nothing is taken until granted), so an abort leaves the domain
 * exactly as if the waiter had never asked; the timer is armed only while waiters exist, so an idle
 * limiter keeps no process alive; delays are capped at {@link MAX_TIMER_DELAY} and re-checked.
 *
 * @module
 */
import { type Clock, MAX_TIMER_DELAY, type TimerHandle } from "../clock.ts";
import type { Policy } from "./policy.ts";

/** Global arrival order, shared by all gates so that merged domains keep one order. */
let nextSeq = 0;
/** Global scan epochs, so a policy's held-mark from one gate never matches another gate's scan. */
let nextEpoch = 1;

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
 * Runs a task now: its result, or its synchronous throw as a rejection, becomes the returned
 * promise; `onDone` runs once the result settles.
 */
function runTask(task: Task, onDone: (() => void) | undefined): Promise<unknown> {
  let result: unknown;
  try {
    result = task();
  } catch (error) {
    onDone?.();
    return Promise.reject(error);
  }
  const promise = Promise.resolve(result);
  if (onDone !== undefined) promise.then(onDone, onDone);
  return promise;
}

/**
 * Granted waiters settle in grant order, even when a task they run calls back into a limiter and
 * causes more grants: those join the end of this queue instead of running first.
 */
const settling: Array<Waiter | (() => void)> = [];
let draining = false;

function settleInOrder(granted: readonly Waiter[]): void {
  for (const waiter of granted) settling.push(waiter);
  if (draining) return;
  draining = true;
  try {
    for (let i = 0; i < settling.length; i++) {
      const next = settling[i]!;
      if (typeof next === "function") next();
      else settle(next);
    }
  } finally {
    settling.length = 0;
    draining = false;
  }
  // Permits stamped as their tasks started: the queues they held can now be timed. One pass per gate.
  if (stamped.size > 0) {
    const gates = [...stamped];
    stamped.clear();
    for (const gate of gates) gate.scan();
  }
}

/** Gates whose held permits were stamped during the drain, to rescan once it ends. */
const stamped = new Set<Gate>();

/**
 * Starts a task granted at once. Outside a grant pass it runs synchronously, at its grant; inside one
 * (a task scheduling another), it runs after the tasks granted before it.
 */
export function startTask(task: Task, onDone: (() => void) | undefined): Promise<unknown> {
  if (!draining) return runTask(task, onDone);
  return new Promise((resolve) => {
    settling.push(() => resolve(runTask(task, onDone)));
  });
}

function noop(): void {}

/** What a scan needs from a queue: its policies and its head. */
export interface ScanQueue {
  readonly policies: readonly Policy[];
  isEmpty(): boolean;
  headSeq(): number;
  headPermits(): number;
  headHolds(): boolean;
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

/**
 * One pass of the grant rule at `now` over `queues` (see the module note). Calls `grant(queue)` for
 * each head granted, in arrival order, after taking its permits. Returns the next time the outcome
 * can change, or `Infinity`: the earliest instant at which any stopped waiter's binding policy frees
 * up — not when the waiter becomes ready — because a waiter that still waits for one of its limits
 * stops holding the others, which may let a later waiter on another channel through.
 *
 * Every stopped head is visited, even when a limit they all share is held: each still holds the
 * policies that stop it, which a newcomer on another queue must respect.
 */
export function scanQueues(
  queues: readonly ScanQueue[],
  now: number,
  epoch: number,
  grant: (queue: ScanQueue) => void,
): number {
  const heap = queues.filter((q) => !q.isEmpty());
  for (let i = (heap.length >> 1) - 1; i >= 0; i--) siftDown(heap, i);
  const stopped: ScanQueue[] = [];
  let wake = Infinity;
  while (heap.length > 0) {
    const queue = heap[0]!;
    const permits = queue.headPermits();
    const policies = queue.policies;
    let ready = true;
    let changeAt = Infinity;
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i]!;
      if (policy.heldEpoch === epoch) {
        ready = false; // queues behind an earlier waiter on this policy
        continue;
      }
      const at = policy.earliest(permits, now);
      if (at > now) {
        ready = false;
        policy.heldEpoch = epoch;
        if (at < changeAt) changeAt = at;
      }
    }
    if (ready) {
      const hold = queue.headHolds();
      for (let i = 0; i < policies.length; i++) policies[i]!.take(permits, now, hold);
      grant(queue);
      // Earlier stopped waiters sharing a policy with this grant may now be stopped by it as well.
      for (let j = 0; j < stopped.length; j++) {
        const other = stopped[j]!;
        const otherPermits = other.headPermits();
        for (const policy of other.policies) {
          if (policy.heldEpoch === epoch || !policies.includes(policy)) continue;
          const at = policy.earliest(otherPermits, now);
          if (at > now) {
            policy.heldEpoch = epoch;
            if (at < wake) wake = at;
          }
        }
      }
      if (queue.isEmpty()) popRoot(heap);
      else siftDown(heap, 0);
      continue;
    }
    if (changeAt < wake) wake = changeAt;
    stopped.push(queue);
    popRoot(heap);
  }
  return wake;
}

function popRoot(heap: ScanQueue[]): void {
  const last = heap.pop()!;
  if (heap.length > 0) {
    heap[0] = last;
    siftDown(heap, 0);
  }
}

function siftDown(heap: ScanQueue[], i: number): void {
  const n = heap.length;
  const item = heap[i]!;
  const seq = item.headSeq();
  for (;;) {
    const left = 2 * i + 1;
    if (left >= n) break;
    const right = left + 1;
    let child = left;
    let childSeq = heap[left]!.headSeq();
    if (right < n) {
      const rightSeq = heap[right]!.headSeq();
      if (rightSeq < childSeq) {
        child = right;
        childSeq = rightSeq;
      }
    }
    if (childSeq >= seq) break;
    heap[i] = heap[child]!;
    i = child;
  }
  heap[i] = item;
}

/** A queue seen by a prediction: walks the real waiters without copying, then a probe request. */
class ProbeQueue implements ScanQueue {
  readonly policies: readonly Policy[];
  cursor: Waiter | null;
  probe: number;

  constructor(policies: readonly Policy[], first: Waiter | null, probe: number) {
    this.policies = policies;
    this.cursor = first;
    this.probe = probe;
  }
  isEmpty(): boolean {
    return this.cursor === null && this.probe === 0;
  }
  headSeq(): number {
    return this.cursor === null ? Infinity : this.cursor.seq;
  }
  headPermits(): number {
    return this.cursor === null ? this.probe : this.cursor.permits;
  }
  headHolds(): boolean {
    return false; // a prediction assumes work completes at once: a lower bound
  }
}

const RESOLVED: Promise<void> = Promise.resolve();

/** The waiting mechanism of one domain. Limiters reach it through {@link Gate.root}. */
export class Gate {
  readonly clock: Clock;
  /** Set when this gate was merged into another; follow it with {@link Gate.root}. */
  forward: Gate | null = null;
  /** Queues that have waiters. */
  readonly active: Set<WaitQueue> = new Set();
  /** The epoch of the last scan: a policy with this `heldEpoch` is held by a waiter. */
  epoch = nextEpoch++;
  #lastNow = -Infinity;
  #timer: TimerHandle | undefined = undefined;
  #timerAt = Infinity;

  constructor(clock: Clock) {
    this.clock = clock;
  }

  /** The gate that currently owns this domain (gates merge when limiters are combined). */
  root(): Gate {
    let gate: Gate = this;
    while (gate.forward !== null) gate = gate.forward;
    return gate;
  }

  /** The clock's time, clamped so it never goes backwards: a clock stepping back mints nothing. */
  now(): number {
    const t = this.clock.now();
    if (t > this.#lastNow) this.#lastNow = t;
    return this.#lastNow;
  }

  /** True while a waiter holds any of these policies (a newcomer must queue behind it). */
  isHeld(policies: readonly Policy[]): boolean {
    for (let i = 0; i < policies.length; i++) if (policies[i]!.heldEpoch === this.epoch) return true;
    return false;
  }

  /** Grants now if nobody is ahead and every policy allows it; returns whether it did. */
  tryTakeNow(queue: WaitQueue, permits: number, now: number, hold: boolean): boolean {
    if (this.#timerAt <= now) this.scan(now); // an overdue timer: serve those already due first
    if (queue.head !== null) return false;
    const policies = queue.policies;
    if (this.isHeld(policies)) return false;
    for (let i = 0; i < policies.length; i++) if (policies[i]!.earliest(permits, now) > now) return false;
    for (let i = 0; i < policies.length; i++) policies[i]!.take(permits, now, hold);
    // Waiters on other channels may now be stopped by what this took: recompute their holds.
    if (this.active.size > 0) this.scan(now);
    return true;
  }

  /**
   * The wait in ms before `permits` asked of `queue` now would be granted, behind everyone already
   * queued. Exact for the current state (it runs the grant rule on copies of the policies); O(1)
   * when nobody is queued ahead, else proportional to the waiters ahead.
   */
  predict(queue: WaitQueue, permits: number, now: number): number {
    const policies = queue.policies;
    if (queue.head === null && !this.isHeld(policies)) {
      let at = now;
      for (let i = 0; i < policies.length; i++) at = Math.max(at, policies[i]!.earliest(permits, now));
      if (at !== Infinity) return at - now; // else only in-flight work blocks: simulate its completion
    }
    const copies = new Map<Policy, Policy>();
    const copy = (p: Policy): Policy => {
      let c = copies.get(p);
      if (c === undefined) copies.set(p, (c = p.clone(now)));
      return c;
    };
    const queues: ProbeQueue[] = [];
    let target: ProbeQueue | undefined;
    for (const q of this.active) {
      const probe = new ProbeQueue(q.policies.map(copy), q.head, q === queue ? permits : 0);
      if (q === queue) target = probe;
      queues.push(probe);
    }
    if (target === undefined) queues.push((target = new ProbeQueue(policies.map(copy), null, permits)));
    let t = now;
    let granted = false;
    const onGrant = (q: ScanQueue): void => {
      const p = q as ProbeQueue;
      if (p.cursor !== null) p.cursor = p.cursor.next;
      else {
        p.probe = 0;
        granted = p === target;
      }
    };
    // Each step grants at least the first stopped waiter (nothing ahead of it changes), so this ends.
    for (;;) {
      const wake = scanQueues(queues, t, nextEpoch++, onGrant);
      if (granted) return t - now;
      if (wake === Infinity) return Infinity;
      t = wake;
    }
  }

  /** Queues a waiter that could not be granted at once; the promise settles when granted or aborted. */
  enqueue(
    queue: WaitQueue,
    permits: number,
    now: number,
    signal: AbortSignal | undefined,
    hold: boolean,
    task?: Task,
  ): Promise<void> {
    const waiter = task === undefined ? new Waiter(permits, queue, hold) : new TaskWaiter(permits, queue, hold, task);
    const promise: Promise<void> = waiter;
    const front = queue.head === null;
    if (front) this.#activate(queue);
    queue.push(waiter);
    if (signal !== undefined) watch(signal, waiter);
    // Behind others on its own limiter, it waits for them and holds nothing; the front one is armed.
    if (!front) return promise;
    // At the front and last in arrival order: hold what stops it, and arm if that changes sooner.
    const policies = queue.policies;
    const epoch = this.epoch;
    let changeAt = Infinity;
    let held = false;
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i]!;
      if (policy.heldEpoch === epoch) {
        held = true;
        continue;
      }
      const at = policy.earliest(permits, now);
      if (at > now) {
        policy.heldEpoch = epoch;
        if (at < changeAt) changeAt = at;
      }
    }
    if (!held && changeAt === Infinity) this.scan(now); // grantable after all (defensive)
    else if (changeAt < this.#timerAt) this.#arm(changeAt, now);
    return promise;
  }

  /** Ends held grants (their task completed) and lets waiters use the capacity that frees. */
  release(policies: readonly Policy[], permits: number): void {
    const now = this.now();
    for (let i = 0; i < policies.length; i++) policies[i]!.release?.(permits, now);
    this.scan(now);
  }

  /**
   * Stamps held grants with the time their task starts, during the drain of a grant pass; the gate
   * is rescanned once the drain ends (a pass per task would be wasted work).
   */
  stampStart(policies: readonly Policy[], permits: number): void {
    const now = this.now();
    for (let i = 0; i < policies.length; i++) policies[i]!.release?.(permits, now);
    stamped.add(this);
  }

  /** Grants nothing on `policies` for `ms`; queued waiters keep their places. */
  pause(policies: readonly Policy[], ms: number): void {
    const now = this.now();
    for (let i = 0; i < policies.length; i++) policies[i]!.pause(now + ms);
    this.scan(now);
  }

  /** Runs the grant rule now and re-arms the timer for the next change. */
  scan(now: number = this.now()): void {
    let granted: Waiter[] | undefined;
    let wake = Infinity;
    // A new epoch invalidates every held-mark, including those of waiters that have since left.
    const epoch = nextEpoch++;
    this.epoch = epoch;
    if (this.active.size > 0) {
      wake = scanQueues([...this.active], now, epoch, (q) => {
        const queue = q as WaitQueue;
        const waiter = queue.head!;
        queue.unlink(waiter);
        if (queue.head === null) this.active.delete(queue);
        // Granted: its signal can no longer take it back (a task run in this drain may abort it).
        if (waiter.signal !== undefined) unwatch(waiter);
        (granted ??= []).push(waiter);
      });
    }
    this.#arm(wake, now);
    if (granted !== undefined) {
      settleInOrder(granted);
    }
  }

  /** Moves every queue of `other`'s domain into this one (both must share the clock). */
  merge(other: Gate): Gate {
    const a = this.root();
    const b = other.root();
    if (a === b) return a;
    if (a.clock !== b.clock) {
      throw new TypeError("`combine` needs limiters that share one clock, got limiters with different clocks");
    }
    for (const queue of b.active) a.#activate(queue);
    b.active.clear();
    b.#arm(Infinity, 0);
    b.forward = a;
    if (b.#lastNow > a.#lastNow) a.#lastNow = b.#lastNow;
    a.scan();
    return a;
  }

  /** How many waiters are queued in this domain. */
  get waiting(): number {
    let n = 0;
    for (const q of this.active) n += q.size;
    return n;
  }

  /** True while the gate has a timer armed (only while waiters exist). */
  get hasTimer(): boolean {
    return this.#timer !== undefined;
  }

  #activate(queue: WaitQueue): void {
    queue.gate = this;
    this.active.add(queue);
  }

  /** Takes a waiter out of its queue (it was aborted); the caller rescans. */
  detach(waiter: Waiter): void {
    const queue = waiter.queue;
    queue.unlink(waiter);
    if (queue.head === null) this.active.delete(queue);
  }

  #arm(wake: number, now: number): void {
    if (wake === this.#timerAt && this.#timer !== undefined) return;
    if (this.#timer !== undefined) {
      this.clock.clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    this.#timerAt = wake;
    if (wake === Infinity) return;
    const delay = Math.min(MAX_TIMER_DELAY, Math.max(0, wake - now));
    this.#timer = this.clock.setTimeout(this.#onTimer, delay);
  }

  readonly #onTimer = (): void => {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    this.scan();
  };
}

/**
 * One abort listener per signal, however many waiters use it: runtimes check listeners for
 * duplicates on every `addEventListener`, so one listener per waiter would cost O(n²) when many
 * callers share a signal.
 */
interface SignalWatch {
  readonly waiters: Set<Waiter>;
  readonly onAbort: () => void;
}
const watches = new WeakMap<AbortSignal, SignalWatch>();

function watch(signal: AbortSignal, waiter: Waiter): void {
  waiter.signal = signal;
  let entry = watches.get(signal);
  if (entry === undefined) {
    const waiters = new Set<Waiter>();
    entry = { waiters, onAbort: () => abortAll(signal, waiters) };
    watches.set(signal, entry);
    signal.addEventListener("abort", entry.onAbort, { once: true });
  }
  entry.waiters.add(waiter);
}

/** Rejects every waiter of an aborted signal, in arrival order, then rescans each gate once. */
function abortAll(signal: AbortSignal, waiters: Set<Waiter>): void {
  watches.delete(signal);
  const reason = abortReason(signal);
  const gates = new Set<Gate>();
  for (const waiter of waiters) {
    const gate = waiter.queue.gate!;
    gate.detach(waiter);
    gates.add(gate);
    waiter.signal = undefined;
    waiter.resolve(Promise.reject(reason));
  }
  waiters.clear();
  // The aborted waiters may have held places that others were queued behind.
  for (const gate of gates) gate.scan();
}

/** Stops watching a granted waiter's signal. */
function unwatch(waiter: Waiter): void {
  const signal = waiter.signal!;
  waiter.signal = undefined;
  const entry = watches.get(signal);
  if (entry !== undefined) {
    entry.waiters.delete(waiter);
    if (entry.waiters.size === 0) {
      watches.delete(signal);
      signal.removeEventListener("abort", entry.onAbort);
    }
  }
}

/** Resolves a granted waiter that has left its queue (running its task, if it carries one). */
function settle(waiter: Waiter): void {
  if (waiter instanceof TaskWaiter) {
    let onDone: (() => void) | undefined;
    if (waiter.hold) {
      const queue = waiter.queue;
      const gate = queue.gate!.root();
      if (queue.countFrom === "start") gate.stampStart(queue.policies, waiter.permits);
      else onDone = () => gate.root().release(queue.policies, waiter.permits);
    }
    waiter.resolve(runTask(waiter.task, onDone) as PromiseLike<void>);
  }
  else waiter.resolve();
}

/** The reason a signal was aborted with, or a standard AbortError where the runtime gives none. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

export { RESOLVED };
