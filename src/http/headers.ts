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
 */

import { assertNow, parseHttpDate } from './http-date.ts';
import {
  parseSfDictionary,
  parseSfItem,
  parseSfList,
  type SfBareItem,
  type SfItem,
  type SfList,
} from './structured-fields.ts';

export { type HttpDateOptions, parseHttpDate } from './http-date.ts';

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

/**
 * A reset value at or above this many seconds (2024-01-01T00:00:00Z) is read as a Unix epoch time;
 * below it, as a delay in seconds. Applies only to the vendor `X-RateLimit-Reset` family, whose
 * meaning differs between APIs (GitHub and X send epoch seconds; others send a delay). A delay of
 * 1,704,067,200 s would be 54 years, so the two ranges cannot be confused in practice.
 *
 * @example
 * ```ts
 * const now = Date.UTC(2025, 0, 15);
 * const headers = new Headers({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(now / 1000 + 60) });
 * parseRateLimit(headers, { now })?.resetMs; // 60000: read as an epoch time
 * ```
 */
export const EPOCH_SECONDS_THRESHOLD = 1_704_067_200;

/** The part of the fetch `Headers` class these parsers use; any `Headers` object fits. */
export interface HeadersLike {
  /** The field's value, or null when absent (as `Headers.get` does). */
  get(name: string): string | null;
}

// ---------------------------------------------------------------------------------------------
// Retry-After and retry-after-ms

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
  if (typeof value !== 'string') return undefined;
  const text = trimOws(value);
  if (DIGITS.test(text)) return decimalToWhole(text, 3);
  if (options.lenient === true && DECIMAL.test(text)) return decimalToWhole(text, 3);
  const reference = referenceTime(options.date, options.now);
  const at = parseHttpDate(text, { now: reference });
  return at === undefined ? undefined : clampDelay(at - reference);
}

/**
 * Parses the non-standard `retry-after-ms` header (sent by OpenAI and Azure OpenAI): a
 * non-negative number of milliseconds, possibly with a fraction (`^\d+(\.\d+)?$`).
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
  if (typeof value !== 'string') return undefined;
  const text = trimOws(value);
  return DECIMAL_OR_DIGITS.test(text) ? decimalToWhole(text, 0) : undefined;
}

// ---------------------------------------------------------------------------------------------
// RateLimit fields

/** Which header family a {@link RateLimitInfo} was read from. */
export type RateLimitSource = 'ietf' | 'ietf-draft07' | 'ratelimit-legacy' | 'x-ratelimit';

/** The current quota state the server reported, normalised across header families. */
export interface RateLimitInfo {
  /** The quota of the reported policy (draft-10 `q`, draft-07 `limit`, `*-Limit`), when sent. */
  readonly limit?: number;
  /** Quota units left (requests, unless `quotaUnit` says otherwise). */
  readonly remaining: number;
  /** Delay from the response until more quota is available, in whole ms (≥ 0), when sent. */
  readonly resetMs?: number;
  /** The policy's time window in ms (draft-10 `w`, or a draft-07 `;w=` policy), when sent. */
  readonly windowMs?: number;
  /** The draft-10 policy name, e.g. `"default"`. */
  readonly policy?: string;
  /** The draft-10 quota unit (`qu`) when the policy states one, e.g. `"content-bytes"`. */
  readonly quotaUnit?: string;
  /** The header family the values came from. */
  readonly source: RateLimitSource;
}

/** Options for {@link parseRateLimit}. */
export interface RateLimitOptions {
  /** The current time, epoch ms; used for epoch resets when the `Date` header is absent or invalid. */
  readonly now: number;
}

