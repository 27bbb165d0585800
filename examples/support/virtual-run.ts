/**
 * Runs a batch of calls in the virtual time of a ManualClock: fires timers until every call has
 * settled, and fails loudly (instead of hanging) when the calls wait on something no timer will end.
 */
import type { ManualClock } from "../../src/testing.ts";

export async function runVirtually<T>(clock: ManualClock, calls: Promise<T>): Promise<T> {
  let done = false;
  const settled = calls.finally(() => (done = true));
  settled.catch(() => {});
  for (let idle = 0; !done;) {
    const fired = await clock.runAll();
    if (done) break;
    idle = fired === 0 ? idle + 1 : 0;
    if (idle > 3) throw new Error(`stalled at virtual t = ${clock.now()} ms: calls wait with no timer pending`);
  }
  return settled;
}
