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
 * reserved from the start — what the server's own refund does to its bucket.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { combine } from "../limiters/combine.ts";
import { ConcurrencyLimiter } from "../limiters/concurrency.ts";
import { KeyedLimiter } from "../limiters/keyed.ts";
import { WindowLimiter } from "../limiters/window.ts";
import type { RetryContext } from "../http/options.ts";
import { readShouldRetry } from "./header-fields.ts";
import { readJsonUsage } from "./usage-response.ts";
import { tapUsage } from "./sse-usage.ts";
import type { Usage } from "./types.ts";
import type { Cost, SettleResult } from "./profile.ts";
import { MINUTE } from "./profile.ts";

/**
 * Budgets per model: the members live as long as the profile, the combinations per key may be evicted.
 *
 * @example
 * ```ts
 * const budgets = new ModelBudgets(() => ({ requests: 500, tokens: 200_000 }), undefined);
 * await budgets.keyed.get("gpt-4o-mini").reserve({ requests: 1, tokens: 1500 });
 * ```
 */
export class ModelBudgets<D extends string> {
  readonly #limits: (model: string) => Readonly<Record<D, number>>;
  readonly #clock: Clock | undefined;
  readonly #maxConcurrent: number | undefined;
  readonly #members = new Map<string, Record<D, WindowLimiter>>();
  readonly #slots = new Map<string, ConcurrencyLimiter>();
  readonly keyed: KeyedLimiter<string>;

  /**
   * @param maxConcurrent when given, each model's combination also holds a `concurrent` dimension:
   *   a slot from the grant until the reservation settles — for a settled call, once its usage is
   *   read, i.e. its body is done.
   */
  constructor(limits: (model: string) => Readonly<Record<D, number>>, clock: Clock | undefined, maxConcurrent?: number) {
    this.#limits = limits;
    this.#clock = clock;
    this.#maxConcurrent = maxConcurrent;
    this.keyed = new KeyedLimiter<string>({
      create: (model) => combine(this.#slotted(model)),
      ...(clock === undefined ? {} : { clock }),
    });
  }

  /** The cost of the `concurrent` dimension: 1 when `maxConcurrent` was given, else nothing. */
  get slot(): { concurrent?: number } {
    return this.#maxConcurrent === undefined ? {} : { concurrent: 1 };
  }

  #slotted(model: string): Record<string, WindowLimiter | ConcurrencyLimiter> {
    if (this.#maxConcurrent === undefined) return this.members(model);
    let slots = this.#slots.get(model);
    if (slots === undefined) {
      slots = new ConcurrencyLimiter({ limit: this.#maxConcurrent, ...(this.#clock === undefined ? {} : { clock: this.#clock }) });
      this.#slots.set(model, slots);
    }
    return { ...this.members(model), concurrent: slots };
  }

  /** The limiters of a model's budgets, by dimension (made on first use). */
  members(model: string): Record<D, WindowLimiter> {
    let members = this.#members.get(model);
    if (members === undefined) {
      const limits = this.#limits(model);
      members = {} as Record<D, WindowLimiter>;
      for (const [dimension, limit] of Object.entries(limits) as [D, number][]) {
        members[dimension] = new WindowLimiter({ limit, interval: MINUTE, ...(this.#clock === undefined ? {} : { clock: this.#clock }) });
      }
      this.#members.set(model, members);
    }
    return members;
  }

  /**
   * A budget the server reports lower than ours is lowered to match (never raised: a configured
   * budget below the server's is the caller's choice, e.g. to leave room for another client).
   */
  learn(model: string, dimension: D, reported: number | undefined): void {
    if (reported === undefined || reported < 1 || !this.#members.has(model)) return;
    const limiter = this.#members.get(model)![dimension];
    if (reported < limiter.limit) limiter.setLimit({ limit: reported });
  }
}

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
 * `retry.shouldRetry` for OpenAI and Anthropic: the server's `x-should-retry` decides when sent
 * (both official SDKs obey it); `retryStatuses` (Anthropic's 529) are retried with backoff even for
 * POST, since the server refused them before doing any work; otherwise the fetch's rule.
 *
 * @example
 * ```ts
 * createThrottledFetch({ limit: 5, retry: { shouldRetry: llmShouldRetry(new Set([529])) } });
 * ```
 */
export function llmShouldRetry(retryStatuses: ReadonlySet<number>): (context: RetryContext) => boolean | undefined {
  return ({ response }) => {
    if (response === undefined) return undefined;
    const advice = readShouldRetry(response.headers);
    if (advice !== undefined) return advice;
    return retryStatuses.has(response.status) ? true : undefined;
  };
}

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
