/**
 * `Retry-After` (RFC 9110 §10.2.3) and OpenAI's `retry-after-ms`: pure, strict parsers into whole ms.
 *
 * @module
 */

import { assertNow, parseHttpDate } from './http-date.ts';
import { clampDelay, decimalToWhole, DECIMAL_OR_DIGITS, DIGITS, referenceTime, repeatedField, trimOws } from './header-values.ts';

/** Options for {@link parseRetryAfter}. */
export interface RetryAfterOptions {
  /** The current time, epoch ms. Used for HTTP-dates when `date` is absent or invalid. */
  readonly now: number;
  /**
   * The response's `Date` header. When it is a valid HTTP-date, an HTTP-date `Retry-After` is
   * measured against it instead of `now`, which cancels out any client clock skew.
   */
  readonly date?: string | null | undefined;
  /**
   * Also accept decimal seconds such as `1.5` or `2.0`, which RFC 9110 does not allow but Discord
   * and Shopify send. Exponents, signs and bare dots (`1e3`, `+1`, `.5`, `1.`) stay invalid.
   * @default false
   */
  readonly lenient?: boolean | undefined;
}

/**
 * Parses a `Retry-After` value (RFC 9110 §10.2.3) into a delay in ms.
 *
 * Accepts delay-seconds (`^\d+$`; with `lenient`, also `^\d+\.\d+$`) and HTTP-dates in all three
 * forms. An HTTP-date is measured against the `Date` header when given and valid, else `now`;
 * a date in the past gives 0. Leading and trailing spaces/tabs are ignored.
 * A field sent on several lines arrives joined (`3, 3`): identical members mean their value;
 * differing ones give the longest delay; one malformed member makes the whole value malformed.
 *
 * @returns the delay in whole ms (rounded up), between 0 and {@link MAX_DELAY_MS}; or `undefined`
 *   when the value is absent, empty, negative or not valid (`1e3`, `0x10`, `-1`, `soon`).
 * @throws {RangeError} when `now` is not a finite epoch time.
 * @example
 * ```ts
 * const now = Date.UTC(2025, 0, 15, 12, 0, 0);
 * parseRetryAfter('120', { now }); // 120000
 * parseRetryAfter('2.0', { now }); // undefined (not delay-seconds)
 * parseRetryAfter('2.0', { now, lenient: true }); // 2000
 * parseRetryAfter('Wed, 15 Jan 2025 12:00:30 GMT', {
 *   now: now + 3 * 3_600_000, // our clock is 3 h fast
 *   date: 'Wed, 15 Jan 2025 12:00:00 GMT',
 * }); // 30000
 * ```
 */
export function parseRetryAfter(value: string | null | undefined, options: RetryAfterOptions): number | undefined {
  assertNow(options.now);
  return repeatedField(value, (member) => parseOneRetryAfter(member, options), Math.max);
}

function parseOneRetryAfter(value: string, options: RetryAfterOptions): number | undefined {
  const text = trimOws(value);
  if ((options.lenient === true ? DECIMAL_OR_DIGITS : DIGITS).test(text)) return decimalToWhole(text, 3);
  const reference = referenceTime(options.date, options.now);
  const at = parseHttpDate(text, { now: reference });
  return at === undefined ? undefined : clampDelay(at - reference);
}

/**
 * Parses the non-standard `retry-after-ms` header (sent by OpenAI and Azure OpenAI): a
 * non-negative number of milliseconds, possibly with a fraction (`^\d+(\.\d+)?$`).
 *
 * Repeated (`250, 250`), it reads like `Retry-After`: the longest member, if all are valid.
 *
 * @returns the delay in whole ms (rounded up), at most {@link MAX_DELAY_MS}; or `undefined` when
 *   absent or invalid (`-5`, `1e3`, `abc`, empty).
 * @example
 * ```ts
 * parseRetryAfterMs('250'); // 250
 * parseRetryAfterMs('12.3'); // 13
 * parseRetryAfterMs(null); // undefined
 * ```
 */
export function parseRetryAfterMs(value: string | null | undefined): number | undefined {
  return repeatedField(value, (member) => {
    const text = trimOws(member);
    return DECIMAL_OR_DIGITS.test(text) ? decimalToWhole(text, 0) : undefined;
  }, Math.max);
}