/**
 * Reads the server's rate-limit state from response headers.
 *
 * Header families are tried in this order; the first that yields a valid remaining count wins,
 * and a malformed field counts as absent (the draft says it MUST be ignored):
 * 1. `RateLimit` as an IETF draft-10 List (`"default";r=50;t=30`), joined by policy name with
 *    `RateLimit-Policy` (`"default";q=100;w=60`) for `limit`, `windowMs` and `quotaUnit`.
 *    When several service limits are listed, the most restrictive one is reported: the smallest
 *    `r`; on a tie the longest `t`, and a known `t` beats a missing one.
 *    Items whose name is not a String, or with a missing/invalid `r`, `t` or `pk`, are skipped.
 * 2. `RateLimit` as a draft-07 Dictionary (`limit=100, remaining=50, reset=5`); `limit` and
 *    `reset` are required by that draft. `windowMs` comes from a `RateLimit-Policy: 100;w=60`
 *    entry whose quota equals `limit`.
 * 3. `RateLimit-Remaining` / `-Limit` / `-Reset` (drafts ≤ 06): Integers, `Reset` in delay seconds.
 * 4. `X-RateLimit-*`, then `X-Rate-Limit-*` (X/Twitter): `-Remaining` and `-Limit` are whole
 *    numbers; the reset is `-Reset-After` (Discord, delay seconds, decimals allowed) when valid,
 *    else `-Reset`, read as epoch seconds at or above {@link EPOCH_SECONDS_THRESHOLD} and as delay
 *    seconds below it (decimals allowed: Discord sends `1470173023.123`).
 *
 * Epoch resets are measured against the response's `Date` header when valid, else `now`.
 * Responses served from a cache (`Age` > 0) return `undefined`: their counters describe an
 * earlier moment, possibly another client (draft-10 §"Caching"). This applies to every family.
 * A family that sends no remaining count (e.g. draft-07 `limit=10, reset=1`) yields nothing.
 *
 * @returns the normalised state, or `undefined` when no family gives a valid remaining count.
 * @throws {RangeError} when `now` is not a finite epoch time.
 * @example
 * ```ts
 * const headers = new Headers({
 *   RateLimit: '"default";r=0;t=30',
 *   'RateLimit-Policy': '"default";q=100;w=60',
 * });
 * parseRateLimit(headers, { now: Date.UTC(2025, 0, 15) });
 * // { limit: 100, remaining: 0, resetMs: 30000, windowMs: 60000, policy: 'default', source: 'ietf' }
 * ```
 */
export function parseRateLimit(headers: HeadersLike, options: RateLimitOptions): RateLimitInfo | undefined {
  assertNow(options.now);
  if (isFromCache(headers)) return undefined;
  return (
    fromIetfDraft10(headers) ??
    fromIetfDraft07(headers) ??
    fromLegacyRateLimit(headers) ??
    fromVendor(headers, referenceTime(headers.get('date'), options.now))
  );
}

interface ServiceLimit {
  readonly policy: string;
  readonly remaining: number;
  readonly resetMs: number | undefined;
  readonly partitionKey: Uint8Array | undefined;
}

function fromIetfDraft10(headers: HeadersLike): RateLimitInfo | undefined {
  const raw = headers.get('ratelimit');
  const list = raw === null ? undefined : parseSfList(raw);
  if (list === undefined) return undefined;
  let chosen: ServiceLimit | undefined;
  for (const member of list) {
    if (member.kind !== 'item' || member.value.type !== 'string') continue;
    const remaining = nonNegativeInteger(member.params.get('r'));
    const t = member.params.get('t');
    const resetSeconds = nonNegativeInteger(t);
    const partitionKey = byteSequence(member.params.get('pk'));
    if (remaining === undefined || (t !== undefined && resetSeconds === undefined)) continue;
    if (partitionKey === null) continue;
    const limit: ServiceLimit = {
      policy: member.value.value,
      remaining,
      resetMs: resetSeconds === undefined ? undefined : clampDelay(resetSeconds * 1000),
      partitionKey,
    };
    if (chosen === undefined || isMoreRestrictive(limit, chosen)) chosen = limit;
  }
  if (chosen === undefined) return undefined;
  const policy = findPolicy(headers, chosen);
  return {
    ...(policy?.quota !== undefined && { limit: policy.quota }),
    remaining: chosen.remaining,
    ...(chosen.resetMs !== undefined && { resetMs: chosen.resetMs }),
    ...(policy?.windowMs !== undefined && { windowMs: policy.windowMs }),
    policy: chosen.policy,
    ...(policy?.quotaUnit !== undefined && { quotaUnit: policy.quotaUnit }),
    source: 'ietf',
  };
}

/** Smaller remaining wins; on a tie the longer reset, where an unknown reset counts as shortest. */
function isMoreRestrictive(a: ServiceLimit, b: ServiceLimit): boolean {
  if (a.remaining !== b.remaining) return a.remaining < b.remaining;
  return (a.resetMs ?? -1) > (b.resetMs ?? -1);
}

interface QuotaPolicy {
  readonly quota: number;
  readonly windowMs: number | undefined;
  readonly quotaUnit: string | undefined;
}

/**
 * The first valid `RateLimit-Policy` item named like the service limit. When both carry a
 * partition key (`pk`), the keys must match too.
 */
