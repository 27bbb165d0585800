/**
 * The gate: the one waiting mechanism every limiter shares. Policies decide (`earliest`/`take`);
 * the gate queues callers, arms ONE timer for the whole domain, and grants in order.
 *
 * A *domain* is a set of limiters connected through shared policies (e.g. an overall limit and the
 * per-channel combinations that include it). It has one gate, one timer and one order. Each limiter
 * object owns a FIFO {@link WaitQueue}; every waiter carries a global arrival number (`seq`).
 *
 * The grant rule, evaluated by {@link scanQueues} at each instant, visiting waiters in arrival order:
 *   a waiter is granted when none of its policies is *held* and every policy allows it now;
 *   otherwise it *holds* the policies that stop it: those held already (it queues behind the earlier
 *   waiter) and those whose `earliest` is still in the future.
 * So waiters are served first come, first served on every limiter they share; ties at one instant go
 * in submission order; and a waiter that only waits for its own channel's limit does not hold a place
 * on the shared (overall) limit — a request on another channel never waits for this channel's limit.
 * Because policies only become less available when granted and the held set only grows, one pass in
 * arrival order is a complete decision for that instant.
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

/** One queued request. Fields are plain for speed and a small footprint (100k waiters are normal). */
export class Waiter {
  readonly permits: number;
  readonly seq: number;
  prev: Waiter | null = null;
  next: Waiter | null = null;
  resolve: () => void = noop;
  reject: (reason: unknown) => void = noop;
  signal: AbortSignal | undefined = undefined;
  onAbort: (() => void) | undefined = undefined;

  constructor(permits: number) {
    this.permits = permits;
    this.seq = nextSeq++;
  }
}

function noop(): void {}

/** What a scan needs from a queue: its policies and its head. */
export interface ScanQueue {
  readonly policies: readonly Policy[];
  isEmpty(): boolean;
  headSeq(): number;
  headPermits(): number;
}

/** The FIFO of one limiter object: a doubly linked list, so an abort unlinks in O(1). */
export class WaitQueue implements ScanQueue {
  readonly policies: readonly Policy[];
  head: Waiter | null = null;
  tail: Waiter | null = null;
  size = 0;
  /** The gate this queue is registered with while it has waiters (kept current across merges). */
  gate: Gate | null = null;

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
 * each head granted, in arrival order, after taking its permits. Returns the next time something can
 * change (when the first stopped waiter becomes ready), or `Infinity`.
 *
 * `activeRefs`: when given, the pass stops early once a held policy is shared by every queue — e.g.
 * an overall limit that all channels wait on — since no later waiter can pass it.
 */
export function scanQueues(
  queues: readonly ScanQueue[],
  now: number,
  epoch: number,
  grant: (queue: ScanQueue) => void,
  activeRefs?: (policy: Policy) => number,
): number {
  const heap = queues.filter((q) => !q.isEmpty());
  for (let i = (heap.length >> 1) - 1; i >= 0; i--) siftDown(heap, i);
  let wake = Infinity;
  while (heap.length > 0) {
    const queue = heap[0]!;
    const permits = queue.headPermits();
    const policies = queue.policies;
    let ready = true;
    let readyAt = -Infinity;
    let allStopped = false;
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
        if (at > readyAt) readyAt = at;
        if (activeRefs !== undefined && activeRefs(policy) === queues.length) allStopped = true;
      }
    }
    if (ready) {
      for (let i = 0; i < policies.length; i++) policies[i]!.take(permits, now);
      grant(queue);
      if (queue.isEmpty()) popRoot(heap);
      else siftDown(heap, 0);
      continue;
    }
    if (readyAt !== -Infinity && readyAt < wake) wake = readyAt;
    if (allStopped) break;
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
}

const RESOLVED: Promise<void> = Promise.resolve();

