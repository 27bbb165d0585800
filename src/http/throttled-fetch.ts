/**
 * createThrottledFetch: a `fetch` that many callers share, paced by one limiter, that listens to
 * the server and retries safely.
 *
 * One call is a loop of attempts. Each attempt is ONE task scheduled on the limiter —
 * `limiter.schedule(() => fetch(...), { permits, signal })` — so every attempt, retries included,
 * takes permits; the wait in the queue runs under the caller's signal (aborting gives the permits
 * back); and the task lasts exactly until the response headers arrive or the attempt fails, which
 * is what lets a `WindowLimiter({ countFrom: "completion" })` count each slot from the moment the
 * response arrived — safe against a strict server window whatever the latency.
 *
 * After each attempt:
 *   1. the response's server signals are read (`throttle.ts`): a 429 (or 503 with a delay) pauses
 *      the shared limiter for the server's delay, and a quota reported at 0 pauses it until the
 *      reset, so every caller slows down, keeping its place in the queue;
 *   2. the retry decision is taken (`retry.ts`): rule, hooks, attempts, body, maxRetryAfter,
 *      totalTimeout, budget;
 *   3. a retried response's body is cancelled (its socket freed), and the caller waits: through the
 *      limiter's pause when the server timed the retry, with a sleep only for the part of the delay
 *      the pause does not cover — never both stacked.
 *
 * Time: every timer and elapsed time goes through the injected clock; epoch time (for HTTP-dates)
 * through `wallClock`. Every timer has an owner that clears it when the attempt or call ends.
 *
 * @module
 */
import { abortReason } from "../limiters/gate.ts";
import type { Limiter } from "../limiters/limiter.ts";
import { isRequest, isResponse, planBody } from "./body.ts";
import { TimeoutError } from "./errors.ts";
import { cancelBody, type HeldResponse, holdForRetry } from "./held-response.ts";
import { type FetchInput, type FetchLike, resolveOptions, type ResolvedOptions, type ThrottledFetchOptions } from "./options.ts";
import { describeRequest, headerValues, scrubError, scrubText, secretsOf } from "./redact.ts";
import { type AttemptOutcome, decideRetry, retryableByRule, type RetryDecision } from "./retry.ts";
import { attemptInit, callerSignalOf, prepareCall } from "./request.ts";
import { startFlight } from "./in-flight.ts";
import type { SendTag } from "../adaptive/controller.ts";
import { type Admission, admitAdaptive, mustPace } from "../adaptive/rates.ts";
import { pauseFor, readServerSignals } from "./throttle.ts";
import { anySignal, sleep, startTimer, type Timer, untilAborted } from "./timers.ts";
import { applySettle, asCostError, AttemptHold, checkCostResult, type Cost, priorityOf, scheduleUntilEnd, trackBody } from "./costs.ts";
import type { ScheduleOptions } from "../limiters/limiter.ts";
import type { Reservation } from "../limiters/reservation.ts";
import { ARRIVAL, newArrival } from "../limiters/waiter.ts";
import { slotCost } from "./slots.ts";

/**
 * A function with `fetch`'s signature and semantics: it resolves with the final `Response` whatever
 * its status, and rejects only where fetch would (network errors, the caller's abort reason) or
 * with sluice's typed errors (`TimeoutError`, `MaxWaitExceededError`, `QueueFullError`).
 *
 * @example
 * ```ts
 * const api: ThrottledFetch = createThrottledFetch({ limit: 10, interval: 1000 });
 * const ky2 = ky.create({ fetch: api, retry: 0 }); // anything that takes a fetch takes it
 * ```
 */
export type ThrottledFetch = (input: FetchInput, init?: RequestInit) => Promise<Response>;

/**
 * Makes a fetch-compatible function whose every attempt goes through `limiter`, that pauses the
 * limiter when the server says so, and that retries safely (see the docs for the rule).
 *
 * @example
 * ```ts
 * import { createThrottledFetch, SmoothLimiter } from "sluice";
 *
 * const limiter = new SmoothLimiter({ limit: 10, interval: 1000 });
 * const api = createThrottledFetch({ limiter });
 * const responses = await Promise.all(urls.map((url) => api(url))); // one budget, no 429s
 * ```
 */
export function createThrottledFetch(options: ThrottledFetchOptions): ThrottledFetch {
  return throttledFetchOf(resolveOptions(options));
}

