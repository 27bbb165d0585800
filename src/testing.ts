/**
 * Test helpers for code that uses sluice: a clock that only moves when told to.
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