function findPolicy(headers: HeadersLike, limit: ServiceLimit): QuotaPolicy | undefined {
  const raw = headers.get('ratelimit-policy');
  const list = raw === null ? undefined : parseSfList(raw);
  if (list === undefined) return undefined;
  for (const member of list) {
    if (member.kind !== 'item' || member.value.type !== 'string' || member.value.value !== limit.policy) continue;
    const quota = nonNegativeInteger(member.params.get('q'));
    const qu = member.params.get('qu');
    const w = member.params.get('w');
    const windowSeconds = nonNegativeInteger(w);
    const partitionKey = byteSequence(member.params.get('pk'));
    // Draft-10: q is required; qu must be a String; w a positive Integer; pk a Byte Sequence.
    if (quota === undefined || partitionKey === null) continue;
    if (qu !== undefined && qu.type !== 'string') continue;
    if (w !== undefined && (windowSeconds === undefined || windowSeconds === 0)) continue;
    const bothKeyed = partitionKey !== undefined && limit.partitionKey !== undefined;
    if (bothKeyed && !sameBytes(partitionKey, limit.partitionKey)) continue;
    return {
      quota,
      windowMs: windowSeconds === undefined ? undefined : clampDelay(windowSeconds * 1000),
      quotaUnit: qu?.value,
    };
  }
  return undefined;
}

function fromIetfDraft07(headers: HeadersLike): RateLimitInfo | undefined {
  const raw = headers.get('ratelimit');
  const dict = raw === null ? undefined : parseSfDictionary(raw);
  if (dict === undefined) return undefined;
  const field = (key: string): number | undefined | null => {
    const member = dict.get(key);
    if (member === undefined) return undefined;
    // Parameters on these members "MUST be ignored"; only the bare item matters.
    return member.kind === 'item' ? (nonNegativeInteger(member.value) ?? null) : null;
  };
  const limit = field('limit');
  const remaining = field('remaining');
  const reset = field('reset');
  // null = present but malformed, which makes the whole field malformed.
  if (limit === null || remaining === null || reset === null) return undefined;
  if (limit === undefined || reset === undefined || remaining === undefined) return undefined;
  const windowMs = windowForQuota(limit, integerPolicies(headers.get('ratelimit-policy')));
  return {
    limit,
    remaining,
    resetMs: clampDelay(reset * 1000),
    ...(windowMs !== undefined && { windowMs }),
    source: 'ietf-draft07',
  };
}

function fromLegacyRateLimit(headers: HeadersLike): RateLimitInfo | undefined {
  const remaining = integerItem(headers.get('ratelimit-remaining'));
  if (remaining === undefined) return undefined;
  // Drafts ≤ 03 listed policies after the limit (`RateLimit-Limit: 10, 10;w=1`); later ones sent one Item.
  const limitRaw = headers.get('ratelimit-limit');
  const limitList = limitRaw === null ? undefined : parseSfList(limitRaw);
  const first = limitList?.[0];
  const limit = first?.kind === 'item' ? nonNegativeInteger(first.value) : undefined;
  const resetSeconds = integerItem(headers.get('ratelimit-reset'));
  const policies = [...(limitList?.slice(1) ?? []), ...integerPolicies(headers.get('ratelimit-policy'))];
  const windowMs = limit === undefined ? undefined : windowForQuota(limit, policies);
  return {
    ...(limit !== undefined && { limit }),
    remaining,
    ...(resetSeconds !== undefined && { resetMs: clampDelay(resetSeconds * 1000) }),
    ...(windowMs !== undefined && { windowMs }),
    source: 'ratelimit-legacy',
  };
}

/** Draft ≤ 07 quota policies: Integer Items with a `w` (window seconds) parameter. */
function integerPolicies(raw: string | null): SfItem[] {
  const list = raw === null ? undefined : parseSfList(raw);
  return (list ?? []).filter((m): m is SfItem => m.kind === 'item' && m.value.type === 'integer');
}

/** The window of the one policy whose quota equals `quota`; none if absent or ambiguous. */
function windowForQuota(quota: number, policies: SfList): number | undefined {
  let found: number | undefined;
  for (const policy of policies) {
    if (policy.kind !== 'item' || nonNegativeInteger(policy.value) !== quota) continue;
    const w = nonNegativeInteger(policy.params.get('w'));
    // Draft-07 forbids two policies with the same quota, so a duplicate makes both unusable.
    if (found !== undefined || w === undefined || w === 0) return undefined;
    found = clampDelay(w * 1000);
  }
  return found;
}

const VENDOR_PREFIXES = ['x-ratelimit-', 'x-rate-limit-'] as const;

