/**
 * `limiter.events`: a web-standard `EventTarget` that knows, per event type, whether anyone listens,
 * so a limiter allocates no event object (and keeps no bookkeeping) while nobody does.
 *
 * The count mirrors the EventTarget's own registry: a `(listener, capture)` pair counts once however
 * often it is added, `once` listeners stop counting after the dispatch that runs them, and a
 * listener added with a `signal` stops counting when the signal aborts.
 *
 * @module
 */

/**
 * The event types a limiter dispatches (see README "Stats and events").
 *
 * @example
 * ```ts
 * const type: LimiterEventType = "grant";
 * ```
 */
export type LimiterEventType = "grant" | "refuse" | "abort" | "pause" | "ratechange";

/**
 * A listener as `EventTarget` takes it, spelled out so that sluice's types need neither the DOM lib
 * nor a runtime's own (a Node project's `lib: ["es2022"], types: ["node"]` has no
 * `EventListenerOrEventListenerObject`).
 *
 * @example
 * ```ts
 * const onGrant: LimiterEventListener = (e) => console.log((e as CustomEvent).detail);
 * ```
 */
export type LimiterEventListener = ((event: Event) => void) | { handleEvent(event: Event): void };

/**
 * Options of {@link LimiterEvents.addEventListener}, as `EventTarget` takes them (spelled out likewise).
 *
 * @example
 * ```ts
 * limiter.events.addEventListener("grant", onGrant, { signal: controller.signal });
 * ```
 */
export interface LimiterListenerOptions {
  /** Removed after its first call. */
  readonly once?: boolean;
  /** Registered for the capture phase (events of a limiter have no other phase; kept for parity). */
  readonly capture?: boolean;
  /** Promises not to call `preventDefault` (ignored: limiter events are not cancelable). */
  readonly passive?: boolean;
  /** Removes the listener when aborted. */
  readonly signal?: AbortSignal;
}

type Listener = LimiterEventListener;

const CAPTURE = 1;
const BUBBLE = 2;
const ONCE_CAPTURE = 4;
const ONCE_BUBBLE = 8;

/**
 * The `events` of a limiter: dispatches `CustomEvent`s whose `detail` describes a grant, refusal,
 * abort, pause or rate change — only while the type has a listener.
 *
 * @example
 * ```ts
 * limiter.events.addEventListener("grant", (e) => {
 *   const { permits, waited } = (e as CustomEvent<{ permits: number; waited: number }>).detail;
 *   histogram.record(waited / 1000);
 * });
 * ```
 */
export class LimiterEvents extends EventTarget {
  /** Per type, the registered listeners with bits for (capture, bubble) × (plain, once). */
  readonly #registered = new Map<string, Map<Listener, number>>();
  /**
   * Per type and listener, what takes our "abort" handler off a registration's `signal` (index 0:
   * capture, 1: bubble), so a listener removed or run `once` leaves nothing on a long-lived signal.
   */
  readonly #unwatch = new Map<string, Map<Listener, [(() => void) | undefined, (() => void) | undefined]>>();
  /** @internal Told when a type gains its first listener or loses its last (a KeyedLimiter subscribes then). */
  onListening: ((type: string, listening: boolean) => void) | undefined = undefined;

  /** True while `type` has a listener: only then is an event worth making. */
  listens(type: string): boolean {
    return this.#registered.has(type);
  }

  /** @internal Dispatches a `CustomEvent` of `type` with `detail`, if anyone listens (the limiter's own use). */
  emit(type: LimiterEventType, detail: object): void {
    if (this.#registered.has(type)) this.dispatchEvent(new CustomEvent(type, { detail }));
  }

  /** Registers `listener` for `type` (as `EventTarget` does), and notes that the type now has one. */
  override addEventListener(type: string, listener: LimiterEventListener | null, options?: LimiterListenerOptions | boolean): void {
    super.addEventListener(type, listener, options);
    if (listener === null || listener === undefined) return;
    const capture = typeof options === "boolean" ? options : options?.capture === true;
    const signal = typeof options === "object" ? options.signal : undefined;
    if (signal?.aborted) return;
    const once = typeof options === "object" && options.once === true;
    let byListener = this.#registered.get(type);
    const bits = byListener?.get(listener) ?? 0;
    const bit = capture ? CAPTURE : BUBBLE;
    if ((bits & bit) !== 0) return; // already registered: the EventTarget ignored this one too
    if (byListener === undefined) this.#registered.set(type, (byListener = new Map()));
    byListener.set(listener, bits | bit | (once ? (capture ? ONCE_CAPTURE : ONCE_BUBBLE) : 0));
    if (signal !== undefined) {
      const onAbort = () => this.#forget(type, listener, capture);
      signal.addEventListener("abort", onAbort, { once: true });
      let forType = this.#unwatch.get(type);
      if (forType === undefined) this.#unwatch.set(type, (forType = new Map()));
      const pair = forType.get(listener) ?? [undefined, undefined];
      pair[capture ? 0 : 1] = () => signal.removeEventListener("abort", onAbort);
      forType.set(listener, pair);
    }
    if (byListener.size === 1 && bits === 0) this.onListening?.(type, true);
  }

  /** Removes `listener` (as `EventTarget` does), and notes when the type has none left. */
  override removeEventListener(type: string, listener: LimiterEventListener | null, options?: Pick<LimiterListenerOptions, "capture"> | boolean): void {
    super.removeEventListener(type, listener, options);
    if (listener === null || listener === undefined) return;
    this.#forget(type, listener, typeof options === "boolean" ? options : options?.capture === true);
  }

  /** Dispatches `event` (as `EventTarget` does), forgetting the `once` listeners it runs. */
  override dispatchEvent(event: Event): boolean {
    const byListener = this.#registered.get(event.type);
    // The `once` listeners registered now run in this dispatch and are then gone.
    let once: Array<[Listener, boolean]> | undefined;
    if (byListener !== undefined) {
      for (const [listener, bits] of byListener) {
        if ((bits & ONCE_CAPTURE) !== 0) (once ??= []).push([listener, true]);
        if ((bits & ONCE_BUBBLE) !== 0) (once ??= []).push([listener, false]);
      }
    }
    try {
      return super.dispatchEvent(event);
    } finally {
      if (once !== undefined) for (const [listener, capture] of once) this.#forget(event.type, listener, capture);
    }
  }

  #forget(type: string, listener: Listener, capture: boolean): void {
    const byListener = this.#registered.get(type);
    const bits = byListener?.get(listener);
    if (byListener === undefined || bits === undefined) return;
    const left = bits & ~(capture ? CAPTURE | ONCE_CAPTURE : BUBBLE | ONCE_BUBBLE);
    if (left === bits) return;
    const forType = this.#unwatch.get(type);
    const pair = forType?.get(listener);
    if (pair !== undefined) {
      pair[capture ? 0 : 1]?.();
      pair[capture ? 0 : 1] = undefined;
      if (pair[0] === undefined && pair[1] === undefined) forType!.delete(listener);
      if (forType!.size === 0) this.#unwatch.delete(type);
    }
    if ((left & (CAPTURE | BUBBLE)) !== 0) byListener.set(listener, left);
    else byListener.delete(listener);
    if (byListener.size === 0) {
      this.#registered.delete(type);
      this.onListening?.(type, false);
    }
  }
}
