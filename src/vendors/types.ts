/**
 * The shapes every vendor reader returns, so a profile handles OpenAI, Anthropic and GitHub alike.
 *
 * @module
 */

import type { HeadersLike } from "../http/header-values.ts";

export type { HeadersLike };

/** The part of a `Response` the header readers use; any fetch `Response` fits. */
export interface ResponseLike {
  /** The HTTP status code. */
  readonly status: number;
  /** The response headers. */
  readonly headers: HeadersLike;
}

/** One budget as the server reported it. Fields the server did not send (or sent malformed) are absent. */
export interface VendorBudget {
  /** The budget's size (requests or tokens per window). */
  readonly limit?: number;
  /** What is left of it now, as the server counts. */
  readonly remaining?: number;
  /** GitHub only: what has been used in the current window. */
  readonly used?: number;
  /**
   * Whole ms from now until the budget is *fully* replenished (OpenAI, Anthropic) or its window
   * restarts (GitHub); never negative.
   */
  readonly resetMs?: number;
}

/** The budgets a response reports, by dimension; a dimension the vendor did not report is absent. */
export interface VendorBudgets {
  /** Requests per window. */
  readonly requests?: VendorBudget;
  /** Tokens per window (OpenAI TPM; Anthropic's most restrictive token limit in effect). */
  readonly tokens?: VendorBudget;
  /** Anthropic input tokens per minute (ITPM). */
  readonly input?: VendorBudget;
  /** Anthropic output tokens per minute (OTPM). */
  readonly output?: VendorBudget;
}

/** What one response says about the vendor's rate limits, in the same shape for every vendor. */
export interface VendorSignal {
  /** The budgets the headers reported. */
  readonly budgets: VendorBudgets;
  /** How long the server asked to wait before retrying, in whole ms, when it said so. */
  readonly retryAfterMs?: number;
  /** The server's own retry advice (`x-should-retry: true`/`false`), when it gave one. */
  readonly shouldRetry?: boolean;
  /**
   * True when the request was refused because a rate limit was reached: the profile should pause
   * the budget. False for everything else, including Anthropic's 529 (overload, not quota) and 5xx.
   */
  readonly quotaSignal: boolean;
  /** Anthropic 529 `overloaded_error`: retry with backoff, but do not cut any budget. */
  readonly overloaded?: boolean;
  /** GitHub: the rate-limit resource the request counted against (`core`, `search`, `graphql`, …). */
  readonly resource?: string;
  /** GitHub, on a quota signal: true for a secondary limit, false for the primary quota. */
  readonly secondary?: boolean;
}

/** Tokens a response used, normalised across vendors (settle a reservation with it). */
export interface Usage {
  /**
   * Input (prompt) tokens. OpenAI: `prompt_tokens`/`input_tokens`, cached tokens included.
   * Anthropic: `input_tokens`, which excludes the cache fields below.
   */
  readonly inputTokens: number;
  /** Output (completion) tokens; 0 for embeddings. */
  readonly outputTokens: number;
  /** Anthropic: tokens written to the prompt cache (count against input limits). */
  readonly cacheCreationInputTokens?: number;
  /** Anthropic: tokens read from the prompt cache (excluded from ITPM for most models). */
  readonly cacheReadInputTokens?: number;
  /** OpenAI: `prompt_tokens_details.cached_tokens` / `input_tokens_details.cached_tokens`, a part of `inputTokens`. */
  readonly cachedInputTokens?: number;
  /** `total_tokens` when the vendor sent it, else input + output (+ Anthropic cache fields). */
  readonly totalTokens: number;
}
