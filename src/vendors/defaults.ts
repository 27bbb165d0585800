/**
 * Every default of the vendor building blocks in one object, so code, types and docs cannot drift.
 *
 * @module
 */

/**
 * The defaults of the estimators, the stream tap and the body readers, each with its source.
 *
 * @example
 * ```ts
 * VENDOR_DEFAULTS.openaiCharsPerToken; // 4
 * ```
 */
export const VENDOR_DEFAULTS: {
  readonly openaiCharsPerToken: number;
  readonly anthropicCharsPerToken: number;
  readonly defaultMaxOutputTokens: number;
  readonly completionsDefaultMaxTokens: number;
  readonly tokensPerMessage: number;
  readonly replyPrimingTokens: number;
  readonly maxLineBytes: number;
  readonly bodyPrefixBytes: number;
  readonly maxJsonBytes: number;
} = {
  /** OpenAI: "one token generally corresponds to ~4 characters of text for common English text" (help.openai.com, "What are tokens and how to count them"). */
  openaiCharsPerToken: 4,
  /** Anthropic: notes/vendors.md §4.3 gives chars/≈3.5–4; the cautious end. */
  anthropicCharsPerToken: 3.5,
  /** No maximum in the body: reserve no output, as OpenAI's up-front count does (notes/vendors.md §4.1). */
  defaultMaxOutputTokens: 0,
  /** Legacy completions' `max_tokens` default (OpenAI API reference: "Defaults to 16"). */
  completionsDefaultMaxTokens: 16,
  /** Chat framing per message (OpenAI cookbook, "How to count tokens with tiktoken"). */
  tokensPerMessage: 3,
  /** Chat framing that primes the reply (the same cookbook). */
  replyPrimingTokens: 3,
  /** The SSE tap's cap on a line plus an event's data; usage events are a few hundred bytes. */
  maxLineBytes: 65_536,
  /** How much of a refused response's body {@link readBodyPrefix} reads; GitHub's messages are shorter. */
  bodyPrefixBytes: 4_096,
  /** The largest JSON body {@link readJsonUsage} reads from a clone (an embeddings batch can be megabytes). */
  maxJsonBytes: 8 * 1024 * 1024,
};