/**
 * The throttled fetch of resolved options. `full` forces the full path on every call (a `Request`
 * view built up front, linked signals and a copied `init` on every attempt), so that tests can
 * check that the lean path decides exactly as it does. @internal
 *
 * @example
 * ```ts
 * const full = throttledFetchOf(resolveOptions({ limiter }), true);
 * ```
 */
export function throttledFetchOf(config: ResolvedOptions, full = false): ThrottledFetch {
  return (input, init) => runCall(config, input, init, full);
}

/** What one attempt produced. */
type AttemptResult =
  | { readonly response: Response; readonly error?: undefined; readonly timedOut?: undefined }
  | { readonly response?: undefined; readonly error: unknown; readonly timedOut: boolean };

function resolveFetch(config: ResolvedOptions): FetchLike {
  const fetchImpl = config.fetch ?? (globalThis.fetch as FetchLike | undefined);
  if (typeof fetchImpl !== "function") {
    throw new TypeError("`fetch` must be a function: pass the `fetch` option where globalThis.fetch is missing");
  }
  return fetchImpl;
}

async function runCall(config: ResolvedOptions, input: FetchInput, init: RequestInit | undefined, full: boolean): Promise<Response> {
  const callerSignal = callerSignalOf(input, init);
  if (callerSignal?.aborted) throw abortReason(callerSignal);
  const fetchImpl = resolveFetch(config); // read at call time: mocks installed after creation apply
  const state = callState(input, init);
  // The total timeout aborts whatever the call is doing: reading a Request's body, queueing, an
  // attempt, a retry wait. Armed first, so nothing before the first attempt escapes it. Without
  // one (the default), no controller, timer or linked signal is made.
  let totalTimer: Timer | undefined;
  let callSignal = callerSignal;
  if (config.totalTimeout !== Infinity || full) {
    const total = new AbortController();
    totalTimer = startTimer(config.clock, config.totalTimeout, () => {
      total.abort(new TimeoutError(state.label(), "total", config.totalTimeout, state.attempts));
    });
    callSignal = anySignal([callerSignal, config.totalTimeout === Infinity ? undefined : total.signal]);
  }
  try {
    return await runAttempts(config, input, init, fetchImpl, callSignal, state, full);
  } catch (error) {
    // The caller's own abort reason is theirs, unchanged; anything else may quote the URL or a
    // header (fetch's TypeErrors, a custom fetch's message, a cause chain): scrub it in place.
    if (callerSignal?.aborted && error === abortReason(callerSignal)) throw error;
    throw scrubError(error, state.secrets());
  } finally {
    totalTimer?.cancel();
  }
}

/** The method a call is made with, before validation (for error messages only). */
function methodOf(input: FetchInput, init: RequestInit | undefined): string {
  const method = init?.method ?? (isRequest(input) ? input.method : "GET");
  return typeof method === "string" ? method.toUpperCase() : "GET";
}

/** The URL a call is made to, before validation (for error messages only; redacted by describeRequest). */
function urlOf(input: FetchInput): string {
  if (isRequest(input)) return input.url;
  return input instanceof URL ? input.href : String(input);
}

/**
 * What errors report about the call — the request as method and redacted URL, the attempts sent so
 * far — and the call's secrets. Both are computed only when an error needs them.
 */
interface CallState {
  attempts: number;
  /** Set once the call is prepared: the normalised method and URL. */
  prepared: { readonly method: string; readonly url: string } | undefined;
  label(): string;
  secrets(): string[];
}

function callState(input: FetchInput, init: RequestInit | undefined): CallState {
  let label: string | undefined;
  let secrets: string[] | undefined;
  const state: CallState = {
    attempts: 0,
    prepared: undefined,
    label: () => {
      const p = state.prepared;
      if (p === undefined) return describeRequest(methodOf(input, init), urlOf(input));
      return label ??= describeRequest(p.method, p.url);
    },
    secrets: () => secrets ??= secretsOf(urlOf(input), [...headerValues(init?.headers), ...headerValues(isRequest(input) ? input.headers : undefined)]),
  };
  return state;
}

