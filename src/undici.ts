/**
 * Entry point `sluice/undici` (JSR `@sluice/sluice/undici`): an undici interceptor that takes permits
 * from a sluice limiter before each request is sent and pauses it when the server throttles. On Node,
 * undici is the engine under `globalThis.fetch`, so one interceptor on the global dispatcher paces
 * every client of the process — fetch, undici, ky, SDKs — without touching their code.
 *
 * undici is an optional peer dependency (7 or 8) and is never imported: the interceptor is typed
 * structurally, and importing `sluice` never loads this entry.
 *
 * @example
 * ```ts
 * import { Agent, setGlobalDispatcher } from "undici";
 * import { WindowLimiter } from "sluice";
 * import { throttle } from "sluice/undici";
 *
 * const limiter = new WindowLimiter({ limit: 10, interval: 1000, countFrom: "completion" });
 * setGlobalDispatcher(new Agent().compose(throttle({ limiter })));
 * await fetch("https://api.example.com/items"); // Node's own fetch, now paced
 * ```
 *
 * @module
 */
export * from "./integrations/undici/index.ts";
// The core types this entry's API mentions, so its documentation is complete on its own. The classes
// are exported as values: a type-only re-export of a class came out of the declaration bundler as a
// plain one, so `new KeyedLimiter()` from here type-checked and failed at run time (red-team,
// 2026-11-27). The build splits shared code into chunks, so there is still one copy of each class.
export { GatedLimiter, KeyedLimiter } from "./index.ts";
export type { AcquireOptions, HeadersLike, Limiter, ScheduleOptions } from "./index.ts";
