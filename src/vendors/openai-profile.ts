/**
 * `openai({ rpm, tpm })`: the throttled-fetch options for OpenAI's API.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import type { ResponseEvent } from "../http/options.ts";
import { describeValue, positiveInteger } from "../validate.ts";
import { estimateOpenAIRequest, type OpenAIEstimateOptions } from "./estimate-openai.ts";
import { llmShouldRetry, ModelBudgets, ModelOfRequest, settleFromUsage } from "./llm-profile.ts";
import { readOpenAIHeaders } from "./openai-headers.ts";
import { bodyText, type Cost, neverFits, perMinuteOption, profileOptions, type VendorProfile, wallClockOption } from "./profile.ts";

/**
 * A model's limits: requests and tokens per minute (your organization's, from the limits page).
 *
 * @example
 * ```ts
 * const limits: OpenAIModelLimits = { rpm: 500, tpm: 200_000 };
 * ```
 */
export interface OpenAIModelLimits {
  /** Requests per minute. */
  readonly rpm: number;
  /** Tokens per minute. */
  readonly tpm: number;
}

/**
 * Options of {@link openai}.
 *
 * @example
 * ```ts
 * const options: OpenAIProfileOptions = { rpm: 500, tpm: 200_000, models: { "gpt-4o": { rpm: 500, tpm: 30_000 } } };
 * ```
 */
export interface OpenAIProfileOptions extends OpenAIModelLimits, OpenAIEstimateOptions {
  /**
   * Limits of particular models; every other model gets `rpm`/`tpm`. OpenAI's limits are per
   * model (each has its own RPM and TPM), so each model gets budgets of its own either way.
   */
  readonly models?: Readonly<Record<string, OpenAIModelLimits>>;
  /**
   * At most this many calls in flight per model, each holding its slot until its usage is read (a
   * JSON answer's at once, from a clone; a stream's as it is read) — composes with the budgets in one
   * grant; a stream nobody reads for the fetch's `slotTimeout` frees its slot then, counted as reserved. (The fetch's own `maxConcurrent` does the
   * same for any profile; this one needs no support from the fetch.) @default no cap
   */
  readonly maxConcurrent?: number;
  /** The clock of the budgets (a `ManualClock` in tests); it is passed on to the fetch. @default systemClock */
  readonly clock?: Clock;
  /**
   * Epoch ms the profile reads the vendor's resets against when a response has no `Date` header
   * (a virtual epoch in tests: `() => epoch + clock.now()`); it is passed on to the fetch.
   * @default Date.now
   */
  readonly wallClock?: () => number;
}

const KNOWN = ["maxConcurrent", "rpm", "tpm", "models", "clock", "charsPerToken", "defaultMaxOutputTokens", "wallClock"];

/**
 * Options for `createThrottledFetch` that keep a client inside OpenAI's rate limits: two budgets per
 * model, requests and tokens per minute.
 *
 * - **Reserves** 1 request and `prompt + max_tokens × n` tokens per attempt, estimated from the JSON
 *   body (see `estimateOpenAIRequest`; OpenAI counts `max(max_tokens, estimate)` up front, never more)
 *   — at most the model's whole TPM when that count fits in it (the server accepts such a request).
 * - **Settles** the tokens to `usage.total_tokens`: from a JSON response (read from a clone), or from
 *   the final chunk of a stream as the caller reads it (send `stream_options: { include_usage: true }`;
 *   a stream without usage counts its full reservation). A 429 gives its tokens back.
 * - **Reads** `retry-after-ms`/`retry-after` (the fetch pauses the model's budgets for them on a
 *   429), `x-should-retry` (decides retries when sent), and `x-ratelimit-{limit,remaining,reset}-
 *   {requests,tokens}`: a limit the server reports below yours lowers your budget (a queued call
 *   asking more fails with a RangeError); `remaining`, less what calls sent later reserved, caps
 *   what is granted until the next answer, refilling until full at the reset (the time until the
 *   budget is full again) — so a server that keeps its up-front charge refuses nothing either.
 *
 * Budgets are strict one-minute rolling windows per model (fits OpenAI's one-minute token buckets).
 * The model is read from the body by `cost` (the throttled fetch computes the cost before the key),
 * so each model has budgets of its own: `models[name]`, else `rpm`/`tpm`.
 *
 * @throws {RangeError} for a limit that is not a positive integer; {@link TypeError} for an unknown option.
 * @example
 * ```ts
 * import { createThrottledFetch } from "sluice";
 * import { openai } from "sluice/vendors";
 *
 * const api = createThrottledFetch({ ...openai({ rpm: 500, tpm: 200_000 }), timeout: 120_000 });
 * const response = await api("https://api.openai.com/v1/chat/completions", { method: "POST", headers, body });
 * ```
 */