async function runAttempts(
  config: ResolvedOptions,
  input: FetchInput,
  init: RequestInit | undefined,
  fetchImpl: FetchLike,
  callSignal: AbortSignal | undefined,
  state: CallState,
  full: boolean,
): Promise<Response> {
  const { policy, clock } = config;
  // Only a Request's body is read asynchronously; any other plan is at hand (no await hop).
  const planned = planBody(input, init, policy.limit > 0, callSignal);
  const plan = planned instanceof Promise ? await planned : planned;
  if (callSignal?.aborted) throw abortReason(callSignal);
  let call: ReturnType<typeof prepareCall>;
  try {
    call = prepareCall(input, init, plan, config.idempotencyKey, policy.methods, full || !config.lean);
  } catch (error) {
    // fetch's TypeError for an invalid request may quote the URL: keep the type, drop credentials.
    if (error instanceof TypeError) throw new TypeError(scrubText(error.message, state.secrets()));
    throw error;
  }
  state.prepared = call;
  const idempotent = policy.methods.has(call.method) || call.hasIdempotencyKey;
  const replayable = plan.kind !== "streamed";
  const permits = typeof config.permits === "function" ? config.permits(call.request) : config.permits;
  // The cost before the key: a key may depend on what the cost read from the body (an LLM profile's
  // budgets are per model, and the model is in the body).
  const costs = config.costs;
  // An async `cost` runs under the call's signal: the caller's abort and `totalTimeout` (armed
  // before the call began) end the call while it is pending.
  let cost: Cost | undefined;
  if (costs === undefined || !costs.reserve) cost = undefined;
  else if (typeof costs.cost !== "function") cost = costs.cost;
  else {
    // A streamed body (sent once, never buffered by us) is teed for `cost`, which may read it (an
    // LLM profile estimates tokens from it): its copy is buffered only as far as `cost` reads, and
    // what it leaves unread is cancelled once it returns. That request is the call's view for the
    // other hooks too (`key`, `settle`, `onResponse` see the very object `cost` saw).
    const body = init?.body;
    if (plan.kind === "streamed" && typeof ReadableStream === "function" && body instanceof ReadableStream && !body.locked) {
      const [forCost, forSend] = body.tee();
      init = { ...init, body: forSend };
      call = { ...call, request: new Request(call.request, { body: forCost, duplex: "half" } as RequestInit) };
      state.prepared = call;
    }
    try {
      cost = checkedCost(await untilAborted(costs.cost(call.request), callSignal), costs.named);
    } finally {
      const teed = plan.kind === "streamed" ? call.request.body : null;
      if (teed !== null && !teed.locked) teed.cancel().catch(() => {});
    }
  }
  // With a KeyedLimiter or `adaptive`: one limiter, and one learned rate, per key.
  const key = config.keyed === undefined && config.adaptive === undefined ? undefined : config.key(call.request);
  if (key !== undefined && typeof key !== "string") {
    throw new TypeError(`\`key\` must return a string, got ${typeof key}`);
  }
  const started = clock.now();
  // The response being retried, until its retry is sent (then discarded) or refused (then returned).
  let held: HeldResponse | undefined;
  const priority = config.priority === undefined && init?.priority === undefined ? 0 : priorityOf(init, () => call.request, config.priority);
  // Every attempt's window slot counts from its response (`countFrom: "completion"`), also on a
  // window the user built counting from the grant: safe at a strict server's documented limit
  // whatever the latency, like the `limit`/`interval` shorthand. Limiters without a window ignore it.
  const scheduleOptions: ScheduleOptions = config.maxWait === undefined
    ? { permits, signal: callSignal, countFrom: "completion" }
    : { permits, signal: callSignal, maxWait: config.maxWait, countFrom: "completion" };
  if (priority !== 0) (scheduleOptions as { priority?: number }).priority = priority;
  // A retry waits in the call's place in the queue, not behind everyone who came since (see README
  // "A retry keeps its place"): the arrival number the first attempt queues with, kept.
  const place = newArrival();
  let retryOptions: ScheduleOptions | undefined;
  // With `maxConcurrent` alone: attempts are tasks held until their body ends (see `scheduleUntilEnd`).
  // (A task of `permits` takes that many of every member, slots too: other costs reserve instead.)
  const slotOnly = costs !== undefined && !costs.reserve && permits === 1;
  const reserved = costs === undefined || slotOnly ? undefined : cost ?? permits;
  config.budget?.deposit();
  // Per attempt, a controller and a timer only for a finite `timeout` (the caller's signal alone
  // is passed as is); the caller's init unchanged when nothing in it needs replacing.
  const timed = config.timeout !== Infinity;
  const lean = !full;

  try {
    for (;;) {
      // Looked up per attempt: a KeyedLimiter may have replaced an idle key's limiter meanwhile.
      const limiter: Limiter | undefined = config.keyed === undefined
        ? config.limiter
        : config.slotsOf === undefined ? config.keyed.get(key!) : config.slotsOf(config.keyed.get(key!), key!);
      // The key's learned rate (with `adaptive`): waited for first, fed each answer. Retries come
      // through here again, so they pay the learned rate too.
      const ceiling = config.adaptive === undefined ? Infinity : config.ceiling(limiter);
      const adaptive = config.adaptive?.get(key!, ceiling);
      let admitted: Admission | undefined;
      let tag: SendTag | undefined;
      let adaptivePause = 0;
      let sent = false;
      let timedOut: TimeoutError | undefined;
      let inFlight = 0; // the other requests on this limiter in flight when the response came
      let result: AttemptResult;
      let hold: AttemptHold | undefined;
      let endSlot: (() => void) | undefined;
      const options = state.attempts === 0 ? scheduleOptions : retryOptions ??= { ...scheduleOptions, [ARRIVAL]: place } as ScheduleOptions;
      try {
        if (adaptive !== undefined) {
          const options = config.maxWait === undefined ? { signal: callSignal } : { signal: callSignal, maxWait: config.maxWait };
          admitted = await admitAdaptive(adaptive, options, ceiling);
        }
        const queuedAt = clock.now();
        const send = async () => {
          // Held by the limiter (its pause, its window) after the learned rate admitted it, or
          // passed at the ceiling before a cut: the learned rate paces it again now, so attempts
          // queued there do not leave together when the limiter lets them go.
          if (adaptive !== undefined && (admitted!.passed || clock.now() - queuedAt >= 1) && mustPace(adaptive, ceiling)) {
            const again = await admitAdaptive(adaptive, { signal: callSignal }, ceiling);
            admitted = { ...again, waited: again.waited || admitted!.waited };
          }
          sent = true;
          if (adaptive !== undefined) tag = adaptive.onSent(admitted!.waited);
          const attempts = ++state.attempts;
          held?.discard();
          held = undefined;
          let timer: Timer | undefined;
          let signal = callSignal;
          if (timed || full) {
            const attempt = new AbortController();
            timer = startTimer(clock, config.timeout, () => {
              timedOut = new TimeoutError(state.label(), "attempt", config.timeout, attempts);
              attempt.abort(timedOut);
            });
            signal = anySignal([callSignal, timed ? attempt.signal : undefined]);
          }
          const flight = startFlight(limiter ?? adaptive!);
          try {
            const response = await fetchImpl(input, attemptInit(init, plan, call.headers, signal, lean));
            inFlight = flight.others();
            return response;
          } finally {
            flight.end();
            timer?.cancel();
          }
        };
        let response: Response;
        if (limiter === undefined) response = await send();
        else if (slotOnly) {
          const scheduled = scheduleUntilEnd(limiter, send, options);
          endSlot = scheduled.end;
          response = await scheduled.response;
        } else if (reserved === undefined) response = await limiter.schedule(send, options);
        else {
          const asked = costs!.maxConcurrent === undefined ? reserved : slotCost(limiter, reserved);
          const reservation = await reserveOn(limiter, asked, options, costs!.named);
          // Granted, but the caller left before anything was sent: everything goes back.
          if (callSignal?.aborted) {
            reservation.cancel();
            throw abortReason(callSignal);
          }
          hold = new AttemptHold(reservation, clock, { slot: costs!.maxConcurrent !== undefined, slotTimeout: costs!.slotTimeout });
          response = await send();
        }
        if (tag !== undefined && isResponse(response)) adaptivePause = adaptive!.onResponse(tag, response).pauseMs;
        result = { response };
      } catch (error) {
        hold?.release(); // a failed attempt counts as reserved
        // Not sent: the limiter refused or the wait was aborted; nothing was taken. A refused retry
        // gives the caller the response it already had (the README's promise), not the refusal.
        if (!sent) {
          admitted?.cancel(); // the learned rate's permit, taken for an attempt never sent
          if (held !== undefined && !callSignal?.aborted) {
            const last = held.response;
            held = undefined;
            return last;
          }
          throw error;
        }
        if (tag !== undefined) adaptive!.onAbandoned(tag);
        // The caller's abort (or the total timeout) wins over whatever the attempt failed with.
        if (callSignal?.aborted) throw abortReason(callSignal);
        // An attempt cut off by our timeout fails with the TimeoutError, whatever fetch made of the abort.
        result = timedOut !== undefined ? { error: timedOut, timedOut: true } : { error: scrubError(error, state.secrets()), timedOut: false };
      }

      if (result.response !== undefined && !isResponse(result.response)) {
        hold?.release();
        endSlot?.();
        throw new TypeError(`\`fetch\` must resolve with a Response, got ${typeof result.response}`);
      }
      let decided: Decided;
      try {
        const after = afterAttempt(config, {
          call, result, attempt: state.attempts, key, limiter, adaptive: adaptive !== undefined, adaptivePause, idempotent, replayable, started, inFlight,
        });
        // Decided at once unless a hook or the decision needs awaiting (no hop for a final response).
        decided = after instanceof Promise ? await after : after;
      } catch (error) {
        hold?.release();
        endSlot?.();
        throw error;
      }
      if (endSlot !== undefined && result.response !== undefined) {
        if (decided.retry === false) return trackBody(result.response, endSlot, clock, costs!.slotTimeout);
        endSlot(); // a retried body is discarded: its slot ends now
      }
      if (hold !== undefined && result.response !== undefined) {
        // `settle` reads every response, retried ones too; the caller (or the retry's drain) gets
        // the response it hands back.
        const response = applySettle(costs!.settle, result.response, { request: call.request, reserved: reserved!, attempt: state.attempts }, hold);
        if (decided.retry === false) {
          return costs!.maxConcurrent === undefined ? response : trackBody(response, (idle) => hold.bodyEnded(idle), clock, costs!.slotTimeout);
        }
        result = { response };
        hold.bodyEnded(); // a retried body is discarded: its slot ends now
      }
      if (decided.retry === false) {
        if (result.response !== undefined) return result.response;
        throw result.error;
      }
      // Wait out the part of the delay the limiter's pause does not already cover, draining the
      // retried body meanwhile (see held-response.ts).
      const sleepMs = decided.paused > 0 && decided.delay <= decided.paused ? 0 : decided.delay;
      const holding = result.response === undefined ? undefined : holdForRetry(result.response, clock, callSignal);
      const waited = sleep(clock, sleepMs, callSignal);
      waited.catch(() => {}); // awaited below, once the body is held (so an abort still discards it)
      if (holding !== undefined) held = await holding;
      await waited;
    }
  } finally {
    held?.discard();
  }
}

