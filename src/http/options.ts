/**
 * Options of {@link createThrottledFetch}: the public types. Their validation into the settings the
 * loop reads is in `resolve-options.ts`.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import type { Limiter } from "../limiters/limiter.ts";
import type { KeyedLimiter } from "../limiters/keyed.ts";
import type { AdaptiveRates, AdaptiveRatesOptions } from "../adaptive/rates.ts";
import type { RetryBudget, RetryBudgetOptions } from "./budget.ts";
import type { NoRetryReason, RetryVerdict } from "./retry.ts";
import type { Cost, SettleFunction } from "./costs.ts";

export { resolveOptions, type ResolvedOptions } from "./resolve-options.ts";

/**
 * A function with the signature of `fetch`.
 *
 * @example
 * ```ts
 * const logged: FetchLike = (input, init) => (console.log(init?.method ?? "GET"), fetch(input, init));
 * ```
 */
export type FetchLike = (input: FetchInput, init?: RequestInit) => Promise<Response>;

/**
 * What `fetch` accepts as its first argument: a URL string, a `URL` or a `Request`. Spelled out
 * rather than DOM's `RequestInfo`, which TypeScript projects on Node's types do not have.
 *
 * @example
 * ```ts
 * const input: FetchInput = new URL("https://api.example.com/items");
 * ```
 */
export type FetchInput = string | URL | Request;

/**
 * What the `shouldRetry` hook is told about the attempt that just ended.
 *
 * @example
 * ```ts
 * // GitHub answers an exhausted quota with 403: retry it like a 429, at the reset (epoch seconds).
 * const shouldRetry = ({ response }: RetryContext) =>
 *   response?.status === 403 && response.headers.get("x-ratelimit-remaining") === "0"
 *     ? { retryAfter: Math.max(0, Number(response.headers.get("x-ratelimit-reset")) * 1000 - Date.now() + 1000) }
 *     : undefined;
 * ```
 */
export interface RetryContext {
  /** The call, as a `Request` (URL, method, headers; the body when replayable — read a `clone()`). */
  readonly request: Request;
  /** The response, when the attempt got one. Don't read its body. */
  readonly response?: Response;
  /** The error, when the attempt failed (a network error, or a `TimeoutError` for an attempt timeout). */
  readonly error?: unknown;
  /** Attempts made so far (1 after the first). */
  readonly attempt: number;
  /** The delay the server asked for, in ms, when it gave one. */
  readonly retryAfter?: number;
}

/**
 * What the `delay` hook is told: the retry context plus the delay sluice computed.
 *
 * @example
 * ```ts
 * const delay = ({ computed, attempt }: DelayContext) => (attempt === 1 ? Math.min(computed, 100) : undefined);
 * ```
 */
export interface DelayContext extends RetryContext {
  /** The delay sluice would wait, in ms (server delay or backoff). */
  readonly computed: number;
}

/**
 * Retry settings. Every field has a default in `DEFAULTS.retry`.
 *
 * @example
 * ```ts
 * const retry: RetryOptions = { limit: 4, maxRetryAfter: 120_000, backoff: { base: 250, cap: 10_000 } };
 * ```
 */
