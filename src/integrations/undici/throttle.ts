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
import { systemClock } from "../../clock.ts";
import { startFlight } from "../../http/in-flight.ts";
import { rateOf } from "../../http/slots.ts";
import { Unstarted } from "../../limiters/settle.ts";
import { pauseFor, readServerSignals } from "../../http/throttle.ts";
import type { Limiter } from "../../limiters/limiter.ts";
import { QueuedController } from "./controller.ts";
import { AttemptHandler } from "./handler.ts";
import { headersView } from "./headers.ts";
import { headerValues, scrubError, secretsOf } from "../../http/redact.ts";
import { resolveThrottleOptions, type ResolvedThrottleOptions, type ThrottleOptions } from "./options.ts";
import type { Dispatch, DispatchHandler, DispatchRequest, UndiciInterceptor } from "./types.ts";
import { ARRIVAL, newArrival } from "../../limiters/waiter.ts";
import { describeValue } from "../../validate.ts";
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
  // Attempts per request: undici's retry interceptor dispatches the same handler object again.
  const attempts = new WeakMap<object, number>();
  // A request's place in the queue, kept by its later dispatches (retries, redirect hops).
  const places = new WeakMap<object, number>();
  const interceptor = (dispatch: Dispatch): Dispatch =>
    // Exactly two parameters: undici checks `dispatch.length === 2` when composing.
    function throttledDispatch(request: DispatchRequest, handler: DispatchHandler): boolean {
      checkHandler(handler);
      enqueue(config, attempts, places, dispatch, request, handler);
      // The request is queued here, not in the dispatcher: there is no backpressure to report.
      return true;
    };
  return interceptor as unknown as UndiciInterceptor;
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

