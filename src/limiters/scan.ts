/**
 * The grant rule as a pure pass over queue heads at one instant. Used by the gate (`gate.ts`) on the
 * live queues and by predictions (`predict.ts`) on copies.
 *
 * The grant rule — reservations with backfilling, as EASY/conservative backfilling in job schedulers —
 * evaluated by {@link scanQueues} at each instant, visiting the front waiter of each limiter (the one
 * its priorities put first) in the arrival order of those FRONT waiters (a waiter behind another on
 * the same limiter waits for it: FIFO per limiter and priority). A priority thus reorders the callers
 * of one limiter only: a front waiter keeps its own place, never the earlier place of an older waiter
 * it passed, so a later high-priority caller of a member never goes before a combination's earlier
 * waiter (which would starve it while the older low-priority waiter is held back).
 *   a front waiter W is granted when every policy allows it now and taking its permits would not push
 *   any earlier stopped waiter past its reservation; otherwise W is stopped and *reserves* its time
 *   T = max over its policies of `earliest(n, now)` — or, when they all allow it now and only earlier
 *   reservations stop it, the latest reserved time among those it would delay (they go first, and
 *   their times are fixed) — and a later request may take a policy W needs only if,
 *   after that take, W still fits on it by T (checked on a copy of the policy, see `conflictsUntil`).
 * Only FRONT waiters reserve: a waiter behind W on W's limiter has no reservation, so a later request
 * on another limiter may take room it was predicted to use (a known limitation, stated in the README
 * "How it works" and on `maxWait`: its prediction is then exceeded).
 * So a later request on another channel still flows when it does not delay W (W waits for its own
 * channel; the overall limit has room for both), and otherwise queues. A later request never pushes
 * a stopped waiter past its T, and the earliest stopped waiter of the domain has no earlier
 * reservation to wait for (its T is its own time), so it is granted by its T, then the next one
 * becomes the earliest: nobody starves — not a combination beside callers looping on each of its
 * members (the waiter no longer lets go of one limit while it waits for the other), not a large
 * request behind a stream of small ones. Earlier waiters do go first: a waiter's T may move later when
 * an earlier one is granted (and later requests are checked against each reservation on its own, so
 * their takes plus an earlier waiter's may together delay a waiter that shares a limit with both, or
 * make a conflicted waiter, below, wait for one more earlier reservation: late, never starved).
 * A waiter with no finite T (it waits for in-flight work to complete: `countFrom: "completion"`), or
 * stuck behind one, falls back to holding the policies that stop it, which nobody else may take.
 * Reserved times are fixed and permits taken stay counted past them, so the passing of time alone
 * never undoes a conflict: the timer is armed for the earliest time a stopped waiter's own policies
 * free up, and one pass in arrival order decides the instant.
 *
 * Reservation refresh — the reservations a decision reads are always those a pass would compute at
 * that instant from the state as it is then (the reference model recomputes them at every pass). A
 * waiter stopped by its own policies keeps its time T until the next scan: nothing taken meanwhile
 * may push it past T, so its own time stays T. A *conflicted* waiter — its policies allow it now and
 * only earlier reservations stop it — does not: its reservation depends on the instant and on what is
 * taken. A take that leaves it short now makes it reserve its own capacity time instead (possibly
 * sooner than the earlier reservation it waited for), and more taken, or a later instant, may make it
 * delay more of them. So (1) a pass starts over after a grant that follows a conflicted waiter
 * (`scanQueues`), and (2) after a take at once (`Gate.tryTakeNow`) or at a later instant, a decision about
 * a request on a policy a conflicted waiter reserved first rescans (`Gate.refresh`). Without conflicted
 * waiters (one queue, or nobody contending) neither happens: the fast paths are unchanged.
 *
 * @module
 */
import type { Policy } from "./policy.ts";

/** Global scan epochs, so a policy's held-mark from one gate never matches another gate's scan. */
let nextEpoch = 1;

/**
 * A fresh scan epoch: marks made under an older epoch no longer count.
 *
 * @example
 * ```ts
 * const epoch = newEpoch(); // policy.heldEpoch === epoch now means "held in this scan"
 * ```
 */
export function newEpoch(): number {
  return nextEpoch++;
}

/** What a scan needs from a queue: its policies and its head. */
export interface ScanQueue {
  readonly policies: readonly Policy[];
  isEmpty(): boolean;
  headSeq(): number;
  headPermits(): number;
  /** The head's own amount per policy (a reservation across named dimensions), or null: `headPermits` on each. */
  headAmounts(): readonly number[] | null;
  headHolds(): boolean;
}

