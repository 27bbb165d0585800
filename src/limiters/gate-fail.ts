/**
 * Failing a whole domain: when its clock throws where nobody can catch it (a timer, a task's
 * completion, an abort listener), none of its waiters can be timed any more, so each is rejected
 * with the clock's error, in arrival order.
 *
 * @module
 */
import { unwatch } from "./signals.ts";
import type { Waiter, WaitQueue } from "./waiter.ts";

/** Empties `active` (the domain's queues) and rejects every waiter in it with `error`, in arrival order. */
export function rejectAll(active: Set<WaitQueue>, error: unknown): void {
  const failed: Waiter[] = [];
  for (const queue of active) {
    failed.push(...queue.waiters());
    queue.clear();
    queue.arrivals?.clear(); // failed, not granted nor aborted: nobody will ask how long they waited
    queue.gate = null;
  }
  active.clear();
  failed.sort((a, b) => a.seq - b.seq);
  const rejection = Promise.reject(error);
  rejection.catch(() => {});
  for (const waiter of failed) {
    waiter.prev = waiter.next = null;
    if (waiter.signal !== undefined) unwatch(waiter);
    waiter.resolve(rejection);
  }
}