interface AttemptContext {
  /** The call; its `request` view is read only by hooks (built then, on the lean path). */
  readonly call: { readonly request: Request };
  readonly result: AttemptResult;
  readonly attempt: number;
  readonly key: string | undefined;
  /** The limiter the attempt took permits from; none with `adaptive` alone. */
  readonly limiter: Limiter | undefined;
  /** The key learns its rate: its adaptive limiter already read the answer (and paused itself). */
  readonly adaptive: boolean;
  /** How long the key's adaptive limiter paused every caller, ms. */
  readonly adaptivePause: number;
  readonly idempotent: boolean;
  readonly replayable: boolean;
  readonly started: number;
  readonly inFlight: number;
}

type Decided = { retry: false } | { retry: true; delay: number; paused: number };

/**
 * Reads the server's signals, pauses the shared limiter, decides, runs the hooks and cancels a
 * discarded body. Returns the delay before the retry and how much of it the pause covers —
 * synchronously when the rule alone settles it (a final response with no `shouldRetry` hook),
 * which is every successful call.
 */
function afterAttempt(config: ResolvedOptions, ctx: AttemptContext): Decided | Promise<Decided> {
  const response = ctx.result.response;
  try {
    const { outcome, paused } = readAttempt(config, ctx);
    if (config.shouldRetry === undefined && !retryableByRule(outcome, ctx.idempotent, config.policy)) {
      return conclude(config, ctx, { retry: false, reason: "not-retryable" }, paused);
    }
    return decide(config, ctx, outcome, paused);
  } catch (error) {
    // A hook threw: the call fails with its error, and the response's socket is freed.
    if (response !== undefined) cancelBody(response);
    throw error;
  }
}

