/**
 * Default option values of {@link createThrottledFetch}, in one place so code, types and docs cannot
 * drift apart. `DEFAULTS` (in `src/defaults.ts`) folds these together with the limiter defaults.
 *
 * @module
 */

/**
 * Backoff between retries that the server did not time: full jitter, `random(0, min(cap, base·2ⁿ⁻¹))`.
 *
 * @example
 * ```ts
 * import { DEFAULTS } from "sluice";
 * DEFAULTS.retry.backoff.base; // 1000
 * ```
 */
export interface BackoffDefaults {
  /** The first retry waits up to this many ms; each further retry doubles it. */
  readonly base: number;
  /** No backoff step exceeds this many ms. */
  readonly cap: number;
}

/**
 * The retry budget shared by every call of one throttled fetch (see `RetryBudget`).
 *
 * @example
 * ```ts
 * import { DEFAULTS } from "sluice";
 * DEFAULTS.retry.budget.ratio; // 0.2
 * ```
 */
export interface BudgetDefaults {
  /** Retry tokens each call earns: retries stay below this share of calls (0.2 = 20 %). */
  readonly ratio: number;
  /** Tokens held at the start and at most: retries a quiet client may always make. */
  readonly reserve: number;
}

/**
 * When and how a throttled fetch retries.
 *
 * @example
 * ```ts
 * import { DEFAULTS } from "sluice";
 * DEFAULTS.retry.maxRetryAfter; // 60000
 * ```
 */
export interface RetryDefaults {
  /** Retries after the first attempt (so `limit + 1` attempts at most). */
  readonly limit: number;
  /** Idempotent methods (RFC 9110 §9.2.2, plus QUERY): retried on any retryable status or network error. */
  readonly methods: readonly string[];
  /** Statuses that may be retried. Other methods are retried only on 429, or 503 with a server delay. */
  readonly statusCodes: readonly number[];
  /** The longest server-requested delay honoured, in ms; a longer one is not retried and pauses nobody. */
  readonly maxRetryAfter: number;
  /** Backoff for retries the server did not time. */
  readonly backoff: BackoffDefaults;
  /** Retries (other than throttled ones) across all callers are bounded by this budget. */
  readonly budget: BudgetDefaults;
}

/**
 * Defaults of {@link createThrottledFetch} options.
 *
 * @example
 * ```ts
 * import { DEFAULTS } from "sluice";
 * DEFAULTS.retry.limit; // 2
 * ```
 */
export interface HttpDefaults {
  /** Permits each attempt costs. */
  readonly permits: number;
  /** Per attempt: ms until the response headers must have arrived. */
  readonly timeout: number;
  /** Whole call (queueing, attempts, retry waits): ms until it must have a response. */
  readonly totalTimeout: number;
  /** Read `Retry-After: 1.5` (decimal seconds, not RFC 9110) as 1500 ms rather than ignore it. */
  readonly lenientRetryAfter: boolean;
  /** Pause the limiter when RateLimit / X-RateLimit headers report a remaining quota of 0. */
  readonly rateLimitHeaders: boolean;
  /** Send an idempotency key with non-idempotent requests (and retry them like idempotent ones). */
  readonly idempotencyKey: boolean;
  /** Learn the server's rate per key (see `ADAPTIVE_DEFAULTS` for the knobs). */
  readonly adaptive: boolean;
  /** The header `idempotencyKey: true` sets on non-idempotent requests. */
  readonly idempotencyKeyHeader: string;
  /** With `maxConcurrent`: ms a response body may go unread before its slot is freed. */
  readonly slotTimeout: number;
  /** Retry settings. */
  readonly retry: RetryDefaults;
}

/**
 * Defaults of the throttled fetch. Frozen: read them, don't change them.
 *
 * @example
 * ```ts
 * import { DEFAULTS } from "sluice";
 * DEFAULTS.retry.statusCodes; // [408, 429, 500, 502, 503, 504]
 * ```
 */
export const HTTP_DEFAULTS: HttpDefaults = Object.freeze({
  permits: 1,
  // Long enough for slow APIs (only the wait for headers counts), short enough that a silent server
  // cannot hold a slot of a completion-counted window forever.
  timeout: Infinity,
  totalTimeout: Infinity,
  // A lenient misread can only make us wait longer; a strict one falls back to a shorter backoff.
  lenientRetryAfter: true,
  rateLimitHeaders: true,
  idempotencyKey: false,
  adaptive: false,
  idempotencyKeyHeader: "Idempotency-Key",
  // A caller that reads its body reads it at once; one that never will must not hold a slot long.
  slotTimeout: 30_000,
  retry: Object.freeze({
    limit: 2,
    methods: Object.freeze(["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE", "QUERY"]),
    statusCodes: Object.freeze([408, 429, 500, 502, 503, 504]),
    maxRetryAfter: 60_000,
    backoff: Object.freeze({ base: 1000, cap: 30_000 }),
    budget: Object.freeze({ ratio: 0.2, reserve: 10 }),
  }),
});
