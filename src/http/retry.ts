/**
 * The retry decision: after an attempt, retry or not, and after how long. Pure apart from the
 * hooks and the budget it is handed, so the rules can be checked as a table and by properties.
 *
 * The rule:
 * - An *idempotent* method (GET, HEAD, OPTIONS, TRACE, PUT, DELETE, QUERY — or any request carrying
 *   an idempotency key) is retried on 408, 429, 500, 502, 503, 504 and on network errors and attempt
 *   timeouts: sending it twice has the same effect as sending it once.
 * - Any other method (POST, PATCH, …) is retried only when the server said it refused the request
 *   before doing any work: 429 (the request was rate limited), or 503 *with* a Retry-After or
 *   RateLimit delay (the server is shedding load and says when to come back). A 500, a 502, a
 *   timeout or a dropped connection may come after the work was done — the payment made, the
 *   message sent — so retrying could do it twice; the caller gets the response or error instead.
 * - Never: once `limit` retries were made; when the body was a stream (it cannot be sent again
 *   intact); when the server asks for more than `maxRetryAfter` (the caller gets that response:
 *   no clamping, no early retry); when the wait would end past `totalTimeout` or exceed `maxWait`;
 *   when the retry budget is spent (throttled retries excepted).
 *
 * A `shouldRetry` hook may also answer `{ retryAfter: ms }`: "retry, and the server asked for this
 * delay" (GitHub's 403 refusals, a delay read from the body): the retry then counts as the server's,
 * like a 429 with Retry-After — exempt from the budget, refused past `maxRetryAfter`, its delay
 * never shortened — and the loop pauses the shared limiter for it.
 *
 * The delay: the server's delay when it gave one, else exponential backoff with full jitter,
 * `random(0, min(cap, base·2ⁿ⁻¹))` for the n-th retry; never less than the server asked, whatever
 * the `delay` hook says. A throttled response without a delay waits the full backoff step
 * (`min(cap, base·2ⁿ⁻¹)`, no jitter): that step is also how long the shared limiter pauses, and the
 * limiter — not jitter — spreads the waiting callers out when it resumes.
 *
 * @module
 */
import type { RetryBudget } from "./budget.ts";
import { describeValue, nonNegativeFinite, quietly } from "../validate.ts";

/** The settings the decision reads (resolved from `RetryOptions` and `DEFAULTS`). */
export interface RetryPolicy {
  /** Retries allowed after the first attempt. */
  readonly limit: number;
  /** Methods retried like idempotent ones (upper case). */
  readonly methods: ReadonlySet<string>;
  /** Statuses that may be retried. */
  readonly statusCodes: ReadonlySet<number>;
  /** The longest server delay honoured, in ms. */
  readonly maxRetryAfter: number;
  /** Full-jitter backoff parameters, in ms. */
  readonly backoff: { readonly base: number; readonly cap: number };
  /**
   * The dimensions of a named combination that a server's delay pauses (`retry.pauseDimensions`);
   * `undefined` pauses the whole limiter.
   */
  readonly pauseDimensions?: readonly string[] | undefined;
}

/**
 * A `shouldRetry` answer saying the server timed the retry: retry after `retryAfter` ms, which the
 * server asked for in a way the fetch does not read by itself (a 403 with a rate-limit body, a
 * vendor header). The retry is treated like a 429 with that Retry-After: the shared limiter pauses
 * for it (every caller waits; see `retry.pauseDimensions`), `onThrottle` is told, it is exempt from
 * the retry budget, and a delay past `maxRetryAfter` is not retried (the caller gets the response).
 * After an attempt that got no response it acts as `true` with at least that delay.
 *
 * @example
 * ```ts
 * const shouldRetry = ({ response }: RetryContext): RetryVerdict =>
 *   response?.status === 403 && response.headers.get("x-ratelimit-remaining") === "0"
 *     ? { retryAfter: 60_000 }
 *     : undefined;
 * ```
 */
export interface ServerTimedRetry {
  /** The server's delay before the retry, in ms (a non-negative finite number, rounded up). */
  readonly retryAfter: number;
}

/**
 * What a `shouldRetry` hook answers: `true` retry, `false` don't, `undefined` let the rule decide, or
 * a {@link ServerTimedRetry}.
 *
 * @example
 * ```ts
 * const verdicts: RetryVerdict[] = [true, false, undefined, { retryAfter: 2000 }];
 * ```
 */
export type RetryVerdict = boolean | undefined | ServerTimedRetry;

/** How an attempt ended, as far as the decision cares. */
export type AttemptOutcome =
  | {
    readonly kind: "response";
    readonly status: number;
    /** The delay the server asked for (Retry-After, retry-after-ms, RateLimit reset on 429/503), in ms. */
    readonly serverDelay: number | undefined;
  }
  | {
    readonly kind: "error";
    /** True when the attempt was cut off by the per-attempt `timeout`. */
    readonly timedOut: boolean;
    /** True when the error will come again however often the request is sent (see `lasting-errors.ts`). */
    readonly lasting?: boolean;
  };


