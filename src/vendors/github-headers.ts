/**
 * GitHub's rate-limit signals. The primary quota is reported per resource (`core`, `search`,
 * `graphql`, …) in `x-ratelimit-{limit,remaining,used,reset,resource}`, the reset in UTC epoch
 * seconds. A refusal is a 403 *or* a 429: a primary one when `x-ratelimit-remaining` is 0, a
 * secondary one when the body says "secondary rate limit" (`retry-after` may come with it). A 403
 * with neither is a permission error, not a rate limit.
 *
 * Source: `github/docs` rate-limits-for-the-rest-api.md and best-practices-for-using-the-rest-api.md;
 * see `notes/vendors.md` §2.1 and {@link GITHUB_LIMITS}.
 *
 * @module
 */

import { clampDelay, DIGITS, MAX_DELAY_MS, trimOws } from "../http/header-values.ts";
import { parseRetryAfter } from "../http/retry-after.ts";
import { positiveInteger } from "../validate.ts";
import { VENDOR_DEFAULTS } from "./defaults.ts";
import { GITHUB_LIMITS } from "./github-limits.ts";
import { budgetOf, countHeader, type ReadOptions, referenceNow, setDefined } from "./header-fields.ts";
import type { ResponseLike, VendorSignal } from "./types.ts";

/** Options for {@link readGitHubHeaders}. */
export interface GitHubReadOptions extends ReadOptions {
  /**
   * The start of the response body (from {@link readBodyPrefix}), needed to tell a secondary limit
   * from a permission error on a 403. Without it, a 403 counts as a rate limit only when
   * `x-ratelimit-remaining` is 0.
   */
  readonly body?: string | undefined;
}

/** The message GitHub's secondary-limit errors carry ("You have exceeded a secondary rate limit…"). */
const SECONDARY = /secondary rate limit/i;

/**
 * Reads what a GitHub response says about its rate limits.
 *
 * - `budgets.requests`: `limit`, `remaining`, `used` and `resetMs` (epoch-second reset minus the
 *   response's `Date`, else `now`; never negative); `resource` from `x-ratelimit-resource`.
 * - On a 403 or 429, `quotaSignal` with `secondary`:
 *   a body saying "secondary rate limit" (any case) → secondary;
 *   else `remaining` 0 → primary (`secondary: false`);
 *   else a 429 → secondary (the cautious reading: it waits at least a minute);
 *   else (a 403) → no quota signal: a permission error.
 * - `retryAfterMs` from `retry-after`.
 *
 * @throws {RangeError} when `now` is not a finite epoch time.
 * @example
 * ```ts
 * const response = new Response(null, { status: 403, headers: {
 *   "x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0", "x-ratelimit-used": "5000",
 *   "x-ratelimit-reset": "1700000060", "x-ratelimit-resource": "core",
 * } });
 * readGitHubHeaders(response, { now: 1_700_000_000_000 });
 * // { budgets: { requests: { limit: 5000, remaining: 0, used: 5000, resetMs: 60000 } },
 * //   quotaSignal: true, resource: "core", secondary: false }
 * ```
 */
export function readGitHubHeaders(response: ResponseLike, options: GitHubReadOptions): VendorSignal {
  const { headers, status } = response;
  const now = referenceNow(headers, options.now);
  const remaining = countHeader(headers, "x-ratelimit-remaining");
  const resetAt = epochSeconds(headers.get("x-ratelimit-reset"));
  const requests = budgetOf({
    limit: countHeader(headers, "x-ratelimit-limit"),
    remaining,
    used: countHeader(headers, "x-ratelimit-used"),
    resetMs: resetAt === undefined ? undefined : clampDelay(Math.ceil(resetAt - now)),
  });
  const signal: { -readonly [K in keyof VendorSignal]: VendorSignal[K] } = {
    budgets: requests === undefined ? {} : { requests },
    quotaSignal: false,
  };
  setDefined(signal, "retryAfterMs", parseRetryAfter(headers.get("retry-after"), { now: options.now, date: headers.get("date") }));
  const resource = headers.get("x-ratelimit-resource");
  if (resource !== null && trimOws(resource) !== "") signal.resource = trimOws(resource);
  if (status === 403 || status === 429) {
    const secondary = options.body !== undefined && SECONDARY.test(options.body);
    if (secondary || remaining === 0 || status === 429) {
      signal.quotaSignal = true;
      signal.secondary = secondary || remaining !== 0;
    }
  }
  return signal;
}

