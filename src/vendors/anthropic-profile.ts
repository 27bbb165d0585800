/**
 * `anthropic({ rpm, inputTpm, outputTpm })`: the throttled-fetch options for Anthropic's Messages API.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import type { ResponseEvent } from "../http/options.ts";
import { readAnthropicHeaders } from "./anthropic-headers.ts";
import { anthropicModelClass } from "./anthropic-models.ts";
import { type AnthropicEstimateOptions, estimateAnthropicRequest } from "./estimate-anthropic.ts";
import { llmShouldRetry, ModelBudgets, ModelOfRequest, settleFromUsage } from "./llm-profile.ts";
import { describeValue, positiveInteger } from "../validate.ts";
import { bodyText, type Cost, neverFits, perMinuteOption, profileOptions, type VendorProfile, wallClockOption } from "./profile.ts";

/**
 * Options of {@link anthropic}.
 *
 * @example
 * ```ts
 * const options: AnthropicProfileOptions = { rpm: 50, inputTpm: 30_000, outputTpm: 8_000 };
 * ```
 */
export interface AnthropicProfileOptions extends AnthropicEstimateOptions {
  /** Requests per minute (RPM). */
  readonly rpm: number;
  /** Input tokens per minute (ITPM). */
  readonly inputTpm: number;
  /** Output tokens per minute (OTPM). */
  readonly outputTpm: number;
  /**
   * At most this many calls in flight per model, each holding its slot until its usage is read (a
   * JSON answer's at once, from a clone; a stream's as it is read) — composes with the budgets in one
   * grant; a stream nobody reads for the fetch's `slotTimeout` frees its slot then, counted as reserved. (The fetch's own `maxConcurrent` does the
   * same for any profile; this one needs no support from the fetch.) @default no cap
   */
  readonly maxConcurrent?: number;
  /**
   * The budget a model draws from: models that map to one name share it. Anthropic pools a family's
   * versions (every Sonnet 4.x shares one Sonnet 4 budget). @default anthropicModelClass
   */
  readonly modelClass?: (model: string) => string;
  /** The clock of the budgets (a `ManualClock` in tests); it is passed on to the fetch. @default systemClock */
  readonly clock?: Clock;
  /**
   * Epoch ms the profile reads the vendor's resets against when a response has no `Date` header
   * (a virtual epoch in tests: `() => epoch + clock.now()`); it is passed on to the fetch.
   * @default Date.now
   */
  readonly wallClock?: () => number;
}

const KNOWN = ["maxConcurrent", "rpm", "inputTpm", "outputTpm", "modelClass", "clock", "charsPerToken", "defaultMaxOutputTokens", "wallClock"];

/** Anthropic's overload status: not a quota, retried with backoff, and no budget is paused or cut. */
const OVERLOADED = new Set([529]);

/**
 * Options for `createThrottledFetch` that keep a client inside Anthropic's rate limits: three budgets
 * per model class — requests, input tokens and output tokens per minute (a family's versions share
 * one, as Anthropic pools them: see `modelClass`).
 *
 * - **Reserves** 1 request, the input tokens estimated from the body (`system`, `messages`, `tools`,
 *   3.5 characters a token), and `max_tokens` output tokens.
 * - **Settles** input to `usage.input_tokens + cache_creation_input_tokens` (cache reads do not count
 *   against ITPM for most models) and output to `usage.output_tokens`: from a JSON response, or from
 *   a stream's `message_start`/`message_delta` events as the caller reads them. A 429 or 529 gives
 *   its tokens back.
 * - **Reads** `retry-after` (the fetch pauses the model's budgets for it on a 429), `x-should-retry`,
 *   and `anthropic-ratelimit-{requests,input-tokens,output-tokens}-{limit,remaining,reset}`: a limit
 *   the server reports below yours lowers your budget (a queued call asking more fails with a
 *   RangeError); `remaining`, less what calls sent later reserved, caps what is granted until the
 *   next answer, refilling until full at the RFC 3339 reset. A **529 `overloaded_error`** is retried
 *   with backoff (even a POST: the server did no work) and pauses or cuts nothing: it is not a
 *   quota (its tokens settle to 0, as a 429's).
 *
 * @throws {RangeError} for a limit that is not a positive integer; {@link TypeError} for an unknown option.
 * @example
 * ```ts
 * import { createThrottledFetch } from "sluice";
 * import { anthropic } from "sluice/vendors";
 *
 * const api = createThrottledFetch({ ...anthropic({ rpm: 50, inputTpm: 30_000, outputTpm: 8_000 }) });
 * ```
 */