/**
 * Why an attempt was not retried (`ResponseEvent.reason`).
 *
 * @example
 * ```ts
 * const onResponse = ({ reason }: { reason?: NoRetryReason }) => {
 *   if (reason === "retry-after-too-long") scheduleForLater();
 * };
 * ```
 */
export type NoRetryReason =
  /** The rule (or the `shouldRetry` hook) says this outcome is final. */
  | "not-retryable"
  /** `limit` retries were made already. */
  | "attempts"
  /** The body was a stream and cannot be sent again intact. */
  | "streamed-body"
  /** The server asked for a longer wait than `maxRetryAfter`. */
  | "retry-after-too-long"
  /** The wait would end after `totalTimeout`. */
  | "total-timeout"
  /** The wait would be longer than the caller's `maxWait`. */
  | "max-wait"
  /** The retry budget shared by all callers is spent. */
  | "budget";

/** The decision after one attempt. */
export type RetryDecision =
  | {
    readonly retry: true;
    /** How long to wait before the next attempt, in ms (never less than the server asked). */
    readonly delay: number;
    /** The server throttled this request (429, or 503 with a delay, or a {@link ServerTimedRetry}). */
    readonly throttled: boolean;
    /**
     * Set when a {@link ServerTimedRetry} timed the retry after a response: the server's delay, ms,
     * which the loop pauses the shared limiter for (the response alone did not make it pause).
     */
    readonly timedByHook?: number;
  }
  | {
    readonly retry: false;
    readonly reason: NoRetryReason;
    /** The server's delay, when that was the reason (`retry-after-too-long`). */
    readonly delay?: number;
  };

/** Everything one decision depends on. */
export interface RetryInput {
  /** Attempts made so far in this call (1 after the first). */
  readonly attempt: number;
  readonly outcome: AttemptOutcome;
  /** The method is idempotent (or the request carries an idempotency key). */
  readonly idempotent: boolean;
  /** The body can be sent again intact. */
  readonly replayable: boolean;
  /** ms since the call began. */
  readonly elapsed: number;
  /**
   * How long every caller of the key is already held (the server's pause, or the wait the learned
   * rate advised through a refusal run), ms: the retry waits at least that. @default 0
   */
  readonly paused?: number;
  /** The call's total timeout, ms (`Infinity` = none). */
  readonly totalTimeout: number;
  /** The longest wait for one attempt the caller accepts, ms (`Infinity` or absent = any). */
  readonly maxWait?: number | undefined;
  readonly policy: RetryPolicy;
  /** Uniform random numbers in [0, 1), for jitter. */
  readonly random: () => number;
  /** Spent for each retry the server did not time. */
  readonly budget?: RetryBudget | undefined;
  /** The user's `shouldRetry` hook, bound to this attempt: `undefined` = the rule decides. */
  readonly shouldRetry?: (() => RetryVerdict | PromiseLike<RetryVerdict>) | undefined;
  /** The user's `delay` hook, bound to this attempt, given the computed delay: `undefined` = keep it. */
  readonly delay?: ((computed: number) => number | undefined) | undefined;
}

/**
 * True when the server said it refused the request before doing any work: 429, or 503 with a delay.
 *
 * @example
 * ```ts
 * isThrottled({ kind: "response", status: 503, serverDelay: 2000 }); // true
 * isThrottled({ kind: "response", status: 503, serverDelay: undefined }); // false
 * ```
 */
export function isThrottled(outcome: AttemptOutcome): boolean {
  return outcome.kind === "response" &&
    (outcome.status === 429 || (outcome.status === 503 && outcome.serverDelay !== undefined));
}

/**
 * The rule alone (no hooks, no limits): may this outcome be retried for this kind of method?
 *
 * @example
 * ```ts
 * retryableByRule({ kind: "response", status: 500, serverDelay: undefined }, false, policy); // false: POST
 * ```
 */
export function retryableByRule(outcome: AttemptOutcome, idempotent: boolean, policy: RetryPolicy): boolean {
  if (outcome.kind === "error") return idempotent && outcome.lasting !== true;
  if (!policy.statusCodes.has(outcome.status)) return false;
  return idempotent || isThrottled(outcome);
}

/**
 * The full backoff step before the `retry`-th retry: `min(cap, base·2^(retry−1))` ms.
 *
 * @example
 * ```ts
 * backoffStep(3, { base: 1000, cap: 30_000 }); // 4000
 * ```
 */
export function backoffStep(retry: number, backoff: RetryPolicy["backoff"]): number {
  // 2^(retry-1) overflows to Infinity for huge retry counts; min() then yields the cap.
  return Math.min(backoff.cap, backoff.base * 2 ** (retry - 1));
}

/**
 * Full jitter: a uniformly random delay in `[0, backoffStep(retry))` ms.
 *
 * @example
 * ```ts
 * backoffDelay(1, { base: 1000, cap: 30_000 }, () => 0.5); // 500
 * ```
 */
