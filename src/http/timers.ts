/**
 * Timers and abort signals for the throttled fetch, all on an injected {@link Clock} so that tests
 * run in virtual time. Every timer started here has exactly one owner that clears it.
 *
 * @module
 */
import { type Clock, MAX_TIMER_DELAY, type TimerHandle } from "../clock.ts";
import { abortReason } from "../limiters/gate.ts";

/** A one-shot timer that can be cancelled; delays beyond the runtime's timer range are chained. */
export interface Timer {
  cancel(): void;
}

/**
 * Calls `fire` after `ms` on `clock`; `cancel()` clears it (idempotent). `Infinity` never fires and
 * arms nothing.
 */
export function startTimer(clock: Clock, ms: number, fire: () => void): Timer {
  if (ms === Infinity) return { cancel() {} };
  const end = clock.now() + ms;
  let handle: TimerHandle | undefined;
  const arm = (delay: number): void => {
    handle = clock.setTimeout(() => {
      const left = end - clock.now();
      // A delay above the runtime's timer range is armed in pieces.
      if (left > 0 && delay === MAX_TIMER_DELAY) arm(Math.min(left, MAX_TIMER_DELAY));
      else {
        handle = undefined;
        fire();
      }
    }, delay);
  };
  arm(Math.min(Math.max(ms, 0), MAX_TIMER_DELAY));
  return {
    cancel() {
      if (handle !== undefined) clock.clearTimeout(handle);
      handle = undefined;
    },
  };
}

/**
 * Resolves after `ms` on `clock`; rejects with `signal.reason` as soon as `signal` aborts, clearing
 * the timer.
 *
 * @example
 * ```ts
 * await sleep(systemClock, 250, AbortSignal.timeout(1000));
 * ```
 */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  if (ms <= 0) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      timer.cancel();
      reject(abortReason(signal!));
    };
    const timer = startTimer(clock, ms, () => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    });
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * A signal that aborts when any of `signals` does, with that signal's reason. Uses
 * `AbortSignal.any` (the runtime unlinks it when it is collected); `undefined` entries are skipped.
 */
export function anySignal(signals: readonly (AbortSignal | undefined)[]): AbortSignal | undefined {
  const present = signals.filter((s): s is AbortSignal => s !== undefined);
  if (present.length <= 1) return present[0];
  if (typeof AbortSignal.any === "function") return AbortSignal.any(present);
  // Runtimes without AbortSignal.any (older than 2023): link by hand.
  const controller = new AbortController();
  for (const s of present) {
    if (s.aborted) {
      controller.abort(abortReason(s));
      break;
    }
    s.addEventListener("abort", () => controller.abort(abortReason(s)), { once: true, signal: controller.signal });
  }
  return controller.signal;
}

/**
 * `promise`'s outcome, or a rejection with `signal.reason` as soon as `signal` aborts first (the
 * promise keeps running; its late value goes to `discard`, a late rejection is handled). No timer.
 *
 * @example
 * ```ts
 * const cost = await untilAborted(estimate(request), signal);
 * ```
 */
export function untilAborted<T>(promise: T | PromiseLike<T>, signal: AbortSignal | undefined, discard?: (late: T) => void): Promise<T> {
  if (signal === undefined) return Promise.resolve(promise);
  if (signal.aborted) {
    Promise.resolve(promise).then(discard, () => {});
    return Promise.reject(abortReason(signal));
  }
  return new Promise<T>((resolve, reject) => {
    let lost = false;
    const onAbort = (): void => {
      lost = true;
      reject(abortReason(signal));
    };
    signal.addEventListener("abort", onAbort, { once: true });
    Promise.resolve(promise).then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        if (lost) discard?.(value);
        else resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