/**
 * What a request asks of its i-th policy: its own amount per policy when it has them, else the same
 * `permits` of each. A policy asked 0 takes no part in the decision (a dimension left out).
 *
 * @example
 * ```ts
 * amountAt(null, 0, 3); // 3
 * amountAt([1, 1500], 1, 1); // 1500
 * ```
 */
export function amountAt(amounts: readonly number[] | null, i: number, permits: number): number {
  return amounts === null ? permits : amounts[i]!;
}

/**
 * Reservations of the stopped front waiters of one scan: per policy, flat pairs (permits, time) —
 * "a waiter needing `permits` of this policy is due by `time`". A later request may take the policy
 * only if every such waiter still fits by its time afterwards (see {@link conflictsUntil}).
 */
export type Reservations = Map<Policy, number[]>;

/**
 * Whether taking `permits` of `policies` at `now` would push an earlier stopped waiter's grant past
 * its reserved time (evaluated on a copy of each reserved policy, after the hypothetical take): the
 * latest reserved time among the waiters it would delay, or `-Infinity` when it delays none. A
 * request stopped only by that is due no earlier than that time: the earlier waiter goes first, and
 * until then the conflict stands (its time is fixed, and permits taken stay counted).
 *
 * @example
 * ```ts
 * if (conflictsUntil(queue.policies, 1, now, gate.reserved) === -Infinity) take();
 * ```
 */
export function conflictsUntil(
  policies: readonly Policy[],
  permits: number,
  now: number,
  reserved: Reservations,
  amounts: readonly number[] | null = null,
): number {
  let until = -Infinity;
  if (reserved.size === 0) return until;
  for (let i = 0; i < policies.length; i++) {
    const policy = policies[i]!;
    const list = reserved.get(policy);
    const n = amountAt(amounts, i, permits);
    if (list === undefined || n === 0) continue;
    let copy: Policy | undefined;
    for (let k = 0; k < list.length; k += 2) {
      const by = list[k + 1]!;
      if (by <= until) continue;
      let at: number;
      if (policy.earliestAfter !== undefined) at = policy.earliestAfter(n, list[k]!, now);
      else {
        if (copy === undefined) {
          copy = policy.clone(now);
          copy.take(n, now, false);
        }
        at = copy.earliest(list[k]!, now);
      }
      if (at > Math.max(by, now)) until = by;
    }
  }
  return until;
}

/**
 * Records that a stopped waiter needing `permits` of `policies` is due by `at`.
 *
 * @example
 * ```ts
 * reserve(queue.policies, 2, 1500, reserved); // later takes must leave it 2 permits by t=1500
 * ```
 */
export function reserve(
  policies: readonly Policy[],
  permits: number,
  at: number,
  reserved: Reservations,
  amounts: readonly number[] | null = null,
): void {
  for (let i = 0; i < policies.length; i++) {
    const n = amountAt(amounts, i, permits);
    if (n === 0) continue;
    const list = reserved.get(policies[i]!);
    if (list === undefined) reserved.set(policies[i]!, [n, at]);
    else list.push(n, at);
  }
}

/**
 * What a pass reports besides its wake time (see {@link scanQueues}).
 *
 * @example
 * ```ts
 * const report: ScanReport = { conflicted: false };
 * scanQueues(queues, now, newEpoch(), grant, reserved, report); // report.conflicted: refresh before reuse
 * ```
 */
export interface ScanReport {
  /**
   * True when a head left stopped reserves a time only because earlier reservations stop it (its own
   * policies allow it now): such a reservation is of this instant and this state (see "reservation
   * refresh" in the module note), so the gate recomputes it before the next decision that
   * reads it at another instant or after a take.
   */
  conflicted: boolean;
}

/**
 * One pass of the grant rule at `now` over `queues` (see the module note). Calls
 * `grant(queue)` for each head granted, in arrival order, after taking its permits; fills `reserved`
 * with the reservations of the heads it stops. Returns the next time the outcome can change, or
 * `Infinity`: the earliest instant at which any stopped head's binding policy frees up.
 *
 * Reservations are always those of the current state: a grant after a head stopped only by earlier
 * reservations (a "conflicted" head, whose reservation depends on what is taken) starts the pass over,
 * so that head's reservation is recomputed after the take — the take may leave its own policies
 * short now, and it then reserves its own time instead (see "reservation refresh" in the module note).
 * A head stopped by its own policies keeps its reservation through later grants (they were checked
 * not to delay it past that time, so its own time stays the same), hence no restart for those.
 *
 * A head stopped only by an earlier reservation has no time of its own to wait for: it is granted when
 * that earlier waiter is (a later take never frees what a reservation needs, and the passing of time
 * alone does not undo a conflict for these policies: the permits taken stay counted past the
 * reserved time), so the earlier waiter's own change time covers it.
 */
