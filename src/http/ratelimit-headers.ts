/**
 * The RateLimit fields (IETF draft-10, draft-07, the older `RateLimit-Limit/-Remaining/-Reset`)
 * and the vendor `X-RateLimit-*` family, normalised into one {@link RateLimitInfo}.
 *
 * @module
 */

import { assertNow } from './http-date.ts';
import {
  byteSequence,
  clampDelay,
  DECIMAL_OR_DIGITS,
  decimalToWhole,
  type HeadersLike,
  integerItem,
  isFromCache,
  MAX_DELAY_MS,
  nonNegativeInteger,
  referenceTime,
  repeatedField,
  sameBytes,
  trimOws,
  wholeNumber,
} from './header-values.ts';
import {
  parseSfDictionary,
  parseSfList,
  type SfItem,
  type SfList,
} from './structured-fields.ts';

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
 * A `-Remaining`, `-Limit` or `-Reset` field of families 3 and 4 sent on several lines (joined
 * `0, 0`) means its value when the lines agree; when they differ, the most cautious member counts
 * (the smallest remaining or limit, the longest reset), and one malformed member makes it malformed.
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

/** A quota policy the server states: `limit` units per `windowMs`. */
export interface StatedPolicy {
  readonly limit: number;
  readonly windowMs: number;
  /** The draft-10 quota unit (`qu`), when stated. */
  readonly quotaUnit?: string;
}

/**
 * The most restrictive request quota of a `RateLimit-Policy` field (draft-10 `"name";q=…;w=…`, or a
 * draft-07 `10;w=1` item): the fewest requests per ms among the policies that state a quota and a
 * window and count requests (no `qu`, or `qu="requests"`: a quota of bytes is another measure). What a server states even without a `RateLimit` field (whose absence
 * {@link parseRateLimit} needs to read a remaining quota); undefined when none is usable.
 *
 * @example
 * ```ts
 * parseRateLimitPolicy(new Headers({ "RateLimit-Policy": '"burst";q=100;w=60, "day";q=1000;w=86400' }));
 * // { limit: 1000, windowMs: 86400000 }
 * ```
 */
export function parseRateLimitPolicy(headers: HeadersLike): StatedPolicy | undefined {
  if (isFromCache(headers)) return undefined;
  let best: StatedPolicy | undefined;
  for (const member of parseSfList(headers.get('ratelimit-policy')) ?? []) {
    if (member.kind !== 'item') continue;
    const named = member.value.type === 'string';
    const quota = named ? nonNegativeInteger(member.params.get('q')) : nonNegativeInteger(member.value);
    const windowSeconds = nonNegativeInteger(member.params.get('w'));
    const qu = member.params.get('qu');
    if (quota === undefined || quota === 0 || windowSeconds === undefined || windowSeconds === 0) continue;
    if (qu !== undefined && (qu.type !== 'string' || qu.value !== 'requests')) continue;
    const windowMs = secondsToMs(windowSeconds)!;
    if (best !== undefined && quota / windowMs >= best.limit / best.windowMs) continue;
    best = qu === undefined ? { limit: quota, windowMs } : { limit: quota, windowMs, quotaUnit: qu.value };
  }
  return best;
}

interface ServiceLimit {
  readonly policy: string;
  readonly remaining: number;
  readonly resetMs: number | undefined;
  readonly partitionKey: Uint8Array | undefined;
}

function fromIetfDraft10(headers: HeadersLike): RateLimitInfo | undefined {
  const list = parseSfList(headers.get('ratelimit'));
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
      resetMs: secondsToMs(resetSeconds),
      partitionKey,
    };
    if (chosen === undefined || isMoreRestrictive(limit, chosen)) chosen = limit;
  }
  if (chosen === undefined) return undefined;
  const policy = findPolicy(headers, chosen);
  return info('ietf', chosen.remaining, policy?.quota, chosen.resetMs, policy?.windowMs, chosen.policy, policy?.quotaUnit);
}

/** The info with only the fields that are known (no `undefined` values), in one key order. */
function info(
  source: RateLimitSource,
  remaining: number,
  limit: number | undefined,
  resetMs: number | undefined,
  windowMs?: number,
  policy?: string,
  quotaUnit?: string,
): RateLimitInfo {
  const out: Record<string, unknown> = { limit, remaining, resetMs, windowMs, policy, quotaUnit, source };
  for (const key in out) if (out[key] === undefined) delete out[key];
  return out as unknown as RateLimitInfo;
}

