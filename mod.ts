/**
 * JSR entry point of sluice: re-exports the public API of `src/index.ts`.
 *
 * @example
 * ```ts
 * import { SmoothLimiter } from "jsr:@sluice/sluice";
 * const limiter = new SmoothLimiter({ limit: 10, interval: 1000 });
 * await limiter.acquire();
 * ```
 *
 * @module
 */
export * from "./src/index.ts";
