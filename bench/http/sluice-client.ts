/**
 * PLACEHOLDER — sluice's throttled fetch in the HTTP section.
 *
 * The throttled fetch is being built on another branch. Once it lands, return a fetch-compatible
 * function here, configured as its README recommends:
 * - `neverBinds`: a limit no benchmark reaches (the overhead comparison with raw fetch and ky);
 * - `limit`/`window`: the same strict limit the local server enforces (the 429 comparison).
 * While this returns `undefined`, the HTTP tables show "pending" in sluice's rows.
 *
 * @module
 */
export interface SluiceFetchOptions {
  /** Permits per window; `undefined` = a limit that never binds. */
  limit?: number;
  window?: number;
}

export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export function createSluiceFetch(_options: SluiceFetchOptions): FetchLike | undefined {
  return undefined; // TODO(issue 5, section 4): wire sluice's throttled fetch here.
}