export function openai(options: OpenAIProfileOptions): VendorProfile {
  const o = profileOptions("openai", options, KNOWN);
  const wall = wallClockOption(o.wallClock);
  const fallback = { requests: perMinuteOption("rpm", o.rpm), tokens: perMinuteOption("tpm", o.tpm) };
  const models: Record<string, { requests: number; tokens: number }> = {};
  if (o.models !== undefined) {
    if (typeof o.models !== "object" || o.models === null) throw new TypeError(`\`models\` must be an object of { rpm, tpm }, got ${describeValue(o.models)}`);
    for (const [name, limits] of Object.entries(o.models)) {
      if (typeof limits !== "object" || limits === null) throw new TypeError(`\`models.${name}\` must be { rpm, tpm }, got ${describeValue(limits)}`);
      for (const key of Object.keys(limits)) {
        if (key !== "rpm" && key !== "tpm") throw new TypeError(`\`models.${name}.${key}\` is not a model limit (known: rpm, tpm)`);
      }
      models[name] = { requests: perMinuteOption(`models.${name}.rpm`, limits.rpm), tokens: perMinuteOption(`models.${name}.tpm`, limits.tpm) };
    }
  }
  const estimate: OpenAIEstimateOptions = {
    ...(o.charsPerToken === undefined ? {} : { charsPerToken: o.charsPerToken }),
    ...(o.defaultMaxOutputTokens === undefined ? {} : { defaultMaxOutputTokens: o.defaultMaxOutputTokens }),
  };
  estimateOpenAIRequest("{}", estimate); // checks the estimator's options now, not at the first call
  const budgets = new ModelBudgets((model) => (Object.hasOwn(models, model) ? models[model]! : fallback), o.clock, o.maxConcurrent === undefined ? undefined : positiveInteger("maxConcurrent", o.maxConcurrent));
  const modelOf = new ModelOfRequest();

  const cost = async (request: Request): Promise<Cost> => {
    const found = estimateOpenAIRequest(await bodyText(request), estimate);
    modelOf.set(request, found?.model);
    let tokens = found?.tokens ?? 0;
    if (found !== undefined) {
      // OpenAI counts max(max_tokens × n, the prompt's estimate) up front: a request whose prompt +
      // output passes the minute's budget but whose count does not is one the server accepts. It
      // reserves the whole minute then, rather than failing with a RangeError (red-team, 2026-11-27).
      const limit = budgets.limitOf(found.model ?? "", "tokens");
      if (tokens > limit && Math.max(found.inputTokens, found.outputTokens * found.choices) <= limit) tokens = limit;
      if (tokens > limit) {
        // Said in the caller's terms (the limiter's own message names `cost.tokens` and "this limiter").
        throw neverFits(found.model ?? "", `${tokens} tokens (prompt about ${found.inputTokens}, max_tokens × n ${found.outputTokens * found.choices})`, `${limit} tokens`);
      }
    }
    return budgets.costOf(request, { requests: 1, tokens, ...budgets.slot });
  };
  const onResponse = ({ request, response, key }: ResponseEvent): void => {
    if (key === undefined) return;
    const { budgets: reported } = readOpenAIHeaders(response, { now: wall.now() });
    budgets.learn(key, "requests", reported.requests?.limit);
    budgets.learn(key, "tokens", reported.tokens?.limit);
    budgets.sync(key, request, { requests: reported.requests, tokens: reported.tokens });
  };
  return {
    limiter: budgets.keyed,
    key: (request) => budgets.keyOf(request, modelOf.key(request)),
    cost,
    settle: settleFromUsage("openai", (usage) => ({ requests: 1, tokens: usage.totalTokens }), { requests: 1, tokens: 0 }),
    retry: { shouldRetry: llmShouldRetry(new Set()) },
    onResponse,
    ...(o.clock === undefined ? {} : { clock: o.clock }),
    ...wall.passOn,
  };
}
