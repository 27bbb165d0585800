/**
 * OpenAI's rate-limit headers: two budgets, requests and tokens, each with a limit, what remains,
 * and a Go-duration reset (`x-ratelimit-reset-tokens: 6m0s`) meaning the time until the budget is
 * back to its *initial* state — a full refill, not the next token, so pausing for it over-waits.
 *
 * Source: OpenAI's rate-limits guide (header table, samples 60 / 150000 / 59 / 149984 / 1s / 6m0s);
 * see `notes/vendors.md` §2.1.
 *
 * @module
 */

import { parseRetryAfter, parseRetryAfterMs } from "../http/retry-after.ts";
import { assertNow } from "../http/http-date.ts";
import { budgetOf, countHeader, type ReadOptions, readShouldRetry, setDefined } from "./header-fields.ts";
import { parseGoDuration } from "./go-duration.ts";
import type { ResponseLike, VendorBudgets, VendorSignal } from "./types.ts";

/**
 * Reads what an OpenAI (or Azure OpenAI) response says about its rate limits.
 *
 * - `budgets.requests` / `budgets.tokens` from `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`;
 *   a malformed field is left out, the others are kept.
 * - `retryAfterMs` from `retry-after-ms` (OpenAI's own, ms), else `retry-after` (seconds or HTTP-date).
 * - `shouldRetry` from `x-should-retry`.
 * - `quotaSignal` for a 429. A 429 for an exhausted *billing* quota (`insufficient_quota` in the
 *   body) carries the same status; headers alone cannot tell them apart.
 *
 * @throws {RangeError} when `now` is not a finite epoch time.
 * @example
 * ```ts
 * const response = new Response(null, { status: 429, headers: {
 *   "x-ratelimit-limit-tokens": "150000", "x-ratelimit-remaining-tokens": "149984",
 *   "x-ratelimit-reset-tokens": "6m0s", "retry-after-ms": "850",
 * } });
 * readOpenAIHeaders(response, { now: Date.now() });
 * // { budgets: { tokens: { limit: 150000, remaining: 149984, resetMs: 360000 } },
 * //   retryAfterMs: 850, quotaSignal: true }
 * ```
 */
export function readOpenAIHeaders(response: ResponseLike, options: ReadOptions): VendorSignal {
  const { headers } = response;
  assertNow(options.now);
  const budgets: { -readonly [K in keyof VendorBudgets]: VendorBudgets[K] } = {};
  for (const dimension of ["requests", "tokens"] as const) {
    setDefined(budgets, dimension, budgetOf({
      limit: countHeader(headers, `x-ratelimit-limit-${dimension}`),
      remaining: countHeader(headers, `x-ratelimit-remaining-${dimension}`),
      resetMs: parseGoDuration(headers.get(`x-ratelimit-reset-${dimension}`)),
    }));
  }
  const signal: { -readonly [K in keyof VendorSignal]: VendorSignal[K] } = { budgets, quotaSignal: response.status === 429 };
  setDefined(signal, "retryAfterMs", parseRetryAfterMs(headers.get("retry-after-ms")) ??
    parseRetryAfter(headers.get("retry-after"), { now: options.now, date: headers.get("date") }));
  setDefined(signal, "shouldRetry", readShouldRetry(headers));
  return signal;
}