export function anthropic(options: AnthropicProfileOptions): VendorProfile {
  const o = profileOptions("anthropic", options, KNOWN);
  const wall = wallClockOption(o.wallClock);
  const limits = {
    requests: perMinuteOption("rpm", o.rpm),
    input: perMinuteOption("inputTpm", o.inputTpm),
    output: perMinuteOption("outputTpm", o.outputTpm),
  };
  const estimate: AnthropicEstimateOptions = {
    ...(o.charsPerToken === undefined ? {} : { charsPerToken: o.charsPerToken }),
    ...(o.defaultMaxOutputTokens === undefined ? {} : { defaultMaxOutputTokens: o.defaultMaxOutputTokens }),
  };
  estimateAnthropicRequest("{}", estimate); // checks the estimator's options now
  if (o.modelClass !== undefined && typeof o.modelClass !== "function") {
    throw new TypeError(`\`modelClass\` must be a function, got ${describeValue(o.modelClass)}`);
  }
  const modelClass = o.modelClass ?? anthropicModelClass;
  const budgets = new ModelBudgets(() => limits, o.clock, o.maxConcurrent === undefined ? undefined : positiveInteger("maxConcurrent", o.maxConcurrent));
  const modelOf = new ModelOfRequest();

  const cost = async (request: Request): Promise<Cost> => {
    const found = estimateAnthropicRequest(await bodyText(request), estimate);
    const key = found?.model === undefined ? undefined : modelClass(found.model);
    modelOf.set(request, key);
    const input = found?.inputTokens ?? 0;
    const output = found?.outputTokens ?? 0;
    for (const [dimension, asked, what] of [["input", input, "input tokens (the prompt)"], ["output", output, "output tokens (max_tokens)"]] as const) {
      const limit = budgets.limitOf(key ?? "", dimension);
      // Said in the caller's terms (the limiter's own message names `cost.${dimension}` and "this limiter").
      if (asked > limit) throw neverFits(found!.model!, `${asked} ${what}`, String(limit));
    }
    return budgets.costOf(request, { requests: 1, input, output, ...budgets.slot });
  };
  const onResponse = ({ request, response, key }: ResponseEvent): void => {
    if (key === undefined || response.status === 529) return;
    const { budgets: reported } = readAnthropicHeaders(response, { now: wall.now() });
    budgets.learn(key, "requests", reported.requests?.limit);
    budgets.learn(key, "input", reported.input?.limit);
    budgets.learn(key, "output", reported.output?.limit);
    budgets.sync(key, request, { requests: reported.requests, input: reported.input, output: reported.output });
  };
  return {
    limiter: budgets.keyed,
    key: (request) => budgets.keyOf(request, modelOf.key(request)),
    cost,
    settle: settleFromUsage(
      "anthropic",
      (usage) => ({ requests: 1, input: usage.inputTokens + (usage.cacheCreationInputTokens ?? 0), output: usage.outputTokens }),
      { requests: 1, input: 0, output: 0 },
    ),
    retry: { shouldRetry: llmShouldRetry(OVERLOADED) },
    onResponse,
    ...(o.clock === undefined ? {} : { clock: o.clock }),
    ...wall.passOn,
  };
}
