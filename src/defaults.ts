/**
 * Every default of sluice in one frozen object, so code, types and README cannot drift apart: the
 * limiter defaults (`interval`, `burst`, `maxQueue`, `maxWait`, `maxKeys`, `idleTimeout`) and the
 * throttled fetch defaults (`permits`, `timeout`, `totalTimeout`, `retry`, …).
 *
 * @module
 */
import { HTTP_DEFAULTS, type HttpDefaults } from "./http/defaults.ts";
import { LIMITER_DEFAULTS } from "./limiters/defaults.ts";

/**
 * The defaults of every limiter and of {@link createThrottledFetch}.
 *
 * @example
 * ```ts
 * import { DEFAULTS } from "sluice";
 * DEFAULTS.interval;              // 1000 (limiters)
 * DEFAULTS.retry.limit;           // 2 (throttled fetch)
 * DEFAULTS.retry.maxRetryAfter;   // 60000
 * ```
 */
export const DEFAULTS: typeof LIMITER_DEFAULTS & HttpDefaults = Object.freeze({ ...LIMITER_DEFAULTS, ...HTTP_DEFAULTS });