export interface RetryOptions {
  /** Retries after the first attempt; `0` disables retries. @default 2 */
  limit?: number;
  /**
   * Methods retried on any retryable status or network error (idempotent ones). Others are retried
   * only on 429, or 503 with a server delay. @default ["GET","HEAD","OPTIONS","TRACE","PUT","DELETE","QUERY"]
   */
  methods?: readonly string[];
  /** Statuses that may be retried. @default [408, 429, 500, 502, 503, 504] */
  statusCodes?: readonly number[];
  /**
   * The longest server-requested delay honoured, in ms. A longer Retry-After (or reset) is not
   * clamped: the call resolves with that response, nothing is paused, and `onThrottle` sees the
   * delay. @default 60000
   */
  maxRetryAfter?: number;
  /** Full-jitter exponential backoff for retries the server did not time, in ms. @default { base: 1000, cap: 30000 } */
  backoff?: { base?: number; cap?: number };
  /**
   * Bounds retries across all calls of this throttled fetch: a {@link RetryBudget} (share one
   * instance between fetches), its options, or `false` for none. @default { ratio: 0.2, reserve: 10 }
   */
  budget?: RetryBudget | RetryBudgetOptions | false;
  /**
   * Overrides the retry rule for one outcome: `true` retry, `false` don't, `undefined` use the
   * rule, or `{ retryAfter: ms }` — retry, the server asked for this delay in a way the fetch does
   * not read (a 403 whose body names a rate limit): the retry then counts like a 429 with that
   * Retry-After (the limiter pauses for it, `onThrottle` is told, no retry budget is spent; past
   * `maxRetryAfter` it is not retried). It cannot lift the hard limits (`limit`, streamed bodies,
   * `maxRetryAfter`, `totalTimeout`, budget).
   * @example
   * ```ts
   * shouldRetry: ({ response }) => response?.status === 403 && response.headers.get("x-ratelimit-remaining") === "0"
   *   ? { retryAfter: 60_000 } : undefined,
   * ```
   */
  shouldRetry?: (context: RetryContext) => RetryVerdict | PromiseLike<RetryVerdict>;
  /**
   * With a limiter of named dimensions (`combine({ requests, concurrent })`, per key with a
   * `KeyedLimiter`): the dimensions a server's delay or exhausted quota pauses; the others keep
   * granting to whoever else shares them. Names a combination lacks are skipped; when it has none
   * of them, the whole limiter pauses. @default every dimension (the whole limiter)
   * @example
   * ```ts
   * // A 429 on one model pauses its requests, not the slots shared with other models.
   * retry: { pauseDimensions: ["requests", "tokens"] },
   * ```
   */
  pauseDimensions?: readonly string[];
  /**
   * Overrides the delay before a retry, in ms; `undefined` keeps the computed one. It can shorten
   * the backoff but never the server's delay.
   */
  delay?: (context: DelayContext) => number | undefined;
}

/**
 * Sent to `onThrottle` when a response throttled us or reported an exhausted quota.
 *
 * @example
 * ```ts
 * const onThrottle = ({ reason, delay, paused, key }: ThrottleEvent) =>
 *   console.warn(`${key ?? "api"} ${reason}: asked ${delay} ms, paused ${paused} ms`);
 * ```
 */
export interface ThrottleEvent {
  /** The request whose response asked for the pause. */
  readonly request: Request;
  /** The response that carried the server's timing. */
  readonly response: Response;
  /** The attempt that got the response (1-based). */
  readonly attempt: number;
  /** The key of the limiter (with a `KeyedLimiter`). */
  readonly key: string | undefined;
  /** `"throttled"`: 429, or 503 with a delay. `"quota-exhausted"`: RateLimit headers say 0 remaining. */
  readonly reason: "throttled" | "quota-exhausted";
  /** The delay the server asked for, in ms (the backoff step on a 429 without one). */
  readonly delay: number;
  /** How long the shared limiter was paused, in ms: `delay`, or 0 when it exceeds `maxRetryAfter`. */
  readonly paused: number;
}

/**
 * Sent to `onRetry` before waiting for a retry.
 *
 * @example
 * ```ts
 * const onRetry = ({ attempt, delay, response, error }: RetryEvent) =>
 *   console.info(`retry #${attempt} in ${delay} ms after ${response?.status ?? String(error)}`);
 * ```
 */
export interface RetryEvent {
  /** The request about to be sent again. */
  readonly request: Request;
  /** The response being retried (its body is cancelled). */
  readonly response?: Response;
  /** The error being retried. */
  readonly error?: unknown;
  /** The attempt that failed (1-based); the retry is attempt `attempt + 1`. */
  readonly attempt: number;
  /** ms until the retry may go (the limiter may add its own wait). */
  readonly delay: number;
  /** True when the server timed this retry (429, or 503 with a delay). */
  readonly throttled: boolean;
  /** The limiter key of the request (with a KeyedLimiter), else undefined. */
  readonly key: string | undefined;
}

/**
 * Sent to `onResponse` for every response, retried or final.
 *
 * @example
 * ```ts
 * const onResponse = ({ response, attempt, retrying }: ResponseEvent) =>
 *   metrics.count("http", { status: response.status, attempt, final: !retrying });
 * ```
 */
