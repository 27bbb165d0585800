/**
 * `sluice/vendors` building blocks: pure readers of OpenAI, Anthropic and GitHub rate-limit
 * headers, request-cost estimators, usage readers (JSON and streamed), and GitHub's documented
 * limits. Web-standard APIs only, no dependencies. The profiles (`openai()`, `anthropic()`,
 * `github()`) are assembled from these.
 *
 * @module
 */

export { parseGoDuration, parseGoDurationNs } from "./go-duration.ts";
export { parseRfc3339 } from "./rfc3339.ts";
export { type ReadOptions, readShouldRetry } from "./header-fields.ts";
export { readOpenAIHeaders } from "./openai-headers.ts";
export { readAnthropicHeaders } from "./anthropic-headers.ts";
export { type GitHubReadOptions, githubWaitMs, readBodyPrefix, readGitHubHeaders } from "./github-headers.ts";
export { GITHUB_LIMITS } from "./github-limits.ts";
export { parseJsonBody } from "./body-json.ts";
export { estimateOpenAIRequest, type OpenAIEstimate, type OpenAIEstimateOptions } from "./estimate-openai.ts";
export { type AnthropicEstimate, type AnthropicEstimateOptions, estimateAnthropicRequest } from "./estimate-anthropic.ts";
export { readAnthropicUsage, readOpenAIUsage } from "./usage.ts";
export { type JsonUsageOptions, readJsonUsage } from "./usage-response.ts";
export { VENDOR_DEFAULTS } from "./defaults.ts";
export { type SseEvent, SseScanner } from "./sse-scanner.ts";
export { type TappedResponse, tapUsage, type TapUsageOptions } from "./sse-usage.ts";
export type { HeadersLike, ResponseLike, Usage, VendorBudget, VendorBudgets, VendorSignal } from "./types.ts";
