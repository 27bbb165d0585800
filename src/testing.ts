/**
 * Test helpers for code that uses sluice — or any code that calls a rate-limited API:
 *
 * - {@link ManualClock}: a clock that only moves when told to.
 * - Simulated servers as pure state machines (time is an argument): {@link TokenBucketServer}
 *   (GCRA), {@link LeakyBucketServer} (nginx `limit_req`), {@link FixedWindowServer},
 *   {@link SlidingLogServer}; each can send IETF, `X-RateLimit-*` and `Retry-After` headers, or none.
 * - Vendor simulators: {@link OpenAISimulator}, {@link AnthropicSimulator}, {@link GitHubSimulator}.
 * - {@link createSimulatedFetch}: a `fetch` answered by a simulated server in virtual time, with
 *   counters of what the server saw.
 * - As msw handlers, for code that calls the global `fetch`: `sluice/testing/msw`.
 *
 * Web-standard only, no dependencies: runs on Node, Deno, Bun and browsers.
 *
 * @example
 * ```ts
 * import { ManualClock } from "sluice/testing";
 * import { SmoothLimiter } from "sluice";
 *
 * const clock = new ManualClock();
 * const limiter = new SmoothLimiter({ limit: 1, interval: 1000, clock });
 * await limiter.acquire();
 * const next = limiter.acquire();
 * await clock.advance(1000);
 * await next; // granted at virtual t = 1000
 * ```
 *
 * @module
 */
export { ManualClock } from "./clock.ts";
export { SeededRandom } from "./testing/random.ts";
export type { Decision, HeaderOptions, HeaderStyle, LimitChange, MeteredModel, ServerModel } from "./testing/decision.ts";
export { TokenBucketServer, type TokenBucketOptions } from "./testing/token-bucket.ts";
export { LeakyBucketServer, type LeakyBucketOptions } from "./testing/leaky-bucket.ts";
export { FixedWindowServer, type FixedWindowOptions } from "./testing/fixed-window.ts";
export { SlidingLogServer, type SlidingLogOptions } from "./testing/sliding-log.ts";
export { serveModel, type ServeModelOptions, type ServerContext, type SimulatedReply, type SimulatedServer } from "./testing/server.ts";
export { ServerStats, type Arrival, type WindowCount } from "./testing/stats.ts";
export { createSimulatedFetch, type SimulatedFetch, type SimulatedFetchOptions } from "./testing/simulated-fetch.ts";
export { DEFAULT_EPOCH_MS, estimateTokens, goDuration } from "./testing/vendor-format.ts";
export { OpenAISimulator, type CompletionContext, type OpenAILimits, type OpenAISimulatorOptions } from "./testing/openai.ts";
export type { OpenAIUsage } from "./testing/openai-bodies.ts";
export { AnthropicSimulator, type AnthropicLimits, type AnthropicSimulatorOptions } from "./testing/anthropic.ts";
export { GitHubSimulator, type GitHubQuota, type GitHubResource, type GitHubSimulatorOptions } from "./testing/github.ts";