/** Whole seconds as ms, clamped; `undefined` stays `undefined`. */
function secondsToMs(seconds: number | undefined): number | undefined {
  return seconds === undefined ? undefined : clampDelay(seconds * 1000);
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
  const list = parseSfList(headers.get('ratelimit-policy'));
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
      windowMs: secondsToMs(windowSeconds),
      quotaUnit: qu?.value,
    };
  }
  return undefined;
}

function fromIetfDraft07(headers: HeadersLike): RateLimitInfo | undefined {
  const dict = parseSfDictionary(headers.get('ratelimit'));
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
  return info('ietf-draft07', remaining, limit, secondsToMs(reset), windowMs);
}

function fromLegacyRateLimit(headers: HeadersLike): RateLimitInfo | undefined {
  const remaining = repeatedField(headers.get('ratelimit-remaining'), integerItem, Math.min);
  if (remaining === undefined) return undefined;
  // Drafts ≤ 03 listed policies after the limit (`RateLimit-Limit: 10, 10;w=1`); later ones sent one Item.
  const limitList = parseSfList(headers.get('ratelimit-limit'));
  const first = limitList?.[0];
  const limit = first?.kind === 'item' ? nonNegativeInteger(first.value) : undefined;
  const resetSeconds = repeatedField(headers.get('ratelimit-reset'), integerItem, Math.max);
  const policies = [...(limitList?.slice(1) ?? []), ...integerPolicies(headers.get('ratelimit-policy'))];
  const windowMs = limit === undefined ? undefined : windowForQuota(limit, policies);
  return info('ratelimit-legacy', remaining, limit, secondsToMs(resetSeconds), windowMs);
}

/** Draft ≤ 07 quota policies: Integer Items with a `w` (window seconds) parameter. */
function integerPolicies(raw: string | null): SfItem[] {
  return (parseSfList(raw) ?? []).filter((m): m is SfItem => m.kind === 'item' && m.value.type === 'integer');
}

/** The window of the one policy whose quota equals `quota`; none if absent or ambiguous. */
function windowForQuota(quota: number, policies: SfList): number | undefined {
  let found: number | undefined;
  for (const policy of policies) {
    if (policy.kind !== 'item' || nonNegativeInteger(policy.value) !== quota) continue;
    const w = nonNegativeInteger(policy.params.get('w'));
    // Draft-07 forbids two policies with the same quota, so a duplicate makes both unusable.
    if (found !== undefined || w === undefined || w === 0) return undefined;
    found = secondsToMs(w);
  }
  return found;
}

const VENDOR_PREFIXES = ['x-ratelimit-', 'x-rate-limit-'] as const;

function fromVendor(headers: HeadersLike, reference: number): RateLimitInfo | undefined {
  for (const prefix of VENDOR_PREFIXES) {
    const remaining = repeatedField(headers.get(`${prefix}remaining`), wholeNumber, Math.min);
    if (remaining === undefined) continue;
    const limit = repeatedField(headers.get(`${prefix}limit`), wholeNumber, Math.min);
    return info('x-ratelimit', remaining, limit, vendorReset(headers, prefix, reference));
  }
  return undefined;
}

function vendorReset(headers: HeadersLike, prefix: string, reference: number): number | undefined {
  const after = repeatedField(headers.get(`${prefix}reset-after`), delaySeconds, Math.max);
  if (after !== undefined) return after;
  return repeatedField(headers.get(`${prefix}reset`), (member) => {
    const ms = delaySeconds(member);
    if (ms === undefined || ms < EPOCH_SECONDS_THRESHOLD * 1000) return ms;
    // An epoch already clamped to the maximum is "absurdly far": keep it at the maximum delay.
    return ms === MAX_DELAY_MS ? MAX_DELAY_MS : clampDelay(ms - reference);
  }, Math.max);
}

/** Seconds, decimals allowed (`1.5`), as whole ms rounded up. */
function delaySeconds(value: string): number | undefined {
  const text = trimOws(value);
  return DECIMAL_OR_DIGITS.test(text) ? decimalToWhole(text, 3) : undefined;
}
