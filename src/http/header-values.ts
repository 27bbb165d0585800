/**
 * Shared pieces of the header parsers: the bounds (`MAX_DELAY_MS`), the `HeadersLike` view, and
 * the small exact conversions (whitespace trimming, decimal seconds to whole ms, counts,
 * Structured-Field integers, the `Date`/`Age` reference) that Retry-After and RateLimit parsing share.
 *
 * @module
 */

import { parseHttpDate } from './http-date.ts';
import { parseSfItem, type SfBareItem } from './structured-fields.ts';

/**
 * The largest delay, in ms, any parser here returns: `Number.MAX_SAFE_INTEGER` (about 285,000
 * years). Larger values, such as `Retry-After: 99999999999999999999`, are clamped to it, so
 * results are always finite safe integers. Counts (`limit`, `remaining`) are clamped the same way.
 *
 * @example
 * ```ts
 * parseRetryAfter('99999999999999999999', { now: 0 }) === MAX_DELAY_MS; // true
 * ```
 */
export const MAX_DELAY_MS: number = Number.MAX_SAFE_INTEGER;

/** The part of the fetch `Headers` class these parsers use; any `Headers` object fits. */
export interface HeadersLike {
  /** The field's value, or null when absent (as `Headers.get` does). */
  get(name: string): string | null;
}

export const DIGITS = /^\d+$/;
export const DECIMAL_OR_DIGITS = /^\d+(?:\.\d+)?$/;

/** Strips the optional whitespace (SP, HTAB) around a field value; a loop, since `/[ \t]+$/` is quadratic. */
export function trimOws(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && isOws(value.charCodeAt(start))) start++;
  while (end > start && isOws(value.charCodeAt(end - 1))) end--;
  return value.slice(start, end);
}

export function isOws(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

export function clampDelay(ms: number): number {
  return ms <= 0 ? 0 : Math.min(ms, MAX_DELAY_MS);
}

/**
 * `text` (matching `^\d+(\.\d+)?$`) times 10^shift, rounded up to a whole number and clamped to
 * MAX_DELAY_MS. Works on the digits, so `64.57` with shift 3 is exactly 64570.
 */
export function decimalToWhole(text: string, shift: number): number {
  const dot = text.indexOf('.');
  const whole = dot === -1 ? text : text.slice(0, dot);
  const fraction = dot === -1 ? '' : text.slice(dot + 1);
  const scaled = whole + fraction.slice(0, shift).padEnd(shift, '0');
  const roundUp = /[1-9]/.test(fraction.slice(shift)) ? 1 : 0;
  // Number() is exact up to 2^53; anything above (even Infinity) is clamped anyway.
  return Math.min(Number(scaled) + roundUp, MAX_DELAY_MS);
}

/** A `^\d+$` count such as `X-RateLimit-Remaining`, clamped to MAX_SAFE_INTEGER. */
export function wholeNumber(value: string | null): number | undefined {
  if (value === null) return undefined;
  const text = trimOws(value);
  return DIGITS.test(text) ? decimalToWhole(text, 0) : undefined;
}

export function nonNegativeInteger(item: SfBareItem | undefined): number | undefined {
  return item?.type === 'integer' && item.value >= 0 ? item.value : undefined;
}

/** The bytes of a `pk` parameter: `undefined` when absent, `null` when present but not a Byte Sequence. */
export function byteSequence(item: SfBareItem | undefined): Uint8Array | undefined | null {
  if (item === undefined) return undefined;
  return item.type === 'byte-sequence' ? item.value : null;
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** A non-negative Integer Item field (parameters ignored), e.g. `RateLimit-Remaining: 5`. */
export function integerItem(raw: string | null): number | undefined {
  return nonNegativeInteger(parseSfItem(raw)?.value);
}

/** The instant absolute times are measured from: the `Date` header when valid, else `now`. */
export function referenceTime(date: string | null | undefined, now: number): number {
  return parseHttpDate(date, { now }) ?? now;
}

/**
 * True when `Age` says the response came from a cache. Per RFC 9111 §5.1 a list keeps its first
 * member, and an invalid value is ignored (treated as not cached).
 */
export function isFromCache(headers: HeadersLike): boolean {
  const raw = headers.get('age');
  if (raw === null) return false;
  const comma = raw.indexOf(',');
  const first = trimOws(comma === -1 ? raw : raw.slice(0, comma));
  return DIGITS.test(first) && /[1-9]/.test(first);
}

/** Day names that open an IMF-fixdate (`Wed, …`) or an RFC 850 date (`Wednesday, …`): their comma is not a list separator. */
const DAY_NAME = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)$/;

/**
 * The members of a field value a proxy or server may have sent on several lines, which reach us
 * joined by `", "` (RFC 9110 §5.3): `"3, 3"` → `["3", "3"]`. A day name's comma belongs to its
 * HTTP-date, so `"Wed, 15 Jan 2025 12:00:30 GMT, 5"` → `["Wed, 15 Jan 2025 12:00:30 GMT", "5"]`.
 * Members are trimmed; an empty member stays (and is malformed to every parser). A comma not
 * followed by a space or tab is no join (Headers joins with `", "`): `"1,5"` may be a decimal comma,
 * so it stays one (malformed) member rather than being read as 1 and 5.
 */
export function fieldMembers(value: string): string[] {
  if (/,(?![ \t])/.test(value)) return [value];
  const pieces = value.split(',');
  const members: string[] = [];
  for (let i = 0; i < pieces.length; i++) {
    const piece = trimOws(pieces[i]!);
    if (DAY_NAME.test(piece) && i + 1 < pieces.length) members.push(`${piece}, ${trimOws(pieces[++i]!)}`);
    else members.push(piece);
  }
  return members;
}

/**
 * Reads a field that may have been repeated: each member with `parse`, then the most cautious of
 * them by `pick` (`Math.max` for delays, `Math.min` for remaining counts). Identical repeats thus
 * mean their value; one malformed member makes the whole field malformed (`undefined`), as a
 * guess from a half-understood field could hammer the server.
 */
export function repeatedField(
  value: string | null | undefined,
  parse: (member: string) => number | undefined,
  pick: (a: number, b: number) => number,
): number | undefined {
  if (typeof value !== 'string') return undefined;
  const single = parse(value);
  if (single !== undefined || !value.includes(',')) return single;
  let result: number | undefined;
  for (const member of fieldMembers(value)) {
    const parsed = parse(member);
    if (parsed === undefined) return undefined;
    result = result === undefined ? parsed : pick(result, parsed);
  }
  return result;
}
