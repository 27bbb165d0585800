/**
 * Pure parsers for the response headers that tell a client how long to wait.
 *
 * What: `parseRetryAfter`, `parseRetryAfterMs`, `parseRateLimit` and `serverDelay` read
 * `Retry-After`, OpenAI's `retry-after-ms`, the IETF RateLimit fields (draft-10, draft-07 and the
 * older `RateLimit-Limit/-Remaining/-Reset`) and the vendor `X-RateLimit-*` family.
 *
 * Why this shape:
 * - Strict and pure. Time comes in as `now` (epoch ms); nothing here reads a clock. A value that
 *   does not match its grammar is ignored (`undefined`), never guessed from: a misread header
 *   means waiting hours for nothing, or hammering a server that asked us to stop.
 * - Skew-free. Absolute times (HTTP-dates, epoch resets) are measured against the response's own
 *   `Date` header when it is valid, so a client clock that is hours off does not matter.
 * - Bounded. Every delay is a finite, whole, non-negative number of ms, at most
 *   {@link MAX_DELAY_MS}; deciding what is too long to wait is the caller's job.
 * - Exact. Decimal seconds are converted with string arithmetic and rounded *up* to a whole ms,
 *   so `64.57` s is 64570 ms (not 64570.00000000001) and we never come back early.
 *
 * The parsers live in `retry-after.ts`, `ratelimit-headers.ts` and `header-values.ts`; this module
 * is their public face and combines them in {@link serverDelay}.
 */

import { assertNow } from './http-date.ts';
import { type HeadersLike } from './header-values.ts';
import { parseRateLimit, type RateLimitSource } from './ratelimit-headers.ts';
import { parseRetryAfter, parseRetryAfterMs, type RetryAfterOptions } from './retry-after.ts';

export { type HttpDateOptions, parseHttpDate } from './http-date.ts';
export { type HeadersLike, MAX_DELAY_MS } from './header-values.ts';
export { parseRetryAfter, parseRetryAfterMs, type RetryAfterOptions } from './retry-after.ts';
export {
  EPOCH_SECONDS_THRESHOLD,
  parseRateLimit,
  type RateLimitInfo,
  type RateLimitOptions,
  type RateLimitSource,
} from './ratelimit-headers.ts';

/** Where a {@link ServerDelay} came from: a retry header, or a RateLimit family. */
export type ServerDelaySource = 'retry-after-ms' | 'retry-after' | RateLimitSource;

/** The delay a server asked for, and which header said so. */
export interface ServerDelay {
  /** Whole ms to wait, between 0 and {@link MAX_DELAY_MS}. */
  readonly delayMs: number;
  /** The header (family) the delay was read from. */
  readonly source: ServerDelaySource;
}

/** Options for {@link serverDelay}. */
export interface ServerDelayOptions {
  /** The current time, epoch ms. */
  readonly now: number;
  /** Accept decimal `Retry-After` seconds (see {@link RetryAfterOptions.lenient}). @default false */
  readonly lenient?: boolean | undefined;
}

/**
 * The delay the server asked for before the next request, from the first of:
 * 1. `retry-after-ms`, when valid;
 * 2. `Retry-After`, when valid (HTTP-dates measured against the response's `Date` header), which
 *    the RateLimit draft says MUST take precedence over the RateLimit reset;
 * 3. only for 429 and 503 responses: the RateLimit reset (see {@link parseRateLimit}) when the
 *    reported remaining quota is 0. On other statuses a zero quota is a hint for the limiter,
 *    not a request to wait, so it is left to the caller (GitHub's 403 is one such case).
 *
 * The retry headers are read for any status; whether to retry at all is the caller's decision,
 * as is capping a long delay.
 *
 * @returns the delay and its source, or `undefined` when the server did not ask for one.
 * @throws {RangeError} when `now` is not a finite epoch time.
 * @example
 * ```ts
 * const response = new Response(null, { status: 429, headers: { 'Retry-After': '65' } });
 * serverDelay(response, { now: Date.UTC(2025, 0, 15) }); // { delayMs: 65000, source: 'retry-after' }
 * ```
 */
export function serverDelay(
  response: { readonly status: number; readonly headers: HeadersLike },
  options: ServerDelayOptions,
): ServerDelay | undefined {
  const { headers } = response;
  const { now, lenient } = options;
  assertNow(now);
  const ms = parseRetryAfterMs(headers.get('retry-after-ms'));
  if (ms !== undefined) return { delayMs: ms, source: 'retry-after-ms' };
  const retryAfter = parseRetryAfter(headers.get('retry-after'), { now, date: headers.get('date'), lenient });
  if (retryAfter !== undefined) return { delayMs: retryAfter, source: 'retry-after' };
  if (response.status !== 429 && response.status !== 503) return undefined;
  const info = parseRateLimit(headers, { now });
  if (info?.remaining !== 0 || info.resetMs === undefined) return undefined;
  return { delayMs: info.resetMs, source: info.source };
}