/** Epoch seconds (`^\d+$`) as epoch ms, or `undefined`. */
function epochSeconds(value: string | null): number | undefined {
  if (value === null) return undefined;
  const text = trimOws(value);
  return DIGITS.test(text) && text.length <= 15 ? Number(text) * 1000 : undefined;
}

/**
 * How long to wait after a GitHub rate-limit refusal, in whole ms, following GitHub's rules:
 * - primary: until the reset, plus {@link GITHUB_LIMITS}`.primaryResetMarginMs`;
 * - secondary: `retry-after` when sent; else the reset when `remaining` is 0; else at least
 *   {@link GITHUB_LIMITS}`.secondaryMinWaitMs` (60 s). When refusals repeat (`attempt` > 1) the wait
 *   grows exponentially: at least 60 s × 2^(attempt − 1).
 *
 * @param attempt how many refusals in a row this one is, from 1.
 * @returns the wait, or `undefined` when the signal is no rate-limit refusal.
 * @throws {RangeError} when `attempt` is not a positive integer.
 * @example
 * ```ts
 * githubWaitMs({ budgets: {}, quotaSignal: true, secondary: true }, 1); // 60000
 * githubWaitMs({ budgets: {}, quotaSignal: true, secondary: true }, 3); // 240000
 * githubWaitMs({ budgets: {}, quotaSignal: true, secondary: true, retryAfterMs: 5000 }, 1); // 5000
 * ```
 */
export function githubWaitMs(signal: VendorSignal, attempt: number): number | undefined {
  positiveInteger("attempt", attempt);
  if (!signal.quotaSignal) return undefined;
  const requests = signal.budgets.requests;
  if (signal.secondary !== true) {
    // A primary refusal without a reset: the secondary rule's minute is the cautious fallback.
    return clampDelay((requests?.resetMs ?? GITHUB_LIMITS.secondaryMinWaitMs) + GITHUB_LIMITS.primaryResetMarginMs);
  }
  const base = signal.retryAfterMs ??
    (requests?.remaining === 0 && requests.resetMs !== undefined ? requests.resetMs : GITHUB_LIMITS.secondaryMinWaitMs);
  if (attempt === 1) return base;
  const backoff = attempt > 60 ? MAX_DELAY_MS : GITHUB_LIMITS.secondaryMinWaitMs * 2 ** (attempt - 1);
  return clampDelay(Math.max(base, backoff));
}

/**
 * The first `maxBytes` bytes of a response's body, decoded as UTF-8, read from a *clone*: the
 * caller's body stays unread and whole. The clone's stream is cancelled once enough is read, so it
 * holds at most `maxBytes` (plus one network chunk) however large the body is. A body already used
 * or locked (which cannot be cloned) or a read error gives `""`.
 *
 * Use it only for refusals (GitHub's 403/429): cloning a body that the caller then streams slowly
 * makes the runtime buffer the difference between the two readers.
 *
 * @param maxBytes at most this many bytes are decoded. Default 4096: GitHub's messages are shorter.
 * @throws {RangeError} when `maxBytes` is not a positive integer.
 * @example
 * ```ts
 * const prefix = await readBodyPrefix(response);
 * readGitHubHeaders(response, { now: Date.now(), body: prefix });
 * await response.json(); // still readable
 * ```
 */
export async function readBodyPrefix(response: Response, maxBytes: number = VENDOR_DEFAULTS.bodyPrefixBytes): Promise<string> {
  positiveInteger("maxBytes", maxBytes);
  let copy: Response;
  try {
    if (response.body === null) return "";
    copy = response.clone();
  } catch {
    return "";
  }
  const reader = copy.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let read = 0;
  try {
    while (read < maxBytes) {
      const { done, value } = await reader.read();
      if (done) break;
      const part = value.subarray(0, maxBytes - read);
      read += part.length;
      text += decoder.decode(part, { stream: true });
    }
    return text + decoder.decode();
  } catch {
    return text;
  } finally {
    reader.cancel().catch(() => {});
  }
}