/** The attempt's outcome; pauses the limiter (and tells `onThrottle`) when the server said so. */
function readAttempt(config: ResolvedOptions, ctx: AttemptContext): { outcome: AttemptOutcome; paused: number } {
  const { result, attempt, key, limiter } = ctx;
  const response = result.response;
  if (response === undefined) return { outcome: { kind: "error", timedOut: result.timedOut }, paused: 0 };
  let paused = 0;
  const signals = readServerSignals(response, {
    now: config.wallClock(),
    lenient: config.lenientRetryAfter,
    rateLimitHeaders: config.rateLimitHeaders,
    inFlight: ctx.inFlight,
  });
  const pause = pauseFor(signals, attempt, config.policy);
  if (pause !== undefined) {
    // With `adaptive`, the key's limiter already paused for the server's delay and for a used-up
    // quota (counting the requests in flight): the shared limiter is paused only for a delay the
    // server gave (other clients of it must honour it too), not for a quota the adaptive limiter
    // paces out, nor for our own backoff step (the one cut per overload event slows the key).
    const pauseBase = pause.ms > 0 && limiter !== undefined &&
      (!ctx.adaptive || (pause.reason === "throttled" && signals.delay !== undefined));
    if (pauseBase) {
      limiter.pause(pause.ms);
      paused = pause.ms;
    }
    if (ctx.adaptive) paused = Math.max(paused, ctx.adaptivePause);
    config.onThrottle?.({ request: ctx.call.request, response, attempt, key, reason: pause.reason, delay: pause.requested, paused });
  }
  return { outcome: { kind: "response", status: response.status, serverDelay: signals.delay?.ms }, paused };
}

