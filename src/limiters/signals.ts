/**
 * Abort signals of queued waiters: one listener per signal, however many waiters share it.
 *
 * @module
 */
import type { Gate } from "./gate.ts";
import type { Waiter } from "./waiter.ts";

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

export function watch(signal: AbortSignal, waiter: Waiter): void {
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
  let announce: Array<() => void> | undefined;
  for (const waiter of waiters) {
    const gate = waiter.queue.gate!;
    const event = gate.detach(waiter);
    if (event !== undefined) (announce ??= []).push(event);
    gates.add(gate);
    waiter.signal = undefined;
    waiter.resolve(Promise.reject(reason));
  }
  waiters.clear();
  // The aborted waiters may have held places that others were queued behind.
  for (const gate of gates) gate.scan();
  // Listeners hear of the aborts once the gates are consistent again.
  if (announce !== undefined) for (const event of announce) event();
}

/** Stops watching a granted waiter's signal. */
export function unwatch(waiter: Waiter): void {
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

/**
 * The brand of a limiter that reads only `aborted`, `reason` and the "abort" event
 * (`addEventListener` / `removeEventListener`) of the `signal` it is given — every built-in limiter.
 * An integration may hand such a limiter a lighter signal-like object (sluice/undici passes the
 * request's own controller) instead of making an AbortController per request; a custom `Limiter`,
 * typed to receive an AbortSignal and free to pass it to `AbortSignal.any`, gets a real one.
 * Registered with `Symbol.for`, so copies of sluice bundled into several entry points agree.
 *
 * @example
 * ```ts
 * readsSignalLike(new SmoothLimiter({ limit: 5 })); // true
 * readsSignalLike({ acquire, tryAcquire, schedule, pause }); // false: give it an AbortSignal
 * ```
 * @internal
 */
export const READS_SIGNAL_LIKE: unique symbol = Symbol.for("sluice.limiter.readsSignalLike");

/** True when `limiter` carries {@link READS_SIGNAL_LIKE}: a signal-like object will do for it. @internal */
export function readsSignalLike(limiter: object): boolean {
  return (limiter as { [READS_SIGNAL_LIKE]?: unknown })[READS_SIGNAL_LIKE] === true;
}

/** The reason a signal was aborted with, or a standard AbortError where the runtime gives none. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}