/** The waiting mechanism of one domain. Limiters reach it through {@link Gate.root}. */
export class Gate {
  readonly clock: Clock;
  /** Set when this gate was merged into another; follow it with {@link Gate.root}. */
  forward: Gate | null = null;
  /** Queues that have waiters. */
  readonly active: Set<WaitQueue> = new Set();
  /** Per policy: how many active queues include it (for the scan's early stop). */
  readonly #refs = new Map<Policy, number>();
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
  tryTakeNow(queue: WaitQueue, permits: number, now: number): boolean {
    if (this.#timerAt <= now) this.scan(now); // an overdue timer: serve those already due first
    if (queue.head !== null) return false;
    const policies = queue.policies;
    if (this.isHeld(policies)) return false;
    for (let i = 0; i < policies.length; i++) if (policies[i]!.earliest(permits, now) > now) return false;
    for (let i = 0; i < policies.length; i++) policies[i]!.take(permits, now);
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
      return at - now;
    }
    const copies = new Map<Policy, Policy>();
    const copy = (p: Policy): Policy => {
      let c = copies.get(p);
      if (c === undefined) copies.set(p, (c = p.clone()));
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
  enqueue(queue: WaitQueue, permits: number, now: number, signal: AbortSignal | undefined): Promise<void> {
    const waiter = new Waiter(permits);
    const promise = new Promise<void>((resolve, reject) => {
      waiter.resolve = resolve;
      waiter.reject = reject;
    });
    if (queue.head === null) this.#activate(queue);
    queue.push(waiter);
    if (signal !== undefined) {
      waiter.signal = signal;
      waiter.onAbort = () => this.#abort(queue, waiter);
      signal.addEventListener("abort", waiter.onAbort, { once: true });
    }
    // The newcomer is last in order, so only its own stop matters: hold what stops it, arm if sooner.
    const policies = queue.policies;
    const epoch = this.epoch;
    let readyAt = -Infinity;
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
        if (at > readyAt) readyAt = at;
      }
    }
    if (!held && readyAt === -Infinity) this.scan(now); // grantable after all (defensive)
    else if (readyAt !== -Infinity && readyAt < this.#timerAt) this.#arm(readyAt, now);
    return promise;
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
    if (this.active.size > 0) {
      const epoch = nextEpoch++;
      this.epoch = epoch;
      const refs = this.#refs;
      wake = scanQueues(
        [...this.active],
        now,
        epoch,
        (q) => {
          const queue = q as WaitQueue;
          const waiter = queue.head!;
          queue.unlink(waiter);
          if (queue.head === null) this.#deactivate(queue);
          (granted ??= []).push(waiter);
        },
        (policy) => refs.get(policy) ?? 0,
      );
    }
    this.#arm(wake, now);
    if (granted !== undefined) {
      for (const waiter of granted) settle(waiter, true);
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
    for (const queue of b.active) {
      queue.gate = null;
      b.#deactivate(queue);
      a.#activate(queue);
    }
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
    for (const p of queue.policies) this.#refs.set(p, (this.#refs.get(p) ?? 0) + 1);
  }

  #deactivate(queue: WaitQueue): void {
    this.active.delete(queue);
    for (const p of queue.policies) {
      const n = (this.#refs.get(p) ?? 1) - 1;
      if (n === 0) this.#refs.delete(p);
      else this.#refs.set(p, n);
    }
  }

  #abort(queue: WaitQueue, waiter: Waiter): void {
    const gate = queue.gate;
    if (gate === null) return; // already granted
    queue.unlink(waiter);
    if (queue.head === null) gate.#deactivate(queue);
    settle(waiter, false);
    gate.scan(); // it may have held a place others were queued behind
  }

  #arm(wake: number, now: number): void {
    if (wake === this.#timerAt && this.#timer !== undefined) return;
    if (this.#timer !== undefined) {
      this.clock.clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    this.#timerAt = wake;
    if (wake === Infinity) return;
    const delay = Math.min(MAX_TIMER_DELAY, Math.max(0, Math.ceil(wake - now)));
    this.#timer = this.clock.setTimeout(this.#onTimer, delay);
  }

  readonly #onTimer = (): void => {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    this.scan();
  };
}

/** Resolves (granted) or rejects (aborted) a waiter that has left its queue. */
function settle(waiter: Waiter, granted: boolean): void {
  const signal = waiter.signal;
  if (signal !== undefined) {
    signal.removeEventListener("abort", waiter.onAbort!);
    waiter.signal = undefined;
    waiter.onAbort = undefined;
  }
  if (granted) waiter.resolve();
  else waiter.reject(abortReason(signal!));
}

/** The reason a signal was aborted with, or a standard AbortError where the runtime gives none. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

export { RESOLVED };
