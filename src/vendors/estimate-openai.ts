/**
 * The up-front cost of an OpenAI request, from its JSON body: what to reserve in the TPM budget
 * before sending, settled later from `usage` (see {@link readOpenAIUsage}).
 *
 * @module
 */

import { nonNegativeInteger, positiveFinite } from "../validate.ts";
import { parseJsonBody } from "./body-json.ts";
import { VENDOR_DEFAULTS } from "./defaults.ts";
import { integerField, jsonChars, modelOf, textChars, tokenIds } from "./prompt-text.ts";

/** Options for {@link estimateOpenAIRequest}. */
export interface OpenAIEstimateOptions {
  /**
   * Characters per token for the prompt estimate. OpenAI's rule of thumb: "one token generally
   * corresponds to ~4 characters of text for common English text" (help.openai.com, "What are
   * tokens and how to count them"). Text in other scripts has fewer characters per token; lower it
   * for such prompts (the settle corrects the budget either way).
   * @default 4
   */
  readonly charsPerToken?: number;
  /**
   * Output tokens reserved per choice when the body sets no `max_completion_tokens`, `max_tokens`
   * or `max_output_tokens` (legacy completions excepted: the server's default there is 16). The
   * default, 0, mirrors the server: without a maximum it counts only its prompt estimate up front,
   * and the settle charges what was generated.
   * @default 0
   */
  readonly defaultMaxOutputTokens?: number;
}

/** What an OpenAI request is estimated to cost. */
export interface OpenAIEstimate {
  /** The `model` field: the key of a per-model budget. */
  readonly model?: string;
  /** Estimated prompt tokens (exact when the prompt is given as token ids). */
  readonly inputTokens: number;
  /** Output tokens reserved per choice: the body's maximum, or the default when it sets none. */
  readonly outputTokens: number;
  /** Choices generated: `n`, or `best_of` for legacy completions when larger (all are generated). */
  readonly choices: number;
  /** The reservation: `inputTokens + outputTokens × choices`. */
  readonly tokens: number;
}

/**
 * Estimates the tokens an OpenAI request will count against TPM, from its JSON body, for chat
 * completions (`messages`), the Responses API (`input`, `instructions`), legacy completions
 * (`prompt`) and embeddings (`input`, also as token ids). Tool and schema definitions (`tools`,
 * `functions`, `response_format`, `text`) count as their JSON; a chat prompt adds its framing,
 * 3 tokens per message and 3 priming the reply (the OpenAI cookbook's count). Prompts given as
 * token ids count exactly. Characters are UTF-16 code units (`String.length`).
 *
 * The reservation is prompt + maximum output × choices, which is at least what the request can
 * use. OpenAI's own up-front count is "the maximum of max_tokens and the estimated number of
 * tokens based on the character count" (notes/vendors.md §4.1): with the same character estimate,
 * never more than this reservation, so reserving it never admits a request the server would count
 * over budget. Every figure is a safe integer (`tokens` is clamped to `Number.MAX_SAFE_INTEGER`).
 *
 * @param body the request body: a string or bytes (see {@link parseJsonBody}).
 * @returns the estimate, or `undefined` when the body is not a JSON object.
 * @throws {RangeError} when an option is out of range; {@link TypeError} when it is not a number.
 * @example
 * ```ts
 * estimateOpenAIRequest(JSON.stringify({
 *   model: "gpt-4o-mini", n: 2, max_completion_tokens: 100,
 *   messages: [{ role: "user", content: "Say hello in French." }],
 * }));
 * // { model: "gpt-4o-mini", inputTokens: 11, outputTokens: 100, choices: 2, tokens: 211 }
 * ```
 */
export function estimateOpenAIRequest(body: unknown, options: OpenAIEstimateOptions = {}): OpenAIEstimate | undefined {
  const charsPerToken = options.charsPerToken === undefined ? VENDOR_DEFAULTS.openaiCharsPerToken : positiveFinite("charsPerToken", options.charsPerToken);
  const defaultMax = options.defaultMaxOutputTokens === undefined ? VENDOR_DEFAULTS.defaultMaxOutputTokens : nonNegativeInteger("defaultMaxOutputTokens", options.defaultMaxOutputTokens);
  const json = parseJsonBody(body);
  if (json === undefined) return undefined;

  const ids = tokenIds(json.prompt) ?? tokenIds(json.input);
  let chars = 0;
  let framing = 0;
  if (ids === undefined) chars += textChars(json.prompt) + textChars(json.input);
  if (Array.isArray(json.messages)) {
    chars += textChars(json.messages);
    framing = json.messages.length * VENDOR_DEFAULTS.tokensPerMessage + VENDOR_DEFAULTS.replyPrimingTokens;
  }
  chars += textChars(json.instructions) + jsonChars(json.tools) + jsonChars(json.functions) +
    jsonChars(json.response_format) + jsonChars(json.text);
  const inputTokens = (ids ?? 0) + Math.ceil(chars / charsPerToken) + framing;

  const legacyCompletion = json.prompt !== undefined && json.messages === undefined;
  const outputTokens = integerField(json, "max_completion_tokens") ?? integerField(json, "max_tokens") ??
    integerField(json, "max_output_tokens") ?? (legacyCompletion ? VENDOR_DEFAULTS.completionsDefaultMaxTokens : defaultMax);
  const n = Math.max(1, integerField(json, "n") ?? 1);
  const choices = legacyCompletion ? Math.max(n, integerField(json, "best_of") ?? 1) : n;

  const model = modelOf(json);
  return {
    ...(model === undefined ? {} : { model }),
    inputTokens,
    outputTokens,
    choices,
    tokens: Math.min(inputTokens + outputTokens * choices, Number.MAX_SAFE_INTEGER),
  };
}
