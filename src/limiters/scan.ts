/**
 * The grant rule as a pure pass over queue heads at one instant (see the module note of `gate.ts`).
 * Used by the gate on the live queues and by predictions on copies.
 *
 * @module
 */
import type { Policy } from "./policy.ts";

/** Global scan epochs, so a policy's held-mark from one gate never matches another gate's scan. */
let nextEpoch = 1;

/** A fresh scan epoch: marks made under an older epoch no longer count. */
export function newEpoch(): number {
  return nextEpoch++;
}

/** What a scan needs from a queue: its policies and its head. */
export interface ScanQueue {
  readonly policies: readonly Policy[];
  isEmpty(): boolean;
  headSeq(): number;
  headPermits(): number;
  headHolds(): boolean;
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
