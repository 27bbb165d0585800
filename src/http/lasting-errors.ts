/**
 * Errors no retry cures: what each runtime's fetch gives a request that cannot succeed (a refused
 * redirect, a redirect loop, a malformed `Location`, an integrity mismatch, an unsupported scheme, a
 * blocked port), known by its own words or codes. The retry rule does not retry them.
 *
 * @module
 */

/**
 * True for an error that fetch gives a request that cannot succeed, so that retrying it only spends
 * permits and time: a redirect refused by `redirect: "error"`, too many redirects, an integrity
 * mismatch, an unsupported scheme, a blocked port, a malformed `Location` — known by undici's own
 * words for its cause (with no error code), Deno's message, Bun's code. Network failures (with a
 * code such as `ECONNREFUSED`) are retried; so is anything else (a browser says only "Failed to fetch").
 *
 * @example
 * ```ts
 * lastingError(Object.assign(new TypeError("fetch failed"), { cause: new Error("unexpected redirect") })); // true
 * ```
 */
export function lastingError(error: unknown): boolean {
  if (!(error instanceof TypeError)) return false;
  // Bun says so in its code; Deno in its message (a refused redirect, a redirect loop, a blocked
  // port, an unsupported scheme).
  const code = (error as { code?: unknown }).code;
  if (code === "UnexpectedRedirect" || code === "TooManyRedirects" || code === "ERR_INVALID_ARG_VALUE") return true;
  if (DENO_LASTING.test(error.message)) return true;
  if (error.message !== "fetch failed") return false;
  const cause = (error as { cause?: unknown }).cause;
  if (!(cause instanceof Error)) return false;
  // By name, not by the missing code alone: undici's MockAgent (`replyWithError`) and test doubles
  // raise simulated network failures the same way, and those must be retried (review, 2026-11-27).
  const causeCode = (cause as { code?: unknown }).code;
  return causeCode === "ERR_INVALID_URL" || (causeCode === undefined && UNDICI_LASTING.has(cause.message));
}

/** The causes undici gives fetch failures that no retry cures (ERR_INVALID_URL aside: a malformed `Location`). */
const UNDICI_LASTING = new Set([
  "unexpected redirect", "redirect count exceeded", "integrity mismatch", "unknown scheme", "bad port",
  "about scheme is not supported", "URL scheme must be a HTTP(S) scheme", "not implemented... yet...",
  "failed to fetch the data URL", "invalid method", "blocked", "only if cached", "local URLs only",
  "proxy authentication required", 'cross origin not allowed for request mode "cors"',
  "NetworkError when attempting to fetch resource.",
]);

/** Deno's words for the same. */
const DENO_LASTING = /^Fetch failed: (?:Encountered redirect while redirect mode is set to 'error'|Maximum number of redirects|Requests to port \d+ are blocked)|^Url scheme '[^']*' not supported/;
