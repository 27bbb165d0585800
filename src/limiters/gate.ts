/**
 * The gate: the one waiting mechanism every limiter shares. Policies decide (`earliest`/`take`);
 * the gate queues callers, arms ONE timer for the whole domain, and grants in order.
 *
 * A *domain* is a set of limiters connected through shared policies (e.g. an overall limit and the
 * per-channel combinations that include it). It has one gate, one timer and one order. Each limiter
 * object owns a {@link WaitQueue} (FIFO per priority, see `priority.ts`); every waiter carries a
 * global arrival number (`seq`).
 *
 * The grant rule — reservations with backfilling, and when reservations are recomputed — is
 * stated in `scan.ts`, which evaluates it; the gate keeps the queues, the reservations of the last
 * scan (`reserved`), and the one timer.
 *
 * Invariants: waiters take nothing until granted (a reservation is a rule for others, not a take), so an abort leaves the domain
 * exactly as if the waiter had never asked (with one exception, for priorities: the waiter behind an
 * aborted front of its priority level starts aging at the abort, see `priority.ts`); the timer is armed only while waiters exist, so an idle
 * limiter keeps no process alive; delays are capped and re-checked (see `gate-timer.ts`).
 *
 * @module
 */
import { rejectAll } from "./gate-fail.ts";
import { GateTimer } from "./gate-timer.ts";
import type { Policy } from "./policy.ts";
import { simulate, TailCache } from "./predict.ts";
import { amountAt, conflictsUntil, newEpoch, reserve, type Reservations, type ScanReport, scanQueues } from "./scan.ts";
import { RESOLVED, settleInOrder, stamped, startTask } from "./settle.ts";
import { abortReason, unwatch, watch } from "./signals.ts";
import { abortedAt, grantedInScan } from "./stats.ts";
import { CompletionTaskWaiter, type Task, TaskWaiter, Waiter, WaitQueue } from "./waiter.ts";

export { abortReason, RESOLVED, startTask, type Task, Waiter, WaitQueue };

/** Never written to: see {@link Gate.reserved}. */
const NO_RESERVATIONS: Reservations = new Map();

/** The gate's record of its last scan (see `Gate`); `conflicted` is filled by `scanQueues`. */
interface ScanState extends ScanReport {
  /** True when a waiter holds policies (no reserved time) as of the last scan or enqueue. */
  holding: boolean;
  /** The time of the last scan; `NaN` once a take outside a scan may have changed a reservation. */
  at: number;
}

/** The waiting mechanism of one domain. Limiters reach it through {@link Gate.root}. */
export class Gate extends GateTimer {
  /**
   * How many gates this domain was made of. Merging keeps the larger domain's gate, so combinations
   * made and dropped again and again (a `KeyedLimiter` of `combine(overall, perKey)`) fold into the
   * overall's gate instead of each becoming the new root and leaving a chain of forwards behind.
   */
  #weight = 1;
  /** Set when this gate was merged into another; follow it with {@link Gate.root}. */
  forward: Gate | null = null;
  /** Queues that have waiters. */
  readonly active: Set<WaitQueue> = new Set();
  /** The epoch of the last scan: a policy with this `heldEpoch` is held by a waiter. */
  epoch: number = newEpoch();
  /**
   * The reservations of the stopped front waiters, as of the last scan (plus fronts queued since).
   * A shared empty map while nobody waits, so an idle limiter (one per key) carries no map of its own.
   */
  reserved: Reservations = NO_RESERVATIONS;
  /** Predictions' cache while the domain has one queue (see {@link TailCache}); dropped on any change. */
  #tail: TailCache | undefined = undefined;
  /**
   * What the last scan left besides `reserved` — one object, filled by each scan, not four fields:
   * every field a Gate adds beyond V8's in-object room for the class moves to a slower backing
   * store, and three more fields here once doubled the cost of `tryAcquire` (bench section 1).
   */
  readonly #scanned: ScanState = { holding: false, conflicted: false, at: NaN };

  /** The gate that currently owns this domain (gates merge when limiters are combined). */
  root(): Gate {
    let gate: Gate = this;
    while (gate.forward !== null) gate = gate.forward;
    return gate;
  }

  /** Fails the domain (see `gate-fail.ts`): no timer, no reservations, every waiter rejected. */
  protected failAll(error: unknown): void {
    this.arm(Infinity, 0);
    this.reserved = NO_RESERVATIONS;
    this.#tail = undefined;
    this.#scanned.holding = false;
    this.#scanned.conflicted = false;
    rejectAll(this.active, error);
  }

  /**
   * True while a waiter holds any of these policies that the request asks (a newcomer must queue
   * behind it); `amounts` as in `amountAt` (a policy asked 0 takes no part).
   */
  isHeld(policies: readonly Policy[], amounts: readonly number[] | null = null): boolean {
    for (let i = 0; i < policies.length; i++) {
      if (policies[i]!.heldEpoch === this.epoch && amountAt(amounts, i, 1) !== 0) return true;
    }
    return false;
  }

