/** Small helpers the case files share. */
import type { ManualClock } from "../../src/index.ts";

/** The virtual time at which `promise` fulfils (read from `clock` in its continuation). */
export function grantedAt(clock: ManualClock, promise: Promise<unknown>): Promise<number> {
  return promise.then(() => clock.now());
}

/** The most grants found in any half-open window `[t, t + interval)` of a sorted list of grant times. */
export function mostInAnyWindow(times: readonly number[], interval: number): number {
  let most = 0;
  let start = 0;
  for (let end = 0; end < times.length; end++) {
    while (times[start]! + interval <= times[end]!) start++;
    most = Math.max(most, end - start + 1);
  }
  return most;
}