function fromVendor(headers: HeadersLike, reference: number): RateLimitInfo | undefined {
  for (const prefix of VENDOR_PREFIXES) {
    const remaining = wholeNumber(headers.get(`${prefix}remaining`));
    if (remaining === undefined) continue;
    const limit = wholeNumber(headers.get(`${prefix}limit`));
    const resetMs = vendorReset(headers, prefix, reference);
    return {
      ...(limit !== undefined && { limit }),
      remaining,
      ...(resetMs !== undefined && { resetMs }),
      source: 'x-ratelimit',
    };
  }
  return undefined;
}

function vendorReset(headers: HeadersLike, prefix: string, reference: number): number | undefined {
  const after = trimOws(headers.get(`${prefix}reset-after`) ?? '');
  if (DECIMAL_OR_DIGITS.test(after)) return decimalToWhole(after, 3);
  const reset = trimOws(headers.get(`${prefix}reset`) ?? '');
  if (!DECIMAL_OR_DIGITS.test(reset)) return undefined;
  const ms = decimalToWhole(reset, 3);
  if (ms < EPOCH_SECONDS_THRESHOLD * 1000) return ms;
  // An epoch already clamped to the maximum is "absurdly far": keep it at the maximum delay.
  return ms === MAX_DELAY_MS ? MAX_DELAY_MS : clampDelay(ms - reference);
}

// ---------------------------------------------------------------------------------------------
// serverDelay

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

// ---------------------------------------------------------------------------------------------
// Shared helpers

const DIGITS = /^\d+$/;
const DECIMAL = /^\d+\.\d+$/;
const DECIMAL_OR_DIGITS = /^\d+(?:\.\d+)?$/;

/** Strips the optional whitespace (SP, HTAB) around a field value; a loop, since `/[ \t]+$/` is quadratic. */
function trimOws(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && isOws(value.charCodeAt(start))) start++;
  while (end > start && isOws(value.charCodeAt(end - 1))) end--;
  return value.slice(start, end);
}

function isOws(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

function clampDelay(ms: number): number {
  return ms <= 0 ? 0 : Math.min(ms, MAX_DELAY_MS);
}

/**
 * `text` (matching `^\d+(\.\d+)?$`) times 10^shift, rounded up to a whole number and clamped to
 * MAX_DELAY_MS. Works on the digits, so `64.57` with shift 3 is exactly 64570.
 */
function decimalToWhole(text: string, shift: number): number {
  const dot = text.indexOf('.');
  const whole = dot === -1 ? text : text.slice(0, dot);
  const fraction = dot === -1 ? '' : text.slice(dot + 1);
  const scaled = whole + fraction.slice(0, shift).padEnd(shift, '0');
  const roundUp = /[1-9]/.test(fraction.slice(shift)) ? 1 : 0;
  // Number() is exact up to 2^53; anything above (even Infinity) is clamped anyway.
  return Math.min(Number(scaled) + roundUp, MAX_DELAY_MS);
}

/** A `^\d+$` count such as `X-RateLimit-Remaining`, clamped to MAX_SAFE_INTEGER. */
function wholeNumber(value: string | null): number | undefined {
  if (value === null) return undefined;
  const text = trimOws(value);
  return DIGITS.test(text) ? decimalToWhole(text, 0) : undefined;
}

function nonNegativeInteger(item: SfBareItem | undefined): number | undefined {
  return item?.type === 'integer' && item.value >= 0 ? item.value : undefined;
}

/** The bytes of a `pk` parameter: `undefined` when absent, `null` when present but not a Byte Sequence. */
function byteSequence(item: SfBareItem | undefined): Uint8Array | undefined | null {
  if (item === undefined) return undefined;
  return item.type === 'byte-sequence' ? item.value : null;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** A non-negative Integer Item field (parameters ignored), e.g. `RateLimit-Remaining: 5`. */
function integerItem(raw: string | null): number | undefined {
  const item = raw === null ? undefined : parseSfItem(raw);
  return nonNegativeInteger(item?.value);
}

/** The instant absolute times are measured from: the `Date` header when valid, else `now`. */
function referenceTime(date: string | null | undefined, now: number): number {
  return parseHttpDate(date, { now }) ?? now;
}

/**
 * True when `Age` says the response came from a cache. Per RFC 9111 §5.1 a list keeps its first
 * member, and an invalid value is ignored (treated as not cached).
 */
function isFromCache(headers: HeadersLike): boolean {
  const raw = headers.get('age');
  if (raw === null) return false;
  const comma = raw.indexOf(',');
  const first = trimOws(comma === -1 ? raw : raw.slice(0, comma));
  return DIGITS.test(first) && /[1-9]/.test(first);
}
