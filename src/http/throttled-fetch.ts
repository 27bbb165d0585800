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
 * The attempts themselves are in `attempts.ts`, what follows each in `after-attempt.ts`.
 *
 * @module
 */
import { abortReason } from "../limiters/gate.ts";
import { TimeoutError } from "./errors.ts";
import { type FetchInput, type FetchLike, resolveOptions, type ResolvedOptions, type ThrottledFetchOptions } from "./options.ts";
import { describeRequest, headerValues, scrubError, secretsOf } from "./redact.ts";
import { callerSignalOf, callInit } from "./request.ts";
import { isRequest } from "./body.ts";
import { anySignal, startTimer, type Timer } from "./timers.ts";
import { runAttempts } from "./attempts.ts";

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

function resolveFetch(config: ResolvedOptions): FetchLike {
  const fetchImpl = config.fetch ?? (globalThis.fetch as FetchLike | undefined);
  if (typeof fetchImpl !== "function") {
    throw new TypeError("`fetch` must be a function: pass the `fetch` option where globalThis.fetch is missing");
  }
  return fetchImpl;
}

async function runCall(config: ResolvedOptions, given: FetchInput, givenInit: RequestInit | undefined, full: boolean): Promise<Response> {
  // A URL (or any object but a Request) is read once, now, as fetch converts it to a string when
  // called: a caller reusing one URL object for the next call, or a queued call, or a retry, would
  // otherwise send whatever it says at that later time.
  const input = typeof given === "string" || isRequest(given) ? given : `${given}`;
  const callerSignal = callerSignalOf(input, givenInit);
  if (callerSignal?.aborted) throw abortReason(callerSignal);
  // What fetch would read now (it builds its Request synchronously): a queued call is sent as it
  // was made, whatever the caller does to their init object meanwhile.
  const init = callInit(input, givenInit);
  const fetchImpl = resolveFetch(config); // read at call time: mocks installed after creation apply
  const state = new CallState(input, init);
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
 * far — and the call's secrets. Both are computed only when an error needs them. A class, not a
 * literal with closures: one allocation per call on the path every call takes. @internal
 *
 * @example
 * ```ts
 * const state = new CallState("https://user:pw@api.example.com/x?token=t", undefined);
 * state.label(); // "GET https://api.example.com/x" (credentials, query and fragment left out)
 * ```
 */
export class CallState {
  attempts = 0;
  /** Set once the call is prepared: the normalised method and URL. */
  prepared: { readonly method: string; readonly url: string } | undefined = undefined;
  #label: string | undefined;
  #secrets: string[] | undefined;

  readonly #input: FetchInput;
  readonly #init: RequestInit | undefined;

  constructor(input: FetchInput, init: RequestInit | undefined) {
    this.#input = input;
    this.#init = init;
  }

  label(): string {
    const p = this.prepared;
    if (p === undefined) return describeRequest(methodOf(this.#input, this.#init), urlOf(this.#input));
    return this.#label ??= describeRequest(p.method, p.url);
  }

  secrets(): string[] {
    const input = this.#input;
    const init = this.#init;
    return this.#secrets ??= secretsOf(urlOf(input), [...headerValues(init?.headers), ...headerValues(isRequest(input) ? input.headers : undefined)]);
  }
}