export interface ResponseEvent {
  /** The request of the final attempt. */
  readonly request: Request;
  /** The response. Read its body only on a `clone()`, and only when `retrying` is false. */
  readonly response: Response;
  /** Which attempt produced it, from 1. */
  readonly attempt: number;
  /** True when this response will be discarded and the request retried. */
  readonly retrying: boolean;
  /** Why it is not retried (when `retrying` is false). */
  readonly reason: NoRetryReason | undefined;
  /** The limiter key of the request (with a KeyedLimiter), else undefined. */
  readonly key: string | undefined;
}

/**
 * Options of `idempotencyKey`.
 *
 * @example
 * ```ts
 * const idempotencyKey: IdempotencyKeyOptions = { header: "X-Request-Id", generate: () => crypto.randomUUID() };
 * ```
 */
export interface IdempotencyKeyOptions {
  /** The header to set. @default "Idempotency-Key" */
  header?: string;
  /** Makes a new key for each call. @default crypto.randomUUID */
  generate?: () => string;
}

/**
 * Options of {@link createThrottledFetch}.
 *
 * @example
 * ```ts
 * const options: ThrottledFetchOptions = {
 *   limiter: new WindowLimiter({ limit: 100, interval: 60_000, countFrom: "completion" }),
 *   retry: { limit: 3 },
 *   timeout: 10_000,
 * };
 * ```
 */
