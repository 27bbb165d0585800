/**
 * The tokens a response actually used, read from its JSON (a whole response, or one streamed
 * event), to settle a reservation.
 *
 * @module
 */

import type { Usage } from "./types.ts";

import { describeValue } from "../validate.ts";

type Json = Record<string, unknown>;

/**
 * Checks a `vendor` option: `"openai"` or `"anthropic"`, else a TypeError naming the value.
 *
 * @example
 * ```ts
 * usageVendor("openai"); // "openai"
 * usageVendor("gemini"); // TypeError: `vendor` must be "openai" or "anthropic", got "gemini"
 * ```
 */
export function usageVendor(vendor: unknown): "openai" | "anthropic" {
  if (vendor !== "openai" && vendor !== "anthropic") {
    throw new TypeError(`\`vendor\` must be "openai" or "anthropic", got ${describeValue(vendor)}`);
  }
  return vendor;
}

function objectAt(value: unknown, key: string): Json | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const child = (value as Json)[key];
  return typeof child === "object" && child !== null && !Array.isArray(child) ? (child as Json) : undefined;
}

function count(value: Json | undefined, key: string): number | undefined {
  const n = value?.[key];
  return typeof n === "number" && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** The Responses API's last stream events, each carrying the response with its `usage`. */
const FINAL_RESPONSE_EVENTS = new Set(["response.completed", "response.incomplete", "response.failed"]);

/**
 * Reads OpenAI `usage` from a response's JSON: chat and legacy completions
 * (`prompt_tokens`, `completion_tokens`, `total_tokens`, `prompt_tokens_details.cached_tokens`),
 * embeddings (`prompt_tokens`, `total_tokens`), the Responses API (`input_tokens`, `output_tokens`,
 * `input_tokens_details.cached_tokens`), a streamed chat chunk carrying usage (the last one, with
 * `stream_options: { include_usage: true }`), and a streamed `response.completed` event (or
 * `response.incomplete` / `response.failed`: a stream cut by `max_output_tokens` or an error still
 * reports what it used).
 *
 * @returns the usage, or `undefined` when the JSON has none (`usage: null` in streamed chunks).
 * @example
 * ```ts
 * readOpenAIUsage({ usage: { prompt_tokens: 9, completion_tokens: 12, total_tokens: 21 } });
 * // { inputTokens: 9, outputTokens: 12, totalTokens: 21 }
 * ```
 */
export function readOpenAIUsage(json: unknown): Usage | undefined {
  const event = json as Json | null;
  const usage = typeof event?.type === "string" && FINAL_RESPONSE_EVENTS.has(event.type)
    ? objectAt(objectAt(json, "response"), "usage")
    : objectAt(json, "usage");
  const inputTokens = count(usage, "prompt_tokens") ?? count(usage, "input_tokens");
  if (inputTokens === undefined) return undefined;
  const outputTokens = count(usage, "completion_tokens") ?? count(usage, "output_tokens") ?? 0;
  const cached = count(objectAt(usage, "prompt_tokens_details"), "cached_tokens") ??
    count(objectAt(usage, "input_tokens_details"), "cached_tokens");
  return {
    inputTokens,
    outputTokens,
    ...(cached === undefined ? {} : { cachedInputTokens: cached }),
    totalTokens: count(usage, "total_tokens") ?? inputTokens + outputTokens,
  };
}

/**
 * Reads Anthropic `usage` from a Messages response's JSON, or from a streamed `message_start`
 * (`message.usage`) or `message_delta` (`usage`) event: `input_tokens`, `output_tokens`,
 * `cache_creation_input_tokens`, `cache_read_input_tokens`. Anthropic's `input_tokens` excludes
 * the cache fields; cache reads do not count against ITPM for most models (notes/vendors.md §4.1),
 * so input-budget usage is `inputTokens + (cacheCreationInputTokens ?? 0)`.
 *
 * @returns the usage, or `undefined` when the JSON has no `input_tokens` and no `output_tokens`.
 * @example
 * ```ts
 * readAnthropicUsage({ usage: { input_tokens: 25, output_tokens: 140, cache_read_input_tokens: 1000 } });
 * // { inputTokens: 25, outputTokens: 140, cacheReadInputTokens: 1000, totalTokens: 1165 }
 * ```
 */
export function readAnthropicUsage(json: unknown): Usage | undefined {
  const usage = objectAt(json, "usage") ?? objectAt(objectAt(json, "message"), "usage");
  return anthropicUsageOf(usage, undefined);
}

/**
 * Anthropic usage from a `usage` object, each field falling back to `base` (a `message_delta`'s
 * cumulative output over `message_start`'s input). Shared with the stream tap.
 */
export function anthropicUsageOf(usage: Json | undefined, base: Usage | undefined): Usage | undefined {
  const input = count(usage, "input_tokens") ?? base?.inputTokens;
  const output = count(usage, "output_tokens") ?? base?.outputTokens;
  if (input === undefined && output === undefined) return undefined;
  const creation = count(usage, "cache_creation_input_tokens") ?? base?.cacheCreationInputTokens;
  const read = count(usage, "cache_read_input_tokens") ?? base?.cacheReadInputTokens;
  return {
    inputTokens: input ?? 0,
    outputTokens: output ?? 0,
    ...(creation === undefined ? {} : { cacheCreationInputTokens: creation }),
    ...(read === undefined ? {} : { cacheReadInputTokens: read }),
    totalTokens: (input ?? 0) + (output ?? 0) + (creation ?? 0) + (read ?? 0),
  };
}