function enqueue(
  config: ResolvedThrottleOptions,
  attempts: WeakMap<object, number>,
  places: WeakMap<object, number>,
  dispatch: Dispatch,
  request: DispatchRequest,
  handler: DispatchHandler,
): void {
  const queue = new AbortController();
  const controller = new QueuedController((reason) => queue.abort(reason));
  let sent = false;
  // Errors reach the caller without the request's query, fragment or header values (computed on the first error).
  let secrets: string[] | undefined;
  const scrub = (error: unknown): unknown => {
    if (controller.aborted && error === controller.reason) return error; // the caller's own reason
    secrets ??= secretsOf(`${String(request.origin ?? "")}${String(request.path)}`, headerValues(request.headers));
    return scrubError(error, secrets);
  };
  // The request ends before it was sent: report it to the caller once, never synchronously.
  const refuse = (error: unknown) => {
    // Scrubbed BEFORE the controller records it: once recorded, `scrub` would take it for the
    // caller's own abort reason and pass it on as is (an error of `permits`/`key` quoting the URL).
    const reported = scrub(error);
    controller.refuse(reported);
    try {
      handler.onResponseError!(controller, reported);
    } catch {
      // The caller's handler failed to take its error: undici would emit it on the client; we have
      // no client to emit on, and rethrowing would only make an unhandled rejection.
    }
  };

  try {
    handler.onRequestStart?.(controller, null);
  } catch (error) {
    queueMicrotask(() => refuse(error));
    return;
  }

  let key: string | undefined;
  let limiter: Limiter | undefined;
  // The key's learned rate (with `adaptive`): waited for before the limiter, fed the answer.
  let adaptive: AdaptiveLimiter | undefined;
  let admitted: Admission | undefined;
  let tag: SendTag | undefined;
  let ceiling = Infinity;
  let permits: number;
  try {
    key = config.keyOf(request);
    limiter = config.limiterOf(key);
    ceiling = toldRate(rateOf(limiter)); // the rate limiter's, not the slots combination's
    adaptive = config.adaptive?.get(key!, ceiling);
    permits = typeof config.permits === "function" ? config.permits(request) : config.permits;
    // A request is one task, which would take `permits` slots too: only 1 is served with slots.
    if (config.slotTimeout !== undefined && permits !== 1) {
      throw new TypeError(`\`permits\` must be 1 with \`maxConcurrent\` in sluice/undici, got ${describeValue(permits)}`);
    }
  } catch (error) {
    queueMicrotask(() => refuse(error));
    return;
  }

  const observe = (statusCode: number, headers: unknown, attempt: number, inFlight: number) => {
    const view = headersView(headers);
    let adaptivePause = 0;
    if (tag !== undefined) {
      adaptivePause = adaptive!.onResponse(tag, { status: statusCode, headers: view }).pauseMs;
      tag = undefined;
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
    const pauseBase = pause.ms > 0 && limiter !== undefined &&
      (adaptive === undefined || (pause.reason === "throttled" && signals.delay !== undefined));
    if (pauseBase) limiter!.pause(pause.ms);
    const paused = adaptive === undefined ? pause.ms : Math.max(pauseBase ? pause.ms : 0, adaptivePause);
    config.onThrottle?.({
      request, statusCode, headers: view, attempt, key, reason: pause.reason, delay: pause.requested, paused,
    });
  };

  // A cut or a pause that came while the request waited for the limiter: the learned rate paces it
  // now, so requests queued there do not leave together when the pause ends.
  // (Held by the limiter after the learned rate admitted it counts too: its pause, its window.)
  const clock = config.adaptive?.clock ?? systemClock;
  let queuedAt = 0;
  const send = async (): Promise<void> => {
    if (adaptive !== undefined && (admitted!.passed || clock.now() - queuedAt >= 1) && mustPace(adaptive, ceiling)) {
      let again: Admission;
      try {
        again = await admitAdaptive(adaptive, { signal: queue.signal }, ceiling);
      } catch (error) {
        throw controller.aborted ? new Unstarted(error) : error; // not sent: the grant goes back
      }
      admitted = { ...again, waited: again.waited || admitted!.waited };
    }
    return sendNow();
  };
  const sendNow = (): Promise<void> => {
    // Aborted between the grant and this task (e.g. from the limiter's "grant" event): nothing is
    // sent, so the request consumes no capacity — the grant goes back (`Unstarted`), and the
    // learned rate's permit too.
    if (controller.aborted) return Promise.reject(new Unstarted(controller.reason));
    return new Promise<void>((release) => {
      sent = true;
      const attempt = (attempts.get(handler) ?? 0) + 1;
      attempts.set(handler, attempt);
      if (adaptive !== undefined) tag = adaptive.onSent(admitted!.waited);
      // Counted until the response headers (or an error) come: see http/in-flight.ts.
      const flight = startFlight(limiter ?? adaptive!);
      // No answer came (an error, an upgrade): the request only leaves the learned rate's in-flight count.
      const abandon = () => {
        if (tag !== undefined) adaptive!.onAbandoned(tag);
        tag = undefined;
      };
      // With `maxConcurrent`, the task (and its slot) lasts until the body ends or idles; else until
      // the headers.
      const slotTimeout = config.slotTimeout;
      const done = slotTimeout === undefined
        ? () => {
          flight.end();
          abandon();
          release();
        }
        : () => {
          flight.end();
          abandon();
        };
      const body = slotTimeout === undefined ? undefined : bodyWatch(release, slotTimeout);
      const attemptHandler = new AttemptHandler(handler, controller, (s, h) => observe(s, h, attempt, flight.others()), done, scrub, body);
      try {
        dispatch(request, attemptHandler);
      } catch (error) {
        // undici's dispatchers report their errors through the handler; one that throws instead is
        // reported here, unless it threw the very error the handler already passed on.
        if (!attemptHandler.failed) attemptHandler.onResponseError(null, error);
      }
    });
  };

  // Every request's window slot counts from its response (`countFrom: "completion"`), also on a
  // window the user built counting from the grant: as safe at a strict server's documented limit
  // as the `limit`/`interval` shorthand. Limiters without a window ignore it.
  const scheduleOptions: Record<string | symbol, unknown> = {
    permits,
    signal: queue.signal,
    countFrom: "completion",
    ...(config.maxWait !== undefined && { maxWait: config.maxWait }),
  };
  const place = places.get(handler);
  if (place === undefined) places.set(handler, newArrival());
  else scheduleOptions[ARRIVAL] = place; // a retry or redirect hop of a request already seen
  const schedule = (): Promise<void> => {
    queuedAt = clock.now();
    if (limiter === undefined) return send();
    try {
      return limiter.schedule(send, scheduleOptions);
    } catch (error) {
      // A limiter that throws instead of rejecting (bad permits): the same as a refusal.
      return Promise.reject(error);
    }
  };
  const scheduled = adaptive === undefined ? schedule() : admitAdaptive(adaptive, {
    signal: queue.signal,
    ...(config.maxWait !== undefined && { maxWait: config.maxWait }),
  }, ceiling).then((a) => {
    admitted = a;
    return schedule();
  });
  scheduled.then(undefined, (error: unknown) => {
    if (sent) return;
    admitted?.cancel(); // the learned rate's permit, taken for a request never sent
    refuse(error instanceof Unstarted ? error.reason : error);
  });
}

/**
 * Ends a slot-holding attempt once: at the end of its response, or after `idleMs` ms in which no
 * body data was delivered (a body nobody reads stops flowing under undici's backpressure).
 */
function bodyWatch(release: () => void, idleMs: number): AttemptBody {
  let last = performance.now();
  let ended = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const end = () => {
    if (ended) return;
    ended = true;
    if (timer !== undefined) clearTimeout(timer);
    release();
  };
  const check = () => {
    const idle = performance.now() - last;
    if (idle >= idleMs) end();
    else arm(idleMs - idle);
  };
  const arm = (ms: number) => {
    timer = setTimeout(check, Math.ceil(ms));
    (timer as { unref?: () => void }).unref?.();
  };
  arm(idleMs);
  return {
    data: () => {
      last = performance.now();
    },
    end,
  };
}