  /**
   * Grants now if nobody is ahead and every policy allows it; returns whether it did. Call
   * {@link Gate.serveOverdue} first: those already due go before a newcomer.
   */
  tryTakeNow(
    queue: WaitQueue,
    permits: number,
    now: number,
    hold: boolean,
    amounts: readonly number[] | null = null,
  ): boolean {
    if (queue.size > 0) return false;
    const policies = queue.policies;
    this.refresh(policies, now, amounts);
    if (this.isHeld(policies, amounts)) return false;
    for (let i = 0; i < policies.length; i++) {
      const n = amountAt(amounts, i, permits);
      if (n !== 0 && policies[i]!.earliest(n, now) > now) return false;
    }
    if (conflictsUntil(policies, permits, now, this.reserved, amounts) !== -Infinity) return false;
    for (let i = 0; i < policies.length; i++) {
      const n = amountAt(amounts, i, permits);
      if (n !== 0) policies[i]!.take(n, now, hold);
    }
    this.#tail = undefined;
    // The take delayed no reservation; a conflicted front's may change (see `refresh`). A waiter that
    // holds policies instead (no reserved time) may now be stopped by what this took: recompute.
    if (this.#scanned.conflicted) this.#scanned.at = NaN;
    if (this.active.size > 0 && this.#scanned.holding) this.scan(now);
    return true;
  }

  /**
   * Rescans at `now` when a decision about a request on `policies` would read a reservation that may
   * be stale: a conflicted front's (see "reservation refresh" in `scan.ts`), reserved on one of
   * these policies, computed at another instant or before a take. Nothing to do otherwise: the other
   * reservations are the same at any instant until the next scan.
   */
  refresh(policies: readonly Policy[], now: number, amounts: readonly number[] | null = null): void {
    if (!this.#scanned.conflicted || this.#scanned.at === now) return;
    const reserved = this.reserved;
    for (let i = 0; i < policies.length; i++) {
      if (amountAt(amounts, i, 1) !== 0 && reserved.has(policies[i]!)) {
        this.scan(now);
        return;
      }
    }
  }

  /**
   * The wait in ms before `permits` asked of `queue` now would be granted, behind everyone already
   * queued. Exact for the current state (it runs the grant rule on copies of the policies); O(1)
   * when nobody waits in the domain; amortised O(1) per request appended to a domain's only queue
   * (see {@link TailCache}); else proportional to the waiters in the domain. `limit` is the longest
   * wait the caller accepts (its `maxWait`; 0 for `tryAcquire`): a cached figure that a fresh one
   * could put on the other side of it is computed afresh.
   */
  predict(queue: WaitQueue, permits: number, now: number, amounts: readonly number[] | null = null, priority = 0, limit = 0): number {
    const policies = queue.policies;
    // Only with nobody waiting anywhere in the domain: a waiter on another channel may take a shared
    // policy first, even one that stops it on nothing this request needs.
    if (this.active.size === 0) {
      let at = now;
      for (let i = 0; i < policies.length; i++) {
        const n = amountAt(amounts, i, permits);
        if (n !== 0) at = Math.max(at, policies[i]!.earliest(n, now));
      }
      if (at !== Infinity) return at - now; // else only in-flight work blocks: simulate its completion
    } else if (this.active.size === 1 && this.active.has(queue) && priority === 0 && queue.levels === null) {
      if (this.#tail?.queue !== queue) this.#tail = new TailCache(queue, now);
      const wait = this.#tail.predict(permits, now, amounts);
      // A cache made while work was in flight assumed it ended then; made afresh it would end now,
      // and the wait could be up to `stale` longer. Made afresh when that could change the caller's
      // answer (granted now, within maxWait); else the cheaper, lower figure is still a lower bound.
      const stale = this.#tail.staleBy(now);
      if (stale === 0 || wait > limit || wait + stale <= limit) return wait;
      this.#tail = new TailCache(queue, now);
      return this.#tail.predict(permits, now, amounts);
    }
    return simulate(this.active, queue, permits, now, amounts, priority);
  }

  /** Queues a waiter that could not be granted at once; the promise settles when granted or aborted. */
  enqueue(
    queue: WaitQueue,
    permits: number,
    now: number,
    signal: AbortSignal | undefined,
    hold: boolean,
    task?: Task,
    priority = 0,
    arrival?: number,
    completion = false,
  ): Promise<void> {
    const waiter = task === undefined
      ? new Waiter(permits, queue, hold)
      : completion
      ? new CompletionTaskWaiter(permits, queue, hold, task)
      : new TaskWaiter(permits, queue, hold, task);
    return this.enqueueWaiter(waiter, now, signal, priority, arrival);
  }

  /**
   * Queues a waiter made by the caller (a reservation's, see `reservation.ts`); see {@link Gate.enqueue}.
   * With `arrival` (see `ARRIVAL` in `waiter.ts`) it takes that place in its priority's FIFO, not the last.
   */
  enqueueWaiter(waiter: Waiter, now: number, signal: AbortSignal | undefined, priority = 0, arrival?: number): Promise<void> {
    const queue = waiter.queue;
    const permits = waiter.permits;
    const amounts = waiter.amounts();
    const promise: Promise<void> = waiter;
    const front = queue.size === 0;
    if (front) this.#activate(queue);
    if (arrival !== undefined) waiter.seq = arrival;
    if (arrival !== undefined && !front) {
      // An earlier arrival goes back to its place: the order (and the predictions' cache, which
      // assumes appends) changed; at the front it displaces the waiter that reserved the next grant.
      queue.insert(waiter, priority, now);
      if (queue.arrivals !== null) queue.arrivals.set(waiter, now);
      if (signal !== undefined) watch(signal, waiter);
      this.#tail = undefined;
      if (queue.front() === waiter) this.scan(now);
      return promise;
    }
    queue.push(waiter, priority, now);
    if (queue.arrivals !== null) queue.arrivals.set(waiter, now);
    if (signal !== undefined) watch(signal, waiter);
    if (!front) {
      // Its priority put it first on its limiter: the waiter it passed no longer reserves; recompute.
      if (queue.levels !== null && queue.front() === waiter) this.scan(now);
      // Behind others on its own limiter, it waits for them and holds nothing; the front one is armed.
      return promise;
    }
    if (arrival !== undefined && this.active.size > 1) {
      // Not necessarily last in the domain's arrival order, which the shortcut below assumes.
      this.scan(now);
      return promise;
    }
    // At the front and last in arrival order: hold what stops it, and arm if that changes sooner.
    // (What `scanQueues` does for a stopped head, done for this one alone, on fresh reservations.)
    const policies = queue.policies;
    if (this.#scanned.conflicted && this.#scanned.at !== now) {
      this.scan(now);
      return promise;
    }
    const epoch = this.epoch;
    let changeAt = Infinity;
    let due = now;
    const held = this.isHeld(policies, amounts);
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i]!;
      const n = amountAt(amounts, i, permits);
      if (n === 0 || policy.heldEpoch === epoch) continue;
      const at = policy.earliest(n, now);
      if (at > now) {
        if (at > due) due = at;
        if (at < changeAt) changeAt = at;
      }
    }
    if (held || due === Infinity) {
      this.#scanned.holding = true;
      for (let i = 0; i < policies.length; i++) {
        const policy = policies[i]!;
        const n = amountAt(amounts, i, permits);
        if (n !== 0 && policy.heldEpoch !== epoch && policy.earliest(n, now) > now) policy.heldEpoch = epoch;
      }
    } else {
      const until = changeAt === Infinity ? conflictsUntil(policies, permits, now, this.reserved, amounts) : -Infinity;
      if (changeAt === Infinity && until === -Infinity) {
        this.scan(now); // grantable after all (defensive)
        return promise;
      }
      if (this.reserved === NO_RESERVATIONS) this.reserved = new Map();
      if (until !== -Infinity) {
        // Of this instant; the others were fresh here (else the rescan above), so all of them are now.
        this.#scanned.conflicted = true;
        this.#scanned.at = now;
      }
      reserve(policies, permits, Math.max(due, until), this.reserved, amounts);
    }
    if (changeAt < this.timerAt) this.arm(changeAt, now);
    return promise;
  }

  /** Ends held grants (their task completed) and lets waiters use the capacity that frees. */
  release(policies: readonly Policy[], permits: number): void {
    const now = this.nowOrFail();
    if (now === undefined) return;
    for (let i = 0; i < policies.length; i++) policies[i]!.release?.(permits, now);
    this.scan(now);
  }

  /**
   * Ends a task's grant on a limiter that holds concurrency slots (see `concurrency.ts`): frees them,
   * releases permits held until completion when `release`, and lets waiters use what that frees.
   */
  finish(policies: readonly Policy[], permits: number, release: boolean): void {
    const now = this.nowOrFail();
    if (now === undefined) return;
    for (let i = 0; i < policies.length; i++) {
      if (release) policies[i]!.release?.(permits, now);
      policies[i]!.finish?.(permits, now);
    }
    this.scan(now);
  }

  /**
   * Ends the grant of a task that never started (its caller left at the grant, see `Unstarted`):
   * permits held until completion (`held`) count for nothing, slots are freed. Permits a policy
   * counted at the grant itself stay counted.
   */
  unstarted(policies: readonly Policy[], permits: number, held: boolean): void {
    const now = this.nowOrFail();
    if (now === undefined) return;
    for (let i = 0; i < policies.length; i++) {
      if (held) policies[i]!.unhold?.(permits);
      policies[i]!.finish?.(permits, now);
    }
    this.scan(now);
  }

  /**
   * Stamps held grants with the time their task starts, during the drain of a grant pass; the gate
   * is rescanned once the drain ends (a pass per task would be wasted work).
   */
  stampStart(policies: readonly Policy[], permits: number): void {
    const now = this.nowOrFail();
    if (now === undefined) return;
    for (let i = 0; i < policies.length; i++) policies[i]!.release?.(permits, now);
    this.#tail = undefined;
    stamped.add(this);
  }

  /** Grants nothing on `policies` for `ms`; queued waiters keep their places. Returns the end time. */
  pause(policies: readonly Policy[], ms: number): number {
    const now = this.now();
    for (let i = 0; i < policies.length; i++) policies[i]!.pause(now + ms);
    this.scan(now);
    return now + ms;
  }

  /** Runs the grant rule now and re-arms the timer for the next change. */
  scan(at?: number): void {
    const now = at ?? this.nowOrFail();
    if (now === undefined) return;
    let granted: Waiter[] | undefined;
    let wake = Infinity;
    this.#tail = undefined; // a scan follows any change but an append (grants, aborts, releases, pauses)
    // A new epoch invalidates every held-mark, including those of waiters that have since left.
    const epoch = newEpoch();
    this.epoch = epoch;
    this.reserved = NO_RESERVATIONS;
    this.#scanned.conflicted = false;
    this.#scanned.at = now;
    if (this.active.size > 0) {
      this.reserved = new Map();
      wake = scanQueues([...this.active], now, epoch, (q) => {
        const queue = q as WaitQueue;
        const waiter = queue.front()!;
        queue.unlink(waiter, now);
        if (queue.size === 0) this.#deactivate(queue);
        grantedInScan(queue, waiter, now);
        // Granted: its signal can no longer take it back (a task run in this drain may abort it).
        if (waiter.signal !== undefined) unwatch(waiter);
        waiter.granted(now);
        (granted ??= []).push(waiter);
      }, this.reserved, this.#scanned);
    }
    this.#scanned.holding = false;
    for (const queue of this.active) {
      if (this.isHeld(queue.policies)) {
        this.#scanned.holding = true;
        break;
      }
    }
    this.arm(wake, now);
    if (granted !== undefined) {
      settleInOrder(granted, this);
    }
  }

  /**
   * Joins `other`'s domain and this one (they must share the clock) under the gate of the larger —
   * this one's on a tie — and returns that gate.
   */
  merge(other: Gate): Gate {
    let a = this.root();
    let b = other.root();
    if (a === b) return a;
    if (a.clock !== b.clock) {
      throw new TypeError("`combine` needs limiters that share one clock, got limiters with different clocks");
    }
    if (b.#weight > a.#weight) [a, b] = [b, a];
    a.#weight += b.#weight;
    for (const queue of b.active) a.#activate(queue);
    b.active.clear();
    b.arm(Infinity, 0);
    b.#tail = undefined;
    b.forward = a;
    a.scan();
    return a;
  }

  /** How many waiters are queued in this domain. */
  get waiting(): number {
    let n = 0;
    for (const q of this.active) n += q.size;
    return n;
  }

  #activate(queue: WaitQueue): void {
    if (this.#tail !== undefined && this.#tail.queue !== queue) this.#tail = undefined;
    queue.gate = this;
    this.active.add(queue);
  }

  /** An empty queue forgets its gate: a stale reference would keep merged-away gates alive. */
  #deactivate(queue: WaitQueue): void {
    queue.gate = null;
    this.active.delete(queue);
  }

  /** Takes back a waiter that was never the caller's to wait (see `grantAhead`): no stats, no event. */
  withdraw(waiter: Waiter, now: number): void {
    const queue = waiter.queue;
    queue.unlink(waiter, now);
    queue.arrivals?.delete(waiter);
    if (queue.size === 0) this.#deactivate(queue);
    this.scan(now);
  }

  /**
   * Takes a waiter out of its queue (it was aborted); the caller rescans, then runs the returned
   * announcement (an `abort` event), if any, once the domain is consistent again.
   */
  detach(waiter: Waiter): (() => void) | undefined {
    const queue = waiter.queue;
    let now: number;
    try {
      now = this.now();
    } catch {
      now = -Infinity; // the rescan that follows fails the domain with the clock's error anyway
    }
    queue.unlink(waiter, now);
    if (queue.size === 0) this.#deactivate(queue);
    return abortedAt(queue, waiter, now);
  }
}