export function backoffDelay(retry: number, backoff: RetryPolicy["backoff"], random: () => number): number {
  const r = random();
  if (!(r >= 0 && r < 1)) throw new RangeError(`\`random\` must return a number in [0, 1), got ${String(r)}`);
  return r * backoffStep(retry, backoff);
}

/**
 * Decides whether to retry after an attempt and how long to wait (see the module note for the rule).
 * Spends a budget token only when everything else says yes and the server did not time the retry.
 *
 * @example
 * ```ts
 * const decision = await decideRetry({
 *   attempt: 1, outcome: { kind: "response", status: 503, serverDelay: 2000 }, idempotent: false,
 *   replayable: true, elapsed: 0, totalTimeout: Infinity, policy, random: Math.random,
 * });
 * // { retry: true, delay: ≥ 2000, throttled: true }
 * ```
 */
export async function decideRetry(input: RetryInput): Promise<RetryDecision> {
  const { outcome, policy } = input;
  const byRule = retryableByRule(outcome, input.idempotent, policy);
  if (!byRule && input.shouldRetry === undefined) return { retry: false, reason: "not-retryable" };
  if (input.attempt > policy.limit) return { retry: false, reason: "attempts" };
  if (!input.replayable) return { retry: false, reason: "streamed-body" };
  const verdict = input.shouldRetry === undefined ? undefined : await input.shouldRetry();
  const timed = hookDelay(verdict);
  if (timed === undefined && !(verdict as boolean | undefined ?? byRule)) return { retry: false, reason: "not-retryable" };

  const answered = outcome.kind === "response";
  // The hook's delay is the server's too (read where the fetch does not look); the longer one holds.
  const serverDelay = answered
    ? timed === undefined ? outcome.serverDelay : Math.max(timed, outcome.serverDelay ?? 0)
    : undefined;
  if (serverDelay !== undefined && serverDelay > policy.maxRetryAfter) {
    return { retry: false, reason: "retry-after-too-long", delay: serverDelay };
  }
  const throttled = isThrottled(outcome) || (answered && timed !== undefined);
  const computed = throttled && serverDelay === undefined
    ? backoffStep(input.attempt, policy.backoff)
    : Math.max(serverDelay ?? 0, timed ?? 0, backoffDelay(input.attempt, policy.backoff, input.random));
  const chosen = input.delay === undefined ? undefined : input.delay(computed);
  if (chosen !== undefined && (typeof chosen !== "number" || !(chosen >= 0) || !Number.isFinite(chosen))) {
    quietly(chosen);
    throw new RangeError(`\`retry.delay\` must return a non-negative finite number of ms or undefined, got ${describeValue(chosen)}`);
  }
  // The hook may shorten our backoff, never the server's delay.
  const delay = Math.max(chosen ?? computed, serverDelay ?? 0, timed ?? 0);
  // The retry goes no sooner than the pause every caller is held by: a wait the learned rate
  // advised (a refusal run names no delay; up to 2 min) counts as a server's delay would — past
  // `maxRetryAfter` the caller gets the response, and the timeouts and `maxWait` see the whole wait
  // (a review, 2026-11-27: calls took 6 minutes, or failed with TimeoutError).
  const paused = input.paused ?? 0;
  if (paused > delay && paused > policy.maxRetryAfter) return { retry: false, reason: "retry-after-too-long", delay: paused };
  const wait = Math.max(delay, paused);
  if (input.elapsed + wait >= input.totalTimeout) return { retry: false, reason: "total-timeout" };
  if (input.maxWait !== undefined && wait > input.maxWait) return { retry: false, reason: "max-wait" };
  // A retry the server timed waits for it through the shared pause, which bounds its rate: no budget
  // is spent. One timed shorter than the first backoff step (at most 1 s) pauses next to nothing —
  // `Retry-After: 0` during an outage made 2,000 callers send 6,000 requests — so it spends one.
  const paced = throttled && (serverDelay === undefined || serverDelay >= Math.min(policy.backoff.base, 1000));
  if (!paced && input.budget !== undefined && !input.budget.tryWithdraw()) return { retry: false, reason: "budget" };
  return answered && timed !== undefined ? { retry: true, delay, throttled, timedByHook: serverDelay! } : { retry: true, delay, throttled };
}

/** The delay of a {@link ServerTimedRetry} answer (ms, rounded up), `undefined` for a boolean or none; bad answers throw. */
function hookDelay(verdict: unknown): number | undefined {
  if (verdict === undefined || typeof verdict === "boolean") return undefined;
  if (typeof verdict !== "object" || verdict === null) {
    throw new TypeError(`\`retry.shouldRetry\` must return true, false, undefined or { retryAfter }, got ${String(verdict)}`);
  }
  return Math.ceil(nonNegativeFinite("retry.shouldRetry().retryAfter", (verdict as { retryAfter?: unknown }).retryAfter));
}
