/**
 * sluice for undici: one interceptor that throttles every HTTP client built on undici — Node's own
 * `fetch`, undici's `request` and `fetch`, and every library on top of them.
 *
 * @module
 */
export { throttle } from "./throttle.ts";
export type { DispatchThrottleEvent, ThrottleOptions } from "./options.ts";
export type { DispatchRequest, UndiciInterceptor } from "./types.ts";