export interface ThrottledFetchOptions {
  /**
   * The limiter every attempt takes permits from — share one instance between all clients of an
   * API. A {@link KeyedLimiter} gives each `key(request)` its own limiter (default key: the origin).
   */
  limiter?: Limiter | KeyedLimiter<string>;
  /**
   * Shorthand for a private limiter at a server's documented limit, "`limit` requests per
   * `interval` ms": `new WindowLimiter({ limit, interval, countFrom: "completion" })`, the choice that
   * is provably safe against a strict window whatever the latency. Give `limiter` instead to share
   * one limiter between clients.
   */
  limit?: number;
  /** With `limit`: the window in ms. @default 1000 */
  interval?: number;
  /**
   * With a `KeyedLimiter` or `adaptive`: the key of a request (one limiter, and one learned rate,
   * per key). @default the request's origin, e.g. "https://api.example.com"
   */
  key?: (request: Request) => string;
  /**
   * Learn the server's rate from its answers, one rate per `key(request)` (see the README's
   * "Adaptive rate"). `true` for the defaults, the knobs (`ADAPTIVE_DEFAULTS`: `initialRate`,
   * `minRate`, `decrease`, `probeInterval`, `limitWindow`, `maxRate`, and `onChange`), or an
   * {@link AdaptiveRates} to share and read. Without `limit`/`limiter` the fetch discovers the rate;
   * with them the limit is a ceiling never exceeded and the starting rate, and its window's burst is
   * spread evenly (limit/interval apart) until the server accepts a second's worth at it.
   * @default false
   */
  adaptive?: boolean | AdaptiveRatesOptions | AdaptiveRates;
  /** The fetch to call, read at each call (so test mocks installed later apply). @default globalThis.fetch */
  fetch?: FetchLike;
  /** Permits one attempt costs, or a function of the request (e.g. estimated tokens). @default 1 */
  permits?: number | ((request: Request) => number);
  /**
   * What one attempt reserves, computed once per call from the request (may be async: it may read
   * the replayable body via `request.clone().text()`): a number, or per dimension for a limiter made
   * with `combine({ requests: …, tokens: … })` (a dimension left out reserves 0). Replaces `permits`
   * (giving both is a TypeError). A cost that can never fit rejects the call at once with the
   * limiter's RangeError naming the dimension, before anything is sent. Each attempt then takes a
   * reservation (`limiter.reserve`), which counts from its grant — also on a `WindowLimiter` with
   * `countFrom: "completion"` and with `limit`/`interval`: against a strict server's window, add the
   * longest time a request takes to reach the server to `interval`. @default permits
   * @example
   * ```ts
   * createThrottledFetch({ limiter: llm, cost: { requests: 1, tokens: 4000 } });
   * ```
   */
  cost?: Cost | ((request: Request) => Cost | Promise<Cost>);
  /**
   * The actual cost of an attempt, read from its response; its reservation settles to it (refund,
   * or debt when higher). Return `undefined` to keep it as reserved. For a streamed body, return
   * `{ response, actual }`: the call resolves with that `response` (e.g. a pass-through tap), and
   * settles when `actual` resolves. If `actual` resolves undefined or rejects, the value is not a
   * valid cost, or the caller never reads the body, the reservation counts in full. Called for every
   * response, retried ones included; attempts that fail (network error, timeout) count as reserved.
   * A throw from `settle` rejects the call (the reservation counts in full).
   * @example
   * ```ts
   * settle: async (response) => ({ tokens: (await response.clone().json()).usage.total_tokens }),
   * ```
   */
  settle?: SettleFunction;
  /**
   * At most this many attempts in flight at once (per key with a `KeyedLimiter`): a
   * `ConcurrencyLimiter` combined with the rate limiter (or alone, without `limit`/`limiter`). A slot
   * is held from the grant until the response body is fully read, cancelled or errors — for a
   * response without a body, until its headers — and freed after `slotTimeout` ms in which nobody
   * read the body (it stays readable). Attempts take reservations (see `cost`).
   * @example
   * ```ts
   * createThrottledFetch({ limit: 10, interval: 1000, maxConcurrent: 4 });
   * ```
   */
  maxConcurrent?: number;
  /** With `maxConcurrent`: ms a response body may go unread before its slot is freed. @default 30000 */
  slotTimeout?: number;
  /**
   * Queue priority of a call (higher first, default 0; FIFO within a priority), from the request.
   * Without it, the standard `init.priority` is honoured: "high" → 1, "low" → -1, "auto" → 0.
   * @example
   * ```ts
   * priority: (request) => (request.headers.get("x-interactive") ? 1 : 0),
   * ```
   */
  priority?: (request: Request) => number;
  /**
   * Reject with `MaxWaitExceededError` when the limiter predicts a longer wait than this (ms),
   * before queueing; a retry that would wait longer is not made (the caller gets the response).
   * @default the limiter's own `maxWait`
   */
  maxWait?: number;
  /** Retry settings, or a number of retries. @default DEFAULTS.retry */
  retry?: number | RetryOptions;
  /**
   * Per attempt: ms until the response headers must arrive (the body is read by the caller, under
   * the caller's signal). None by default, as with `fetch` itself (Node's fetch gives up on headers
   * after undici's `headersTimeout`, 300 s): a timeout needs an `AbortSignal` and a timer per
   * attempt, and on Node handing fetch a signal costs about as much as everything else sluice does
   * per request (bench/RESULTS.md, section 4, "raw `fetch` + signal"). Set it to bound an attempt.
   * @default Infinity
   */
  timeout?: number;
  /** The whole call — queueing, attempts, retry waits — in ms. @default Infinity */
  totalTimeout?: number;
  /** Accept decimal Retry-After seconds (`1.5`), which RFC 9110 does not allow. @default true */
  lenientRetryAfter?: boolean;
  /** Pause the limiter until the reset when RateLimit / X-RateLimit headers say 0 remaining. @default true */
  rateLimitHeaders?: boolean;
  /**
   * Send an idempotency key, the same on every attempt of a call, with non-idempotent requests
   * (POST, PATCH) — and retry them like idempotent ones, since the server deduplicates. A key the
   * caller set on the request is kept. @default false
   */
  idempotencyKey?: boolean | IdempotencyKeyOptions;
  /** A response throttled us (429, 503 + delay) or reported an exhausted quota. An `async` hook is awaited; a throw or rejection fails the call. */
  onThrottle?: (event: ThrottleEvent) => unknown;
  /** A retry is about to wait. An `async` hook is awaited; a throw or rejection fails the call. */
  onRetry?: (event: RetryEvent) => unknown;
  /** Every response, before it is returned or retried. An `async` hook is awaited; a throw or rejection fails the call. */
  onResponse?: (event: ResponseEvent) => unknown;
  /**
   * Timers and elapsed time, e.g. a `ManualClock` in tests; it must keep the limiter's time.
   * @default the limiter's clock (built-in limiters), else systemClock
   */
  clock?: Clock;
  /** Epoch ms, for HTTP-dates and epoch resets (the `Date` header is preferred when present). @default Date.now */
  wallClock?: () => number;
  /** Uniform random numbers in [0, 1), for jitter. @default Math.random; under a `ManualClock`, a seeded generator (a run in virtual time is the same every time) */
  random?: () => number;
}
