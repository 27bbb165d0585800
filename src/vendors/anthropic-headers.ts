/**
 * Anthropic's rate-limit headers: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-
 * {limit,remaining,reset}`, resets as RFC 3339 timestamps (`2025-08-21T12:40:59Z`). The limits are
 * token buckets with continuous refill; `-tokens-*` is the most restrictive token limit in effect.
 * A 529 `overloaded_error` means the service is overloaded, not that a quota was reached: retry
 * with backoff, and do not cut any budget.
 *
 * Sources: the Claude Platform rate-limits guide (header list, "Time when the request limit resets
 * (RFC 3339)"), captured real headers, and the 529 semantics; see `notes/vendors.md` §2.1.
 *
 * @module
 */

import { clampDelay } from "../http/header-values.ts";
import { parseRetryAfter } from "../http/retry-after.ts";
import { budgetOf, countHeader, type ReadOptions, readShouldRetry, referenceNow, setDefined } from "./header-fields.ts";
import { parseRfc3339 } from "./rfc3339.ts";
import type { ResponseLike, VendorBudgets, VendorSignal } from "./types.ts";

/** Header infix of each budget. */
const DIMENSIONS = [
  ["requests", "requests"],
  ["tokens", "tokens"],
  ["input", "input-tokens"],
  ["output", "output-tokens"],
] as const;

/**
 * Reads what an Anthropic response says about its rate limits.
 *
 * - `budgets.{requests,tokens,input,output}`; each reset is the RFC 3339 time minus the response's
 *   `Date` (or `now` when `Date` is absent or invalid), never negative. Malformed fields are left out.
 * - `retryAfterMs` from `retry-after` (seconds, or an HTTP-date); `shouldRetry` from `x-should-retry`.
 * - `quotaSignal` for a 429 (`rate_limit_error`); `overloaded` (and no quota signal) for a 529.
 *
 * @throws {RangeError} when `now` is not a finite epoch time.
 * @example
 * ```ts
 * const response = new Response(null, { status: 429, headers: {
 *   "anthropic-ratelimit-input-tokens-limit": "40000",
 *   "anthropic-ratelimit-input-tokens-remaining": "0",
 *   "anthropic-ratelimit-input-tokens-reset": "2025-08-21T12:40:59Z",
 *   "retry-after": "12",
 * } });
 * readAnthropicHeaders(response, { now: Date.parse("2025-08-21T12:40:47Z") });
 * // { budgets: { input: { limit: 40000, remaining: 0, resetMs: 12000 } }, retryAfterMs: 12000, quotaSignal: true }
 * ```
 */
export function readAnthropicHeaders(response: ResponseLike, options: ReadOptions): VendorSignal {
  const { headers } = response;
  const now = referenceNow(headers, options.now);
  const budgets: { -readonly [K in keyof VendorBudgets]: VendorBudgets[K] } = {};
  for (const [dimension, infix] of DIMENSIONS) {
    const prefix = `anthropic-ratelimit-${infix}-`;
    const resetAt = parseRfc3339(headers.get(`${prefix}reset`));
    setDefined(budgets, dimension, budgetOf({
      limit: countHeader(headers, `${prefix}limit`),
      remaining: countHeader(headers, `${prefix}remaining`),
      resetMs: resetAt === undefined ? undefined : clampDelay(Math.ceil(resetAt - now)),
    }));
  }
  const signal: { -readonly [K in keyof VendorSignal]: VendorSignal[K] } = { budgets, quotaSignal: response.status === 429 };
  setDefined(signal, "retryAfterMs", parseRetryAfter(headers.get("retry-after"), { now: options.now, date: headers.get("date") }));
  setDefined(signal, "shouldRetry", readShouldRetry(headers));
  if (response.status === 529) signal.overloaded = true;
  return signal;
}
