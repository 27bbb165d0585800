/**
 * The controller the interceptor hands its caller's handler, for the whole life of one dispatch.
 *
 * Why it exists: a request waits in the limiter's queue BEFORE undici creates its own controller,
 * yet its caller must be able to abort it there (fetch's signal, `request({ signal })`, the retry
 * interceptor's controller). So the interceptor calls `onRequestStart` at once with this controller;
 * while the request is queued, `abort()` cancels the wait (the permits were never taken); once undici
 * starts the request, `attach()` points the controller at undici's own, and every call is forwarded
 * to it. Pausing before the request starts is remembered and applied on attach.
 *
 * Invariant: `aborted` never goes back to false, and the first reason wins — as with undici's own
 * controller.
 *
 * It is also the signal of the request's wait in the limiter (`aborted`, `reason` and the "abort"
 * event, which is all a limiter reads of a signal): an `AbortController` per request would cost a
 * dispatch more than the limiter's whole decision (issue 14's overhead target).
 *
 * @module
 */
import type { DispatchController } from "./types.ts";

/** The controller a queued-then-sent request is driven by. @internal */
export class QueuedController implements DispatchController {
  #target: DispatchController | null = null;
  #paused = false;
  #aborted = false;
  #reason: unknown = null;
  /** The limiter's "abort" listeners while the request waits (usually none: granted at once). */
  #listeners: Array<() => void> | null = null;
  /** A real AbortSignal's controller, made only for a limiter that needs one (see `signal`). */
  #real: AbortController | null = null;

  /**
   * A real AbortSignal that aborts as the wait does, for a custom limiter (typed to receive an
   * AbortSignal, and free to hand it to `AbortSignal.any`). sluice's own limiters take this
   * controller itself as their signal (`readsSignalLike`), and none is made.
   */
  signal(): AbortSignal {
    if (this.#real === null) {
      this.#real = new AbortController();
      if (this.#aborted) this.#real.abort(this.#reason);
    }
    return this.#real.signal;
  }

  /** undici started the request (or started it again, e.g. after a redirect inside the interceptor). */
  attach(target: DispatchController): void {
    this.#target = target;
    if (this.#aborted) target.abort(this.#reason);
    else if (this.#paused) target.pause();
  }

  /** The request ends before undici ever saw it (the limiter refused it): report it as aborted. */
  refuse(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
  }

  abort(reason?: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason ?? new DOMException("This operation was aborted", "AbortError");
    if (this.#target !== null) this.#target.abort(this.#reason);
    else this.#cancelWait();
  }

  /** The wait in the limiter's queue ends: its listeners run once, as an AbortSignal's would. */
  #cancelWait(): void {
    const listeners = this.#listeners;
    this.#listeners = null;
    if (listeners !== null) for (const listener of listeners) listener();
    this.#real?.abort(this.#reason);
  }

  /** As on an AbortSignal, for the limiter waiting on this request (only "abort" is ever sent). */
  addEventListener(type: string, listener: () => void): void {
    if (type !== "abort" || this.#aborted) return;
    (this.#listeners ??= []).push(listener);
  }

  /** As on an AbortSignal: throws the reason once aborted. */
  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  /** As on an AbortSignal. */
  removeEventListener(type: string, listener: () => void): void {
    const listeners = this.#listeners;
    if (type !== "abort" || listeners === null) return;
    const i = listeners.indexOf(listener);
    if (i >= 0) listeners.splice(i, 1);
  }

  pause(): void {
    this.#paused = true;
    this.#target?.pause();
  }

  resume(): void {
    this.#paused = false;
    this.#target?.resume();
  }

  get aborted(): boolean {
    return this.#aborted || (this.#target?.aborted ?? false);
  }

  get reason(): unknown {
    return this.#aborted ? this.#reason : (this.#target?.reason ?? null);
  }

  get paused(): boolean {
    return this.#target === null ? this.#paused : this.#target.paused;
  }

  /** undici 8 exposes the raw response headers on its controller; handlers that convert to the legacy API read them. */
  get rawHeaders(): unknown {
    return this.#target?.rawHeaders ?? null;
  }

  get rawTrailers(): unknown {
    return this.#target?.rawTrailers ?? null;
  }
}
