/**
 * What the OpenAI and Anthropic profiles share: budgets per model (one named combination of
 * `WindowLimiter`s per model, whose members outlive the combination), the retry rules both vendors
 * send (`x-should-retry`; Anthropic's 529), and settling from `usage` — JSON read from a clone, SSE
 * read through the tap as the caller reads it.
 *
 * Why `WindowLimiter` (a strict rolling window) for every budget: both vendors meter with token
 * buckets holding one minute's worth, and a sequence with at most L permits in any window of I ms
 * fits a bucket of capacity L refilling L per I (over any span t: at most ⌈t/I⌉·L ≤ L + t·L/I), while
 * a long run still uses the whole rate. A settle moves the window as if the actual cost had been
 * reserved from the start — what the server's own refund does to its bucket. Whether the server
 * refunds is not documented (OpenAI counts `max(max_tokens, estimate)` up front): beside each
 * window, a mirror of the server's `remaining` holds the grants to what the server says it has left
 * (see `model-budgets.ts`).
 *
 * @module
 */

import type { RetryContext } from "../http/options.ts";
import type { RetryVerdict } from "../http/retry.ts";
import { readShouldRetry } from "./header-fields.ts";
import { readJsonUsage } from "./usage-response.ts";
import { tapUsage } from "./sse-usage.ts";
import type { Usage } from "./types.ts";
import type { Cost, SettleResult } from "./profile.ts";

export { ModelBudgets } from "./model-budgets.ts";

/**
 * The key of a request whose cost was not (yet) computed: one shared budget.
 *
 * @example
 * ```ts
 * new ModelOfRequest().key(new Request("https://x")) === UNKNOWN_MODEL; // true
 * ```
 */
export const UNKNOWN_MODEL = "(unknown model)";

/**
 * The model each request's `cost` found in its body, for `key` — when the fetch computes a request's
 * cost before choosing its budget (both see the same `Request`); otherwise {@link UNKNOWN_MODEL}.
 *
 * @example
 * ```ts
 * const models = new ModelOfRequest();
 * models.set(request, "gpt-4o");
 * models.key(request); // "gpt-4o"
 * ```
 */
export class ModelOfRequest {
  readonly #models = new WeakMap<Request, string>();
  set(request: Request, model: string | undefined): void {
    if (model !== undefined) this.#models.set(request, model);
  }
  key = (request: Request): string => this.#models.get(request) ?? UNKNOWN_MODEL;
}

/**
 * `retry.shouldRetry` for OpenAI and Anthropic: the server's `x-should-retry: false` forbids a
 * retry (both official SDKs obey it); `retryStatuses` (Anthropic's 529) are retried even for POST,
 * since the server refused them before doing any work — as server-timed retries, after 1 s doubling
 * with each attempt up to 32 s, for which the fetch pauses every caller of the model and spends no
 * retry budget; otherwise `x-should-retry: true` retries, else the fetch's rule.
 *
 * @example
 * ```ts
 * createThrottledFetch({ limit: 5, retry: { shouldRetry: llmShouldRetry(new Set([529])) } });
 * ```
 */
export function llmShouldRetry(retryStatuses: ReadonlySet<number>): (context: RetryContext) => RetryVerdict {
  return ({ response, attempt }) => {
    if (response === undefined) return undefined;
    const advice = readShouldRetry(response.headers);
    if (advice === false) return false;
    if (!retryStatuses.has(response.status)) return advice;
    // An overload is the server's word to wait: a server-timed retry, so every caller of the model
    // waits with it (the fetch pauses the model's budgets) and no retry budget is spent — the
    // request it keeps already bounds what goes out. (As a plain retry, a 5-s overload of 200 calls
    // spent the budget and returned 40 calls with their 529; red-team, 2026-11-27.)
    return { retryAfter: Math.min(MAX_OVERLOAD_WAIT, OVERLOAD_WAIT * 2 ** (attempt - 1)) };
  };
}

/** The wait after an overload (529), doubling with each attempt of a call, up to {@link MAX_OVERLOAD_WAIT}. */
const OVERLOAD_WAIT = 1000;
const MAX_OVERLOAD_WAIT = 32_000;

/**
 * Settles from `usage`: a streamed (SSE) response through the tap, whose pass-through the caller
 * reads; a JSON one from a clone. A refusal (429, 529) settles its tokens to 0 and keeps the request.
 *
 * @example
 * ```ts
 * const settle = settleFromUsage("openai", (u) => ({ requests: 1, tokens: u.totalTokens }), { requests: 1, tokens: 0 });
 * ```
 */
export function settleFromUsage(
  vendor: "openai" | "anthropic",
  actual: (usage: Usage) => Cost,
  refused: Cost,
): (response: Response) => SettleResult {
  return (response) => {
    if (response.status === 429 || response.status === 529) return refused;
    if (response.status < 200 || response.status > 299) return undefined; // may have been counted: keep it
    const type = response.headers.get("content-type") ?? "";
    const toCost = (usage: Usage | undefined) => (usage === undefined ? undefined : actual(usage));
    if (type.includes("text/event-stream")) {
      const tapped = tapUsage(response, { vendor });
      return { response: tapped.response, actual: tapped.usage.then(toCost) };
    }
    return { response, actual: readJsonUsage(response, { vendor }).then(toCost) };
  };
}
