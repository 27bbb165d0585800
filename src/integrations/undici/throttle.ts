/**
 * throttle(): an undici interceptor that paces every request dispatched through it with a sluice
 * limiter, and pauses that limiter when a response says the server is throttling us.
 *
 * One dispatch, in order:
 *   1. The caller's handler is started at once (`onRequestStart`) with a {@link QueuedController},
 *      so the caller can abort while the request waits — the wait is cancelled and nothing is taken.
 *   2. The request is ONE task on the limiter: `limiter.schedule(send, { permits, signal })`. `send`
 *      dispatches to the next dispatcher and lasts until the response headers arrive (or the request
 *      fails or is upgraded) — the same task boundary as the throttled fetch, so a
 *      `WindowLimiter({ countFrom: "completion" })` counts each slot from the response, which keeps a
 *      strict server window safe whatever the latency.
 *   3. The response's status and headers go through the throttled fetch's own decision
 *      (`readServerSignals` + `pauseFor`): a 429 or 503 with Retry-After, or RateLimit remaining 0,
 *      pauses the limiter of that key — every queued request waits, keeping its place — unless the
 *      delay exceeds `maxRetryAfter`. Then the caller sees the response, untouched: the interceptor
 *      never retries and never reads or holds a body (retrying is undici's `interceptors.retry`).
 *   4. A limiter that refuses (`maxWait`, `maxQueue`) or a cancelled wait ends the request with
 *      `onResponseError(error)`, and the controller reports itself aborted so a retry interceptor
 *      outside does not retry it.
 *
 * Every attempt is a dispatch, so undici's retry interceptor composed OUTSIDE this one (after it in
 * `compose(...)`) makes each retry take permits; attempts of one request are counted by handler
 * object, which a retry interceptor keeps across its retries.
 *
 * @module
 */
import type { SendTag } from "../../adaptive/controller.ts";
import type { AdaptiveLimiter } from "../../adaptive/limiter.ts";
import { type Admission, admitAdaptive, mustPace, toldRate } from "../../adaptive/rates.ts";
import { type Clock, systemClock, type TimerHandle } from "../../clock.ts";
import { startFlight } from "../../http/in-flight.ts";
import { armSlotTimer, clearSlotTimer, waitForSlot } from "../../http/slot-timers.ts";
import { holdsSlots, rateOf } from "../../http/slots.ts";
import { Unstarted } from "../../limiters/settle.ts";
import { readsSignalLike } from "../../limiters/signals.ts";
import { pauseFor, readServerSignals } from "../../http/throttle.ts";
import type { Limiter } from "../../limiters/limiter.ts";
import { QueuedController } from "./controller.ts";
import { AttemptHandler, type AttemptOwner } from "./handler.ts";
import { headersView, mayCarrySignals } from "./headers.ts";
import { headerValues, scrubError, secretsOf } from "../../http/redact.ts";
import { resolveThrottleOptions, type ResolvedThrottleOptions, type ThrottleOptions } from "./options.ts";
import type { Dispatch, DispatchHandler, DispatchRequest, UndiciInterceptor } from "./types.ts";
import { ARRIVAL, newArrival } from "../../limiters/waiter.ts";
import { describeValue, isThenable, quietly } from "../../validate.ts";
import type { AttemptBody } from "./handler.ts";

/**
 * Makes an undici interceptor that takes permits from `limiter` before each request is sent, and
 * pauses it when a response says the server is throttling (429/503 + Retry-After, or a RateLimit /
 * X-RateLimit quota at 0). Compose it first — innermost — so that every attempt of undici's retry
 * interceptor, every redirect and every client above it passes through.
 *
 * @throws {TypeError | RangeError} when an option is invalid, naming it and its value.
 * @example
 * ```ts
 * import { Agent, interceptors, setGlobalDispatcher } from "undici";
 * import { WindowLimiter } from "sluice";
 * import { throttle } from "sluice/undici";
 *
 * const limiter = new WindowLimiter({ limit: 10, interval: 1000, countFrom: "completion" });
 * // Every fetch, undici.request, ky, SDK… of this process: 10 requests per second at most.
 * setGlobalDispatcher(new Agent().compose(throttle({ limiter }), interceptors.retry()));
 * ```
 */
export function throttle(options: ThrottleOptions): UndiciInterceptor {
  const config = resolveThrottleOptions(options);
  // Per request (by handler object, which undici's retry interceptor dispatches again): its
  // attempts so far and its place in the queue, kept by its later dispatches (retries, redirect hops).
  const seen = new Requests();
  const interceptor = (dispatch: Dispatch): Dispatch =>
    // Exactly two parameters: undici checks `dispatch.length === 2` when composing.
    function throttledDispatch(request: DispatchRequest, handler: DispatchHandler): boolean {
      checkHandler(handler);
      new Dispatching(config, seen, dispatch, request, handler).enqueue();
      // The request is queued here, not in the dispatcher: there is no backpressure to report.
      return true;
    };
  return interceptor as unknown as UndiciInterceptor;
}

