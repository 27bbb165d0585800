/**
 * After each attempt of a throttled-fetch call: the response's server signals are read and the
 * shared limiter paused when the server said so (`throttle.ts`), the retry decision taken
 * (`retry.ts`), and the hooks told.
 *
 * @module
 */
import type { Limiter } from "../limiters/limiter.ts";
import type { ThrottleEvent } from "./options.ts";
import type { AdaptiveLimiter } from "../adaptive/limiter.ts";
import { cancelBody } from "./held-response.ts";
import type { ResolvedOptions } from "./options.ts";
import { type AttemptOutcome, decideRetry, retryableByRule, type RetryDecision } from "./retry.ts";
import { lastingError } from "./lasting-errors.ts";
import { pauseFor, pauseLimiter, readServerSignals } from "./throttle.ts";
import { isThenable, quietly } from "../validate.ts";
import { untilAborted } from "./timers.ts";

/** What one attempt produced. @internal */
export type AttemptResult =
  | { readonly response: Response; readonly error?: undefined; readonly timedOut?: undefined }
  | { readonly response?: undefined; readonly error: unknown; readonly timedOut: boolean };


/** @internal */
export interface AttemptContext {
  /** The call; its `request` view is read only by hooks (built then, on the lean path). */
  readonly call: { readonly request: Request };
  readonly result: AttemptResult;
  readonly attempt: number;
  readonly key: string | undefined;
  /** The limiter the attempt took permits from; none with `adaptive` alone. */
  readonly limiter: Limiter | undefined;
  /** The key's learned rate, when it learns one: its adaptive limiter already read the answer (and paused itself). */
  readonly adaptive: AdaptiveLimiter | undefined;
  /** How long the key's adaptive limiter paused every caller, ms. */
  readonly adaptivePause: number;
  readonly idempotent: boolean;
  readonly replayable: boolean;
  readonly started: number;
  readonly inFlight: number;
  /** The call's signal (the caller's abort, `totalTimeout`): an `async` hook is not waited for past it. */
  readonly signal?: AbortSignal | undefined;
}

/** @internal */
export type Decided = { readonly retry: false } | { readonly retry: true; readonly delay: number; readonly paused: number };

// Shared: the verdicts of every final response, not made anew per call.
const FINAL: Decided = Object.freeze({ retry: false });
const NOT_RETRYABLE: RetryDecision = Object.freeze({ retry: false, reason: "not-retryable" });

/**
 * Reads the server's signals, pauses the shared limiter, decides, runs the hooks and cancels a
 * discarded body. Returns the delay before the retry and how much of it the pause covers —
 * synchronously when the rule alone settles it (a final response with no `shouldRetry` hook),
 * which is every successful call.
 *
 * @example
 * ```ts
 * const decided = await afterAttempt(config, { call, result: { response }, attempt: 1, key: undefined, limiter, adaptive: undefined,
 *   adaptivePause: 0, idempotent: true, replayable: true, started: 0, inFlight: 0 });
 * if (decided.retry) await sleep(clock, decided.delay);
 * ```
 */
export function afterAttempt(config: ResolvedOptions, ctx: AttemptContext): Decided | Promise<Decided> {
  const response = ctx.result.response;
  try {
    const { outcome, paused, throttle } = readAttempt(config, ctx);
    // With a `shouldRetry` hook the throttle is told after it: its { retryAfter } may lengthen the
    // pause, and one response is one event, told with the delay that holds.
    if (config.shouldRetry !== undefined) return decide(config, ctx, outcome, paused, throttle);
    const told = throttle === undefined ? undefined : config.onThrottle?.(throttle);
    // An `async` onThrottle is awaited with the hooks after it, all told in this turn (a profile's
    // onResponse pauses before a slow metrics call ends); its rejection fails the call.
    return failsCall(byRule(config, ctx, outcome, paused, throttle !== undefined, isThenable(told) ? told : undefined), response);
  } catch (error) {
    // A hook threw: the call fails with its error, and the response's socket is freed.
    if (response !== undefined) cancelBody(response);
    throw error;
  }
}

/** Without a `shouldRetry` hook: the rule decides; an outcome it never retries needs no decision. */
function byRule(config: ResolvedOptions, ctx: AttemptContext, outcome: AttemptOutcome, paused: number, told: boolean, waiting?: PromiseLike<unknown>): Decided | Promise<Decided> {
  if (!retryableByRule(outcome, ctx.idempotent, config.policy)) return conclude(config, ctx, NOT_RETRYABLE, paused, waiting);
  return decide(config, ctx, outcome, paused, undefined, told, waiting);
}

/** The attempt's outcome; pauses the limiter when the server said so, and returns the throttle event to tell. */
function readAttempt(config: ResolvedOptions, ctx: AttemptContext): { outcome: AttemptOutcome; paused: number; throttle: ThrottleEvent | undefined } {
  const { result, attempt, key, limiter } = ctx;
  const response = result.response;
  if (response === undefined) return { outcome: { kind: "error", timedOut: result.timedOut, lasting: lastingError(result.error) }, paused: 0, throttle: undefined };
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
      (ctx.adaptive === undefined || (pause.reason === "throttled" && signals.delay !== undefined));
    if (pauseBase) {
      pauseLimiter(limiter, pause.ms, config.policy.pauseDimensions);
      paused = pause.ms;
    }
    if (ctx.adaptive !== undefined) paused = Math.max(paused, ctx.adaptivePause);
  }
  const throttle: ThrottleEvent | undefined = pause === undefined || config.onThrottle === undefined
    ? undefined
    : { request: ctx.call.request, response, attempt, key, reason: pause.reason, delay: pause.requested, paused };
  return { outcome: { kind: "response", status: response.status, serverDelay: signals.delay?.ms }, paused, throttle };
}

