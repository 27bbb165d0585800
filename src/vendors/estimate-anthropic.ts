/**
 * The up-front cost of an Anthropic Messages request, from its JSON body: input tokens for the ITPM
 * budget, output tokens (`max_tokens`) for OTPM, settled later from `usage` (see {@link readAnthropicUsage}).
 *
 * @module
 */

import { nonNegativeInteger, positiveFinite } from "../validate.ts";
import { parseJsonBody } from "./body-json.ts";
import { VENDOR_DEFAULTS } from "./defaults.ts";
import { integerField, jsonChars, modelOf, textChars } from "./prompt-text.ts";

/** Options for {@link estimateAnthropicRequest}. */
export interface AnthropicEstimateOptions {
  /**
   * Characters per token for the input estimate. notes/vendors.md §4.3 gives "chars/≈3.5–4" for
   * Claude; the default takes the cautious end (more tokens per character), since an input estimate
   * that is too low over-admits until the settle.
   * @default 3.5
   */
  readonly charsPerToken?: number;
  /**
   * Output tokens reserved when the body has no `max_tokens` (which the Messages API requires, so
   * such a request is refused anyway).
   * @default 0
   */
  readonly defaultMaxOutputTokens?: number;
}

/** What an Anthropic request is estimated to cost. */
export interface AnthropicEstimate {
  /** The `model` field: the key of a per-model budget. */
  readonly model?: string;
  /** Estimated input tokens: `system`, `messages` (every content block's text) and `tools`. */
  readonly inputTokens: number;
  /** Output tokens reserved: `max_tokens` (it bounds thinking tokens too). */
  readonly outputTokens: number;
}

/**
 * Estimates an Anthropic Messages request's input and output tokens from its JSON body.
 *
 * Input counts the text of `system` (a string or text blocks) and of every message's content
 * (a string, or blocks: text, tool inputs and results, documents' text), plus `tools` as JSON;
 * base64 images and documents are not text and are left to the settle. Output is `max_tokens`.
 *
 * @param body the request body: a string or bytes (see {@link parseJsonBody}).
 * @returns the estimate, or `undefined` when the body is not a JSON object.
 * @throws {RangeError} when an option is out of range; {@link TypeError} when it is not a number.
 * @example
 * ```ts
 * estimateAnthropicRequest(JSON.stringify({
 *   model: "claude-sonnet-4-5", max_tokens: 1024, system: "Be brief.",
 *   messages: [{ role: "user", content: [{ type: "text", text: "Hello, Claude" }] }],
 * }));
 * // { model: "claude-sonnet-4-5", inputTokens: 7, outputTokens: 1024 }
 * ```
 */
export function estimateAnthropicRequest(body: unknown, options: AnthropicEstimateOptions = {}): AnthropicEstimate | undefined {
  const charsPerToken = options.charsPerToken === undefined ? VENDOR_DEFAULTS.anthropicCharsPerToken : positiveFinite("charsPerToken", options.charsPerToken);
  const defaultMax = options.defaultMaxOutputTokens === undefined ? VENDOR_DEFAULTS.defaultMaxOutputTokens : nonNegativeInteger("defaultMaxOutputTokens", options.defaultMaxOutputTokens);
  const json = parseJsonBody(body);
  if (json === undefined) return undefined;
  const chars = textChars(json.system) + textChars(json.messages) + jsonChars(json.tools);
  const model = modelOf(json);
  return {
    ...(model === undefined ? {} : { model }),
    inputTokens: Math.ceil(chars / charsPerToken),
    outputTokens: integerField(json, "max_tokens") ?? defaultMax,
  };
}
