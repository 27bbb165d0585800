/**
 * `sluice/vendors`: options for `createThrottledFetch` that keep a client inside a vendor's rate
 * limits — `openai()`, `anthropic()`, `github()` — and the pure building blocks they are made of
 * (header readers, cost estimators, usage readers, the SSE usage tap). Web-standard APIs only, no
 * dependencies.
 *
 * @example
 * ```ts
 * import { createThrottledFetch } from "sluice";
 * import { openai } from "sluice/vendors";
 *
 * const api = createThrottledFetch({ ...openai({ rpm: 500, tpm: 200_000 }) });
 * ```
 *
 * @module
 */

export * from "./vendors/index.ts";
export { openai, type OpenAIModelLimits, type OpenAIProfileOptions } from "./vendors/openai-profile.ts";
export { anthropic, type AnthropicProfileOptions } from "./vendors/anthropic-profile.ts";
export { anthropicModelClass } from "./vendors/anthropic-models.ts";
export { github, type GitHubProfileOptions, type GitHubProfileResource, githubResource } from "./vendors/github-profile.ts";
export type { Cost, SettleResult, VendorProfile } from "./vendors/profile.ts";
