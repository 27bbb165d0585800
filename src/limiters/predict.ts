/**
 * Predicting a wait: the grant rule run forward in time on copies of the policies, over the real
 * waiters (walked without copying) plus a probe request.
 *
 * @module
 */
import type { Policy } from "./policy.ts";
import { newEpoch, type ScanQueue, scanQueues } from "./scan.ts";
import type { Waiter, WaitQueue } from "./waiter.ts";

/** A queue seen by a prediction: walks the real waiters without copying, then a probe request. */
export class ProbeQueue implements ScanQueue {
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