/** What the interceptor remembers of a request across its dispatches. */
interface Seen {
  attempts: number;
  readonly place: number;
}

/**
 * The {@link Seen} record of each handler object. Kept on the handler under a symbol of this
 * interceptor's own (invisible to string keys, `for…in` and JSON), because a WeakMap entry per
 * request cost a quarter of the interceptor's CPU per request (bench/undici-cpu.ts); a handler that
 * cannot take a property (frozen, sealed) is kept in a WeakMap instead.
 */
class Requests {
  readonly #symbol = Symbol("sluice/undici request");
  readonly #sealed = new WeakMap<object, Seen>();

  get(handler: object): Seen | undefined {
    return (handler as Record<symbol, Seen | undefined>)[this.#symbol] ?? this.#sealed.get(handler);
  }

  add(handler: object, seen: Seen): void {
    if (Object.isExtensible(handler)) (handler as Record<symbol, Seen>)[this.#symbol] = seen;
    else this.#sealed.set(handler, seen);
  }
}

function checkHandler(handler: DispatchHandler): void {
  if (typeof handler !== "object" || handler === null) {
    throw new TypeError(`the dispatch handler must be an object, got ${handler === null ? "null" : typeof handler}`);
  }
  if (typeof handler.onResponseError === "function") return;
  const legacy = typeof handler.onConnect === "function" || typeof handler.onError === "function";
  throw new TypeError(
    legacy
      ? "sluice/undici serves undici's handler API (onRequestStart, onResponseStart, …; undici 7 and 8), but got a " +
        "legacy handler (onConnect, onHeaders, …). Node's built-in fetch sends those: with undici 8, pass it " +
        "`new Dispatcher1Wrapper(dispatcher)` rather than the dispatcher itself"
      : "the dispatch handler must have an onResponseError method",
  );
}

/**
 * One dispatch handed to the interceptor, from its wait in the limiter to its response. A class
 * rather than closures over locals: one object per request instead of a dozen (the interceptor's
 * cost per request is mostly allocation, see `bench/undici-cpu.ts`).
 */
class Dispatching implements AttemptOwner {
  readonly #config: ResolvedThrottleOptions;
  readonly #seen: Requests;
  readonly #dispatch: Dispatch;
  readonly #request: DispatchRequest;
  readonly #handler: DispatchHandler;
  /** Handed to the caller at once; also the signal of the wait in the limiter (see controller.ts). */
  readonly #controller = new QueuedController();
  #sent = false;
  /** The request's query, fragment and header values, kept out of errors (computed on the first error). */
  #secrets: string[] | undefined = undefined;
  #key: string | undefined = undefined;
  #limiter: Limiter | undefined = undefined;
  /** The key's learned rate (with `adaptive`): waited for before the limiter, fed the answer. */
  #adaptive: AdaptiveLimiter | undefined = undefined;
  #admitted: Admission | undefined = undefined;
  #tag: SendTag | undefined = undefined;
  #ceiling = Infinity;
  #queuedAt = 0;

  constructor(
    config: ResolvedThrottleOptions,
    seen: Requests,
    dispatch: Dispatch,
    request: DispatchRequest,
    handler: DispatchHandler,
  ) {
    this.#config = config;
    this.#seen = seen;
    this.#dispatch = dispatch;
    this.#request = request;
    this.#handler = handler;
  }

  /** Errors reach the caller without the request's query, fragment or header values. */
  scrub(error: unknown): unknown {
    const controller = this.#controller;
    if (controller.aborted && error === controller.reason) return error; // the caller's own reason
    const request = this.#request;
    this.#secrets ??= secretsOf(`${String(request.origin ?? "")}${String(request.path)}`, headerValues(request.headers));
    return scrubError(error, this.#secrets);
  }

  /** The request ends before it was sent: report it to the caller once, never synchronously. */
  #refuse(error: unknown): void {
    // Scrubbed BEFORE the controller records it: once recorded, `scrub` would take it for the
    // caller's own abort reason and pass it on as is (an error of `permits`/`key` quoting the URL).
    const reported = this.scrub(error);
    this.#controller.refuse(reported);
    try {
      this.#handler.onResponseError!(this.#controller, reported);
    } catch {
      // The caller's handler failed to take its error: undici would emit it on the client; we have
      // no client to emit on, and rethrowing would only make an unhandled rejection.
    }
  }

  #refuseLater(error: unknown): void {
    queueMicrotask(() => this.#refuse(error));
  }

  enqueue(): void {
    const config = this.#config;
    const request = this.#request;
    const handler = this.#handler;
    const controller = this.#controller;
    try {
      handler.onRequestStart?.(controller, null);
    } catch (error) {
      this.#refuseLater(error);
      return;
    }
    let permits: number;
    try {
      const key = (this.#key = config.keyOf(request));
      const limiter = (this.#limiter = config.limiterOf(key));
      this.#ceiling = toldRate(rateOf(limiter)); // the rate limiter's, not the slots combination's
      this.#adaptive = config.adaptive?.get(key!, this.#ceiling, limiter);
      permits = typeof config.permits === "function" ? config.permits(request) : config.permits;
      if (typeof permits !== "number") quietly(permits);
      // A request is one task, which would take `permits` slots too: only 1 is served with slots.
      if (config.slotTimeout !== undefined && permits !== 1) {
        throw new TypeError(`\`permits\` must be 1 with \`maxConcurrent\` in sluice/undici, got ${describeValue(permits)}`);
      }
    } catch (error) {
      this.#refuseLater(error);
      return;
    }

    // Every request's window slot counts from its response (`countFrom: "completion"`), also on a
    // window the user built counting from the grant: as safe at a strict server's documented limit
    // as the `limit`/`interval` shorthand. Limiters without a window ignore it.
    const limiter = this.#limiter;
    const signal = limiter === undefined || readsSignalLike(limiter) ? controller as unknown as AbortSignal : controller.signal();
    const scheduleOptions: Record<string | symbol, unknown> = config.maxWait === undefined
      ? { permits, signal, countFrom: "completion" }
      : { permits, signal, countFrom: "completion", maxWait: config.maxWait };
    const seen = this.#seen.get(handler);
    if (seen === undefined) this.#seen.add(handler, { attempts: 0, place: newArrival() });
    else scheduleOptions[ARRIVAL] = seen.place; // a retry or redirect hop of a request already seen

    const adaptive = this.#adaptive;
    const scheduled = adaptive === undefined ? this.#schedule(scheduleOptions) : admitAdaptive(adaptive, {
      signal,
      ...(config.maxWait !== undefined && { maxWait: config.maxWait }),
    }, this.#ceiling).then((a) => {
      this.#admitted = a;
      return this.#schedule(scheduleOptions);
    });
    scheduled.then(undefined, (error: unknown) => {
      if (this.#sent) return;
      this.#admitted?.cancel(); // the learned rate's permit, taken for a request never sent
      this.#refuse(error instanceof Unstarted ? error.reason : error);
    });
  }

  #schedule(options: Record<string | symbol, unknown>): Promise<void> {
    const limiter = this.#limiter;
    const adaptive = this.#adaptive !== undefined;
    if (adaptive) this.#queuedAt = this.#clock().now();
    if (limiter === undefined) return this.#send();
    // A grant that may need a slot: while it waits, the timers that free unread bodies' slots keep
    // the process alive (else it could exit with this request queued; see slot-timers.ts).
    const over = this.#config.slotTimeout !== undefined || holdsSlots(limiter) ? waitForSlot() : undefined;
    try {
      // Without a learned rate to pace by again after the limiter, the task sends at once.
      const scheduled = limiter.schedule(adaptive ? () => (over?.(), this.#send()) : () => (over?.(), this.#sendNow()), options);
      if (over !== undefined) scheduled.then(over, over);
      return scheduled;
    } catch (error) {
      over?.();
      // A limiter that throws instead of rejecting (bad permits): the same as a refusal.
      return Promise.reject(error);
    }
  }

  #clock(): Clock {
    return this.#config.adaptive?.clock ?? systemClock;
  }

  // A cut or a pause that came while the request waited for the limiter: the learned rate paces it
  // now, so requests queued there do not leave together when the pause ends.
  // (Held by the limiter after the learned rate admitted it counts too: its pause, its window.)
  async #send(): Promise<void> {
    const adaptive = this.#adaptive;
    if (adaptive !== undefined && (this.#admitted!.passed || (this.#clock().now() - this.#queuedAt >= 1 && adaptive.paused)) && mustPace(adaptive, this.#ceiling)) {
      // The first slot goes back before the new one is asked: nothing was sent on it (see attempts.ts).
      this.#admitted!.cancel();
      let again: Admission;
      try {
        again = await admitAdaptive(adaptive, { signal: this.#controller as unknown as AbortSignal }, this.#ceiling);
      } catch (error) {
        throw this.#controller.aborted ? new Unstarted(error) : error; // not sent: the grant goes back
      }
      this.#admitted = { ...again, waited: again.waited || this.#admitted!.waited };
    }
    return this.#sendNow();
  }

  #sendNow(): Promise<void> {
    // Aborted between the grant and this task (e.g. from the limiter's "grant" event): nothing is
    // sent, so the request consumes no capacity — the grant goes back (`Unstarted`), and the
    // learned rate's permit too.
    const controller = this.#controller;
    if (controller.aborted) return Promise.reject(new Unstarted(controller.reason));
    return new Promise<void>((release) => {
      this.#sent = true;
      const seen = this.#seen.get(this.#handler)!;
      const attempt = ++seen.attempts;
      if (this.#adaptive !== undefined) {
        this.#admitted!.commit(); // sent: the learned rate's slot is used, and the key can be idle again
        this.#tag = this.#adaptive.onSent(this.#admitted!.waited);
      }
      // Counted until the response headers (or an error) come: see http/in-flight.ts.
      const flight = startFlight(this.#limiter ?? this.#adaptive!);
      // With `maxConcurrent`, the task (and its slot) lasts until the body ends or idles; else until
      // the headers.
      const slotTimeout = this.#config.slotTimeout;
      const attemptHandler = slotTimeout === undefined
        ? new AttemptHandler(this.#handler, controller, this, attempt, flight, release)
        : new AttemptHandler(this.#handler, controller, this, attempt, flight, undefined, bodyWatch(release, slotTimeout));
      try {
        this.#dispatch(this.#request, attemptHandler);
      } catch (error) {
        // undici's dispatchers report their errors through the handler; one that throws instead is
        // reported here, unless it threw the very error the handler already passed on.
        if (!attemptHandler.failed) attemptHandler.onResponseError(null, error);
      }
    });
  }

  /** No answer came (an error, an upgrade): the request only leaves the learned rate's in-flight count. */
  abandon(): void {
    if (this.#tag !== undefined) this.#adaptive!.onAbandoned(this.#tag);
    this.#tag = undefined;
  }

  /** The response headers of `attempt`: fed to the learned rate, and read for the server's signals. */
  observe(statusCode: number, headers: unknown, attempt: number, inFlight: number): void {
    const config = this.#config;
    // Most answers say nothing to read (no learned rate to feed, no 429, no rate or retry header):
    // one pass over the names, no view built.
    if (this.#tag === undefined && (!config.respectServer || (statusCode !== 429 && !mayCarrySignals(headers)))) return;
    const view = headersView(headers);
    let adaptivePause = 0;
    if (this.#tag !== undefined) {
      adaptivePause = this.#adaptive!.onResponse(this.#tag, { status: statusCode, headers: view }, { maxDelay: config.policy.maxRetryAfter }).pauseMs;
      this.#tag = undefined;
    }
    if (!config.respectServer) return;
    const signals = readServerSignals({ status: statusCode, headers: view }, {
      now: config.wallClock(),
      lenient: config.lenientRetryAfter,
      rateLimitHeaders: config.rateLimitHeaders,
      inFlight,
    });
    const pause = pauseFor(signals, attempt, config.policy);
    if (pause === undefined) return;
    // With `adaptive`, the key's limiter already paused for the server's delay and for a used-up
    // quota; the shared limiter is paused only for a delay the server gave (as the throttled fetch).
    const limiter = this.#limiter;
    const adaptive = this.#adaptive;
    const pauseBase = pause.ms > 0 && limiter !== undefined &&
      (adaptive === undefined || (pause.reason === "throttled" && signals.delay !== undefined));
    if (pauseBase) limiter!.pause(pause.ms);
    const paused = adaptive === undefined ? pause.ms : Math.max(pauseBase ? pause.ms : 0, adaptivePause);
    const told = config.onThrottle?.({
      request: this.#request, statusCode, headers: view, attempt, key: this.#key, reason: pause.reason, delay: pause.requested, paused,
    });
    // Inside undici's handler nothing can wait for an `async` hook; its rejection must not end the
    // process as an unhandled one (red-team, 2026-11-27, for the fetch's hooks).
    if (isThenable(told)) told.then(undefined, () => {});
  }
}

/**
 * Ends a slot-holding attempt once: at the end of its response, or after `idleMs` ms in which no
 * body data was delivered (a body nobody reads stops flowing under undici's backpressure). The idle
 * time counts from the response headers: before them the server is still working on the request
 * (a slow answer, or one undici's `headersTimeout` will end), and the slot is held.
 */
function bodyWatch(release: () => void, idleMs: number): AttemptBody {
  let last = 0;
  let ended = false;
  let timer: TimerHandle | undefined;
  const end = () => {
    if (ended) return;
    ended = true;
    if (timer !== undefined) clearSlotTimer(systemClock, timer);
    release();
  };
  const check = () => {
    const idle = performance.now() - last;
    if (idle >= idleMs) end();
    else arm(idleMs - idle);
  };
  const arm = (ms: number) => {
    timer = armSlotTimer(systemClock, check, ms);
  };
  return {
    headers: () => {
      if (ended || timer !== undefined) return;
      last = performance.now();
      arm(idleMs);
    },
    data: () => {
      last = performance.now();
    },
    end,
  };
}
