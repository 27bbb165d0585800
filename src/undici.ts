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
// The core types this entry's API mentions, so its documentation is complete on its own. Types only:
// the classes themselves come from the main entry, so there is one copy of each at run time.
export type { AcquireOptions, GatedLimiter, HeadersLike, KeyedLimiter, Limiter, ScheduleOptions } from "./index.ts";
