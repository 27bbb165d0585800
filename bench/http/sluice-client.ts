/**
 * sluice's throttled fetch in the HTTP section, configured as its README recommends:
 * - `neverBinds` (no limit given): a SmoothLimiter far above any rate the benchmark reaches, so the
 *   figure is the fetch wrapper's own overhead against raw fetch and ky;
 * - `limit`/`window`: the server's documented strict limit, stated as such — the `limit`/`interval`
 *   shorthand, a WindowLimiter counted from each response (safe at the documented limit).
 *
 * @module
 */
import { createThrottledFetch, SmoothLimiter } from "../../src/index.ts";

export interface SluiceFetchOptions {
  /** Permits per window; `undefined` = a limit that never binds. */
  limit?: number;
  window?: number;
  /** The per-attempt timeout (the default when absent). */
  timeout?: number;
  /** The fetch to wrap (global fetch when absent). */
  fetch?: FetchLike;
}

export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export function createSluiceFetch(options: SluiceFetchOptions): FetchLike | undefined {
  if (options.limit === undefined) {
    // 10⁹ per 10⁶ ms: SmoothLimiter's highest rate (a permit per µs), with a burst that never empties.
    return createThrottledFetch({
      limiter: new SmoothLimiter({ limit: 1e9, interval: 1e6, burst: 1e9 }),
      ...(options.timeout !== undefined && { timeout: options.timeout }),
      ...(options.fetch !== undefined && { fetch: options.fetch }),
    });
  }
  return createThrottledFetch({ limit: options.limit, interval: options.window ?? 1000 });
}