export function scanQueues(
  queues: readonly ScanQueue[],
  now: number,
  epoch: number,
  grant: (queue: ScanQueue) => void,
  reserved: Reservations,
  report?: ScanReport,
): number {
  let heap = queues.filter((q) => !q.isEmpty());
  for (let i = (heap.length >> 1) - 1; i >= 0; i--) siftDown(heap, i);
  /** Heads stopped without a finite reservation: they hold what stops them (the older, weaker rule). */
  const holding: ScanQueue[] = [];
  let wake = Infinity;
  /** The latest arrival among the heads stopped so far in this pass. */
  let stoppedSeq = -Infinity;
  /** True once a head stopped only by earlier reservations was passed in this pass. */
  let conflicted = false;
  while (heap.length > 0) {
    const queue = heap[0]!;
    const permits = queue.headPermits();
    const amounts = queue.headAmounts();
    const policies = queue.policies;
    let blocked = false;
    let held = false;
    let due = now;
    let changeAt = Infinity;
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i]!;
      const n = amountAt(amounts, i, permits);
      if (n === 0) continue;
      if (policy.heldEpoch === epoch) {
        held = true; // queues behind an earlier waiter with no reservation time
        continue;
      }
      const at = policy.earliest(n, now);
      if (at > now) {
        blocked = true;
        if (at > due) due = at;
        if (at < changeAt) changeAt = at;
      }
    }
    // Only a head its own policies allow now is checked against earlier reservations: a blocked one
    // reserves its own time, and is checked when that comes.
    const until = blocked || held ? -Infinity : conflictsUntil(policies, permits, now, reserved, amounts);
    if (!blocked && !held && until === -Infinity) {
      const hold = queue.headHolds();
      for (let i = 0; i < policies.length; i++) {
        const n = amountAt(amounts, i, permits);
        if (n !== 0) policies[i]!.take(n, now, hold);
      }
      grant(queue);
      // A head without a reservation time may now be stopped by this grant as well.
      for (let j = 0; j < holding.length; j++) {
        const at = holdStopping(holding[j]!, now, epoch, policies);
        if (at < wake) wake = at;
      }
      if (queue.isEmpty()) popRoot(heap);
      else siftDown(heap, 0);
      if (conflicted || (!queue.isEmpty() && queue.headSeq() < stoppedSeq)) {
        // The pass starts over (the reservations and holds of the heads already stopped are redone
        // after this grant) when (a) a head stopped only by earlier reservations was passed: this
        // take may have changed its reservation (see the note above); or (b) the queue's new front (an
        // older waiter a priority had passed) arrived before heads already stopped in this pass: it
        // goes before them. Each restart follows a grant, so the pass ends.
        reserved.clear();
        for (let j = 0; j < holding.length; j++) {
          for (const policy of holding[j]!.policies) if (policy.heldEpoch === epoch) policy.heldEpoch = 0;
        }
        holding.length = 0;
        wake = Infinity;
        stoppedSeq = -Infinity;
        conflicted = false;
        heap = queues.filter((q) => !q.isEmpty());
        for (let i = (heap.length >> 1) - 1; i >= 0; i--) siftDown(heap, i);
      }
      continue;
    }
    const seq = queue.headSeq();
    if (seq > stoppedSeq) stoppedSeq = seq;
    if (changeAt < wake) wake = changeAt;
    if (held || due === Infinity) {
      // Its grant time is unknown (it waits for in-flight work, or behind such a waiter): it holds
      // the policies that stop it, as a plain FIFO would.
      for (let i = 0; i < policies.length; i++) {
        const policy = policies[i]!;
        const n = amountAt(amounts, i, permits);
        if (n !== 0 && policy.heldEpoch !== epoch && policy.earliest(n, now) > now) policy.heldEpoch = epoch;
      }
      holding.push(queue);
    } else {
      if (until !== -Infinity) conflicted = true;
      reserve(policies, permits, Math.max(due, until), reserved, amounts);
    }
    popRoot(heap);
  }
  if (report !== undefined) report.conflicted = conflicted;
  return wake;
}

/**
 * Marks as held the policies among `granted` that now stop `queue`'s head; returns the earliest time
 * one of them frees up for it.
 */
function holdStopping(queue: ScanQueue, now: number, epoch: number, granted: readonly Policy[]): number {
  const permits = queue.headPermits();
  const amounts = queue.headAmounts();
  let changeAt = Infinity;
  const policies = queue.policies;
  for (let i = 0; i < policies.length; i++) {
    const policy = policies[i]!;
    const n = amountAt(amounts, i, permits);
    if (n === 0 || policy.heldEpoch === epoch || !granted.includes(policy)) continue;
    const at = policy.earliest(n, now);
    if (at > now) {
      policy.heldEpoch = epoch;
      if (at < changeAt) changeAt = at;
    }
  }
  return changeAt;
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
