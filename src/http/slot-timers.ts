/**
 * The timers that free a concurrency slot nobody else will free: a response body nobody reads, whose
 * slot ends after `slotTimeout`. Such a timer must not keep a process alive by itself — an app that
 * forgot a body would hang at exit for 30 s — but while a caller waits for a slot, it may be the only
 * thing that will ever wake that caller: left unref'd, the runtime exits with the caller queued and
 * its promise never settled (red-team, 2026-11-27: four calls with `maxConcurrent: 2`, statuses read
 * and bodies not, ended the process after the second). So these timers are unref'd while no caller
 * waits for a slot, and ref'd while one does — for every throttled fetch and interceptor of the
 * process at once (a waiter of one may be held by a body of another only through a shared limiter,
 * but telling them apart would cost every wait a lookup; the cost of sharing is that a waiter keeps
 * other bodies' timers alive, at most `slotTimeout`).
 *
 * On a clock whose handles have no `ref`/`unref` (a `ManualClock`, a browser), this is plain timers.
 *
 * @module
 */
import type { Clock, TimerHandle } from "../clock.ts";

interface Refable {
  ref?(): unknown;
  unref?(): unknown;
}

/** Slot timers armed and not yet fired or cleared. */
const armed = new Set<Refable>();
/** Callers waiting for a grant that may need a slot. */
let waiting = 0;

/**
 * Arms a slot timer (see the module note). Clear it with {@link clearSlotTimer}. @internal
 *
 * @example
 * ```ts
 * const timer = armSlotTimer(clock, () => hold.release(), 30_000);
 * ```
 */
export function armSlotTimer(clock: Clock, callback: () => void, ms: number): TimerHandle {
  const handle = clock.setTimeout(() => {
    armed.delete(handle as Refable);
    callback();
  }, ms) as Refable | null;
  if (handle !== null && typeof handle === "object") {
    armed.add(handle);
    if (waiting === 0) handle.unref?.();
  }
  return handle as TimerHandle;
}

/** Clears a timer of {@link armSlotTimer}. @internal */
export function clearSlotTimer(clock: Clock, handle: TimerHandle): void {
  armed.delete(handle as Refable);
  clock.clearTimeout(handle);
}

/**
 * Marks a caller as waiting for a grant that may need a slot, until the returned function is called
 * (idempotent): meanwhile every slot timer keeps the process alive. @internal
 *
 * @example
 * ```ts
 * const done = waitForSlot();
 * try { await limiter.schedule(task); } finally { done(); }
 * ```
 */
export function waitForSlot(): () => void {
  if (waiting++ === 0) for (const handle of armed) handle.ref?.();
  let done = false;
  return () => {
    if (done) return;
    done = true;
    if (--waiting === 0) for (const handle of armed) handle.unref?.();
  };
}
