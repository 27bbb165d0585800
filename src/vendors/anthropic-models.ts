/**
 * Which Anthropic models share one set of rate limits. Anthropic applies its limits "separately for
 * each model", but a family's versions pool theirs: every Opus 4.x draws from one Opus 4 budget,
 * every Sonnet 4.x from one Sonnet 4 budget (the rate-limits guide). Two budgets for Sonnet 4.5 and
 * 4.6 would let a client send twice what the server accepts.
 *
 * @module
 */

/** `claude-{family}-{major}`, then an optional minor version and an optional date. */
const VERSIONED = /^(claude-(?:opus|sonnet|haiku)-\d+)(?:-\d{1,2})?(?:-\d{8})?$/;

/**
 * The budget a model draws from: its family and major version for the current naming
 * (`claude-sonnet-4-5-20250929` → `claude-sonnet-4`), else the model's own name (older names,
 * `claude-3-5-sonnet-20241022`, each have limits of their own).
 *
 * @example
 * ```ts
 * anthropicModelClass("claude-opus-4-1-20250805"); // "claude-opus-4"
 * anthropicModelClass("claude-sonnet-4-6");        // "claude-sonnet-4"
 * anthropicModelClass("claude-3-5-haiku-latest");  // "claude-3-5-haiku-latest"
 * ```
 */
export function anthropicModelClass(model: string): string {
  return VERSIONED.exec(model)?.[1] ?? model;
}