/**
 * Runs the retry rule and the hooks. `throttle`: the response's throttle event, not told yet (a
 * `shouldRetry` hook may lengthen it); `told`: it was told already.
 */
async function decide(
  config: ResolvedOptions, ctx: AttemptContext, outcome: AttemptOutcome, paused: number, throttle: ThrottleEvent | undefined, told = false,
  waiting?: PromiseLike<unknown>,
): Promise<Decided> {
  const { result, attempt } = ctx;
  const response = result.response;
  let pending = throttle;
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
      paused,
      totalTimeout: config.totalTimeout,
      maxWait: config.maxWait,
      policy: config.policy,
      random: config.random,
      budget: config.budget,
      shouldRetry: shouldRetry && (() => shouldRetry(context())),
      delay: delay && ((computed) => delay({ ...context(), computed })),
    });
    // `shouldRetry` said the server timed this retry ({ retryAfter }): every caller waits for it,
    // as for a Retry-After the fetch read itself.
    const timed = decision.retry ? decision.timedByHook : undefined;
    pending = undefined;
    let throttled: unknown; // what onThrottle returned
    if (timed !== undefined && timed > paused && (ctx.limiter !== undefined || ctx.adaptive !== undefined)) {
      if (ctx.limiter !== undefined) pauseLimiter(ctx.limiter, timed, config.policy.pauseDimensions);
      // The learned rate holds every attempt of the key first (with `adaptive` alone it is the only
      // gate): paused too, or the others would go on sending while this one waits.
      ctx.adaptive?.pause(timed);
      paused = timed;
      // One response, one throttle event (red-team, 2026-11-27: otel counted one 429 twice), told
      // with the pause that holds: the hook's, when it lengthened the response's own Retry-After.
      throttled = config.onThrottle?.({ request: ctx.call.request, response: response!, attempt, key: ctx.key, reason: "throttled", delay: timed, paused });
    } else if (throttle === undefined && !told && response !== undefined && !decision.retry && decision.reason === "retry-after-too-long") {
      // `shouldRetry` timed it past `maxRetryAfter` (GitHub's hour-long primary limit): not retried,
      // nothing paused here — told as a 429 whose Retry-After is too long is (it was silent).
      throttled = config.onThrottle?.({ request: ctx.call.request, response, attempt, key: ctx.key, reason: "throttled", delay: decision.delay!, paused: 0 });
    } else if (throttle !== undefined) throttled = config.onThrottle?.(throttle);
    // Awaited only when `async`: the other hooks follow in the same turn otherwise (a profile's
    // onResponse pausing every resource before callers made in onThrottle reach the limiter).
    const decided = conclude(config, ctx, decision, paused, isThenable(throttled) ? throttled : waiting);
    return decided instanceof Promise ? await decided : decided;
  } catch (error) {
    // A hook threw: the call fails with its error, and the response's socket is freed. The limiter
    // was paused all the same: that is still told (the hook's error is the one the caller gets).
    if (response !== undefined) cancelBody(response);
    if (waiting !== undefined) quietly(waiting); // an async onThrottle told before: not awaited now
    if (pending !== undefined) {
      try {
        // the first hook's error wins; an async onThrottle's own rejection is not reported either
        const told = config.onThrottle?.(pending);
        if (isThenable(told)) told.then(undefined, () => {});
      } catch {
        // the first hook's error wins
      }
    }
    throw error;
  }
}

/**
 * Tells `onResponse`, then `onRetry` (when set), what was decided, in this turn. Throws what a hook
 * throws; an `async` hook's promise — and `waiting`, an async onThrottle's — is awaited after all of
 * them were told (a vendor profile's onResponse pauses before a slow metrics hook ends; review,
 * 2026-11-27), only until the call's signal ends, and its rejection fails the call as a throw does
 * (red-team, 2026-11-27: it escaped as an unhandled rejection, and Node's default ended the process).
 */
function conclude(config: ResolvedOptions, ctx: AttemptContext, decision: RetryDecision, paused: number, waiting?: PromiseLike<unknown>): Decided | Promise<Decided> {
  const result = ctx.result;
  const response = result.response;
  let pending: PromiseLike<unknown>[] | undefined = waiting === undefined ? undefined : [waiting];
  try {
    if (response !== undefined && config.onResponse !== undefined) {
      const told = config.onResponse({
        request: ctx.call.request, response, attempt: ctx.attempt, key: ctx.key, retrying: decision.retry, reason: decision.retry ? undefined : decision.reason,
      });
      if (isThenable(told)) (pending ??= []).push(told);
    }
    if (decision.retry) {
      const told = config.onRetry?.({
        request: ctx.call.request,
        ...(response !== undefined ? { response } : { error: result.error }),
        attempt: ctx.attempt,
        delay: decision.delay,
        throttled: decision.throttled,
        key: ctx.key,
      });
      if (isThenable(told)) (pending ??= []).push(told);
    }
  } catch (error) {
    // A hook threw: its error is the call's; the promises of the hooks before it are not awaited,
    // and their rejections must not surface as unhandled.
    if (pending !== undefined) for (const p of pending) quietly(p);
    throw error;
  }
  const decided: Decided = decision.retry ? { retry: true, delay: decision.delay, paused } : FINAL;
  return pending === undefined ? decided : untilAborted(Promise.all(pending), ctx.signal).then(() => decided);
}

/** A decision still pending (an async hook's): if it fails, the response's socket is freed first. */
function failsCall(decided: Decided | Promise<Decided>, response: Response | undefined): Decided | Promise<Decided> {
  if (response === undefined || !(decided instanceof Promise)) return decided;
  return decided.catch((error: unknown) => {
    cancelBody(response);
    throw error;
  });
}