async function decide(config: ResolvedOptions, ctx: AttemptContext, outcome: AttemptOutcome, paused: number): Promise<Decided> {
  const { result, attempt } = ctx;
  const response = result.response;
  try {
    const retryAfter = outcome.kind === "response" ? outcome.serverDelay : undefined;
    const { shouldRetry, delay } = config;
    const context = () => ({
      request: ctx.call.request,
      ...(response !== undefined ? { response } : { error: result.error }),
      attempt,
      ...(retryAfter !== undefined && { retryAfter }),
    });
    const decision = await decideRetry({
      attempt,
      outcome,
      idempotent: ctx.idempotent,
      replayable: ctx.replayable,
      elapsed: config.clock.now() - ctx.started,
      totalTimeout: config.totalTimeout,
      maxWait: config.maxWait,
      policy: config.policy,
      random: config.random,
      budget: config.budget,
      shouldRetry: shouldRetry && (() => shouldRetry(context())),
      delay: delay && ((computed) => delay({ ...context(), computed })),
    });
    return conclude(config, ctx, decision, paused);
  } catch (error) {
    // A hook threw: the call fails with its error, and the response's socket is freed.
    if (response !== undefined) cancelBody(response);
    throw error;
  }
}

/** Tells `onResponse` and `onRetry` (when set) what was decided. Throws what a hook throws. */
function conclude(config: ResolvedOptions, ctx: AttemptContext, decision: RetryDecision, paused: number): Decided {
  const { result, attempt, key } = ctx;
  const response = result.response;
  if (response !== undefined && config.onResponse !== undefined) {
    config.onResponse({
      request: ctx.call.request, response, attempt, key, retrying: decision.retry, reason: decision.retry ? undefined : decision.reason,
    });
  }
  if (!decision.retry) return { retry: false };
  config.onRetry?.({
    request: ctx.call.request,
    ...(response !== undefined ? { response } : { error: result.error }),
    attempt,
    delay: decision.delay,
    throttled: decision.throttled,
    key,
  });
  return { retry: true, delay: decision.delay, paused };
}

/** Reserves `cost` on `limiter`, which must support reservations (every built-in limiter does). */
function reserveOn(limiter: Limiter, cost: Cost, options: ScheduleOptions, named: "cost" | "permits"): Promise<Reservation> {
  if (typeof limiter.reserve !== "function") {
    throw new TypeError("`cost`, `settle` and `maxConcurrent` need a limiter with `reserve()` (every sluice limiter has it)");
  }
  const { permits: _, ...rest } = options;
  try {
    return limiter.reserve(cost, rest).catch((error: unknown) => Promise.reject(asCostError(error, named)));
  } catch (error) {
    throw asCostError(error, named);
  }
}

/** A `cost` function's result, checked as `cost` (a `permits` function's is checked by the limiter). */
function checkedCost(value: Cost, named: "cost" | "permits"): Cost {
  return named === "cost" ? checkCostResult(value) : value;
}
