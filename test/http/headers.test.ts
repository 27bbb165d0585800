import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  EPOCH_SECONDS_THRESHOLD,
  MAX_DELAY_MS,
  parseRateLimit,
  parseRetryAfter,
  parseRetryAfterMs,
  serverDelay,
  type HeadersLike,
  type RateLimitInfo,
  type ServerDelay,
} from '../../src/http/headers.ts';
import { Reach } from '../reach.ts';


/** Wed, 15 Jan 2025 12:00:00 GMT: the client's clock in every test. */
const NOW = Date.UTC(2025, 0, 15, 12, 0, 0);
const NOW_S = NOW / 1000;
const HTTP_NOW = 'Wed, 15 Jan 2025 12:00:00 GMT';
const HOUR = 3_600_000;

describe('parseRetryAfter()', () => {
  test.each<[string, string | null | undefined, number | undefined]>([
    ['delay-seconds', '120', 120_000],
    ['zero', '0', 0],
    ['leading zeros', '007', 7000],
    ['surrounding spaces and tabs', ' \t65\t ', 65_000],
    ['an IMF-fixdate 30 s ahead', 'Wed, 15 Jan 2025 12:00:30 GMT', 30_000],
    ['an RFC 850 date 30 s ahead', 'Wednesday, 15-Jan-25 12:00:30 GMT', 30_000],
    ['an asctime date 30 s ahead', 'Wed Jan 15 12:00:30 2025', 30_000],
    ['a date in the past (0: go now)', 'Sun, 06 Nov 1994 08:49:37 GMT', 0],
    ['the current instant', HTTP_NOW, 0],
    ['a decimal (Shopify "2.0")', '2.0', undefined],
    ['a negative number', '-1', undefined],
    ['an exponent', '1e3', undefined],
    ['hexadecimal', '0x10', undefined],
    ['a plus sign', '+5', undefined],
    ['an empty value', '', undefined],
    ['only spaces', '   ', undefined],
    ['a word', 'soon', undefined],
    ['an absent header (null)', null, undefined],
    ['an absent header (undefined)', undefined, undefined],
    ['two values joined by a proxy: the longer (see repeated-headers.test.ts)', '120, 30', 120_000],
    ['a parameter-like suffix', '120;q=1', undefined],
    ['a unit suffix', '120s', undefined],
    ['Unicode digits', '١٢٠', undefined],
    ['full-width digits', '１２０', undefined],
    ['a no-break space around the number', '\u00a0120', undefined],
    ['a CR LF tail', '120\r\n', undefined],
    ['an ISO 8601 date', '2025-01-15T12:00:30Z', undefined],
  ])('%s: %j → %j', (_name, value, expected) => {
    expect(parseRetryAfter(value, { now: NOW })).toBe(expected);
  });

  test.each<[string, number | undefined]>([
    ['2.0', 2000],
    ['1.5', 1500],
    ['64.57', 64_570],
    ['0.0001', 1],
    ['3', 3000],
    ['1.', undefined],
    ['.5', undefined],
    ['-1.5', undefined],
    ['1.5e3', undefined],
    ['1,5', undefined],
  ])('lenient mode reads decimal seconds: %j → %j', (value, expected) => {
    expect(parseRetryAfter(value, { now: NOW, lenient: true })).toBe(expected);
  });

  test('measures an HTTP-date against the Date header, so a client clock hours off does not matter', () => {
    const response = { date: HTTP_NOW, retryAt: 'Wed, 15 Jan 2025 12:02:00 GMT' };
    for (const skew of [-5 * HOUR, -HOUR, 0, 3 * HOUR, 26 * HOUR]) {
      expect(parseRetryAfter(response.retryAt, { now: NOW + skew, date: response.date })).toBe(120_000);
    }
  });

  test('without the Date header, a skewed clock skews the delay (the reason to pass it)', () => {
    expect(parseRetryAfter('Wed, 15 Jan 2025 12:02:00 GMT', { now: NOW + HOUR })).toBe(0);
    expect(parseRetryAfter('Wed, 15 Jan 2025 12:02:00 GMT', { now: NOW - HOUR })).toBe(HOUR + 120_000);
  });

  test('falls back to `now` when the Date header is malformed', () => {
    const options = { now: NOW, date: '2025-01-15 11:00:00' };
    expect(parseRetryAfter('Wed, 15 Jan 2025 12:00:10 GMT', options)).toBe(10_000);
  });

  test('ignores the Date header for delay-seconds, which are already relative', () => {
    expect(parseRetryAfter('10', { now: NOW, date: 'Wed, 15 Jan 2025 09:00:00 GMT' })).toBe(10_000);
  });

  test('clamps absurdly large values to MAX_DELAY_MS instead of returning Infinity or losing precision', () => {
    expect(parseRetryAfter('99999999999999999999', { now: NOW })).toBe(MAX_DELAY_MS);
    expect(parseRetryAfter('9'.repeat(400), { now: NOW })).toBe(MAX_DELAY_MS);
    expect(parseRetryAfter('9007199254740.991', { now: NOW, lenient: true })).toBe(MAX_DELAY_MS);
    // Just below the clamp the conversion is still exact.
    expect(parseRetryAfter('9007199254740', { now: NOW })).toBe(9_007_199_254_740_000);
  });

  test('returns a large but finite delay for the furthest HTTP-date', () => {
    expect(parseRetryAfter('Fri, 31 Dec 9999 23:59:59 GMT', { now: NOW })).toBe(Date.UTC(9999, 11, 31, 23, 59, 59) - NOW);
  });

  test('stays fast and correct on hostile input', () => {
    expect(parseRetryAfter('1'.repeat(1_000_000), { now: NOW })).toBe(MAX_DELAY_MS);
    expect(parseRetryAfter(`${' '.repeat(500_000)}x${' '.repeat(500_000)}`, { now: NOW })).toBeUndefined();
    expect(parseRetryAfter('Wed, '.repeat(200_000), { now: NOW })).toBeUndefined();
    expect(parseRetryAfter('🕐120', { now: NOW })).toBeUndefined();
  });

  test('throws a RangeError for a `now` that is not a time value', () => {
    expect(() => parseRetryAfter('1', { now: Number.NaN })).toThrow(RangeError);
  });
});

describe('parseRetryAfterMs()', () => {
  test.each<[string | null | undefined, number | undefined]>([
    ['250', 250],
    ['0', 0],
    ['12.3', 13], // rounded up: never earlier than asked
    ['1500.000', 1500],
    [' 42 ', 42],
    ['-5', undefined],
    ['1e3', undefined],
    ['.5', undefined],
    ['abc', undefined],
    ['', undefined],
    [null, undefined],
    [undefined, undefined],
    ['9'.repeat(30), MAX_DELAY_MS],
  ])('%j → %j', (value, expected) => {
    expect(parseRetryAfterMs(value)).toBe(expected);
  });
});

describe('parseRateLimit()', () => {
  type Row = [name: string, headers: Record<string, string>, expected: RateLimitInfo | undefined];

  describe('real-world headers', () => {
    test.each<Row>([
      [
        'GitHub: primary limit exhausted, reset in epoch seconds',
        {
          Date: HTTP_NOW,
          'x-ratelimit-limit': '5000',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-used': '5000',
          'x-ratelimit-reset': String(NOW_S + 1800),
          'x-ratelimit-resource': 'core',
        },
        { limit: 5000, remaining: 0, resetMs: 1_800_000, source: 'x-ratelimit' },
      ],
      [
        'X (Twitter): x-rate-limit-* with epoch reset',
        { 'x-rate-limit-limit': '900', 'x-rate-limit-remaining': '0', 'x-rate-limit-reset': String(NOW_S + 900) },
        { limit: 900, remaining: 0, resetMs: 900_000, source: 'x-ratelimit' },
      ],
      [
        'Discord: decimal Reset-After wins over the decimal epoch Reset',
        {
          'X-RateLimit-Limit': '5',
          'X-RateLimit-Remaining': '0',
          'X-RateLimit-Reset': '1470173023.123',
          'X-RateLimit-Reset-After': '64.57',
          'X-RateLimit-Bucket': 'abcd1234',
          'X-RateLimit-Scope': 'user',
        },
        { limit: 5, remaining: 0, resetMs: 64_570, source: 'x-ratelimit' },
      ],
      [
        'Discord: decimal epoch Reset alone, rounded up to the next ms',
        { 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': `${NOW_S + 64}.5705` },
        { remaining: 0, resetMs: 64_571, source: 'x-ratelimit' },
      ],
      [
        'a small vendor reset is delay seconds',
        { 'X-RateLimit-Remaining': '3', 'X-RateLimit-Reset': '42' },
        { remaining: 3, resetMs: 42_000, source: 'x-ratelimit' },
      ],
      [
        'an epoch reset in the past is 0',
        { 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(NOW_S - 10) },
        { remaining: 0, resetMs: 0, source: 'x-ratelimit' },
      ],
      [
        'IETF draft-10: the basic example',
        { RateLimit: '"default";r=50;t=30' },
        { remaining: 50, resetMs: 30_000, policy: 'default', source: 'ietf' },
      ],
      [
        'IETF draft-10: joined with RateLimit-Policy by name',
        { RateLimit: '"fixedwindow";r=99;t=50', 'RateLimit-Policy': '"fixedwindow";q=100;w=60' },
        { limit: 100, remaining: 99, resetMs: 50_000, windowMs: 60_000, policy: 'fixedwindow', source: 'ietf' },
      ],
      [
        'IETF draft-10: a quota unit and partition key',
        {
          RateLimit: '"peruser";r=300000000;t=60;pk=:sdfjLJUOUH==:',
          'RateLimit-Policy': '"peruser";q=65535;qu="content-bytes";w=10;pk=:sdfjLJUOUH==:',
        },
        {
          limit: 65_535,
          remaining: 300_000_000,
          resetMs: 60_000,
          windowMs: 10_000,
          policy: 'peruser',
          quotaUnit: 'content-bytes',
          source: 'ietf',
        },
      ],
      [
        'IETF draft-10: no reset parameter',
        { RateLimit: '"default";r=999;pk=:dHJpYWwxMjEzMjM=:' },
        { remaining: 999, policy: 'default', source: 'ietf' },
      ],
      [
        'IETF draft-07: a Dictionary with a matching policy window',
        { RateLimit: 'limit=100, remaining=50, reset=5', 'RateLimit-Policy': '100;w=10' },
        { limit: 100, remaining: 50, resetMs: 5000, windowMs: 10_000, source: 'ietf-draft07' },
      ],
      [
        'IETF draft-07: several policies, one matching the limit',
        { RateLimit: 'limit=5000, remaining=100, reset=36000', 'RateLimit-Policy': '1000;w=3600, 5000;w=86400' },
        { limit: 5000, remaining: 100, resetMs: 36_000_000, windowMs: 86_400_000, source: 'ietf-draft07' },
      ],
      [
        'drafts ≤ 06: RateLimit-Limit/-Remaining/-Reset',
        { 'RateLimit-Limit': '10', 'RateLimit-Remaining': '1', 'RateLimit-Reset': '7' },
        { limit: 10, remaining: 1, resetMs: 7000, source: 'ratelimit-legacy' },
      ],
      [
        'draft-03: policies listed after the limit',
        { 'RateLimit-Limit': '10, 10;w=1, 50;w=60', 'RateLimit-Remaining': '0', 'RateLimit-Reset': '1' },
        { limit: 10, remaining: 0, resetMs: 1000, windowMs: 1000, source: 'ratelimit-legacy' },
      ],
    ])('%s', (_name, headers, expected) => {
      expect(parseRateLimit(new Headers(headers), { now: NOW })).toStrictEqual(expected);
    });
  });

  describe('malformed values are ignored, never guessed from', () => {
    test.each<Row>([
      ['draft-10 without the required r (the draft\'s own "quota;t=1")', { RateLimit: 'quota;t=1' }, undefined],
      ['draft-10 with a token instead of a String name', { RateLimit: 'default;r=5;t=1' }, undefined],
      ['draft-10 with a decimal r', { RateLimit: '"default";r=5.0;t=1' }, undefined],
      ['draft-10 with a negative r', { RateLimit: '"default";r=-1;t=1' }, undefined],
      ['draft-10 with a non-Integer t', { RateLimit: '"default";r=5;t="1"' }, undefined],
      ['draft-10 with a pk that is not a Byte Sequence', { RateLimit: '"default";r=5;pk="abc"' }, undefined],
      ['draft-10 with a trailing comma', { RateLimit: '"default";r=5;t=1,' }, undefined],
      ['draft-10 with non-ASCII', { RateLimit: '"défaut";r=5' }, undefined],
      ['draft-07 missing the required reset', { RateLimit: 'limit=10, remaining=5' }, undefined],
      ['draft-07 without remaining (nothing to report)', { RateLimit: 'limit=10, reset=1' }, undefined],
      ['draft-07 with a String value', { RateLimit: 'limit=10, remaining="5", reset=1' }, undefined],
      ['draft-07 with a negative reset', { RateLimit: 'limit=10, remaining=5, reset=-1' }, undefined],
      ['legacy remaining that is a decimal', { 'RateLimit-Remaining': '1.5', 'RateLimit-Reset': '1' }, undefined],
      ['vendor remaining that is negative', { 'X-RateLimit-Remaining': '-1' }, undefined],
      ['vendor remaining that is a decimal', { 'X-RateLimit-Remaining': '4.0' }, undefined],
      ['vendor remaining repeated by a proxy, one member malformed', { 'X-RateLimit-Remaining': '5, 5x' }, undefined],
      ['vendor remaining with garbage', { 'X-RateLimit-Remaining': '5 requests' }, undefined],
      ['no rate-limit headers at all', { 'Content-Type': 'application/json' }, undefined],
    ])('%s', (_name, headers, expected) => {
      expect(parseRateLimit(new Headers(headers), { now: NOW })).toStrictEqual(expected);
    });

    test('a malformed field does not spoil the valid fields of the same family', () => {
      const headers = new Headers({
        'RateLimit-Limit': 'ten',
        'RateLimit-Remaining': '4',
        'RateLimit-Reset': '-3',
      });
      expect(parseRateLimit(headers, { now: NOW })).toStrictEqual({ remaining: 4, source: 'ratelimit-legacy' });
    });

    test('a malformed vendor reset is dropped, a malformed Reset-After falls back to Reset', () => {
      const bad = new Headers({ 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': 'Wed, 15 Jan 2025 12:00:30 GMT' });
      expect(parseRateLimit(bad, { now: NOW })).toStrictEqual({ remaining: 0, source: 'x-ratelimit' });
      const fallback = new Headers({
        'X-RateLimit-Remaining': '0',
        'X-RateLimit-Reset-After': '-1',
        'X-RateLimit-Reset': '9',
      });
      expect(parseRateLimit(fallback, { now: NOW })?.resetMs).toBe(9000);
    });

    test('an invalid RateLimit-Policy item is skipped; the limit stays usable', () => {
      const headers = new Headers({
        RateLimit: '"p";r=1;t=2',
        'RateLimit-Policy': '"p";q=-1;w=60, "p";q=10;w=0, "p";q=10;qu=requests, "p";q=7;w=9',
      });
      expect(parseRateLimit(headers, { now: NOW })).toStrictEqual({
        limit: 7,
        remaining: 1,
        resetMs: 2000,
        windowMs: 9000,
        policy: 'p',
        source: 'ietf',
      });
    });

    test('draft-07 policies with the same quota are ambiguous, so no window is reported', () => {
      const headers = new Headers({ RateLimit: 'limit=10, remaining=0, reset=1', 'RateLimit-Policy': '10;w=1, 10;w=60' });
      expect(parseRateLimit(headers, { now: NOW })?.windowMs).toBeUndefined();
    });
  });

  describe('precedence', () => {
    test('IETF draft-10 wins over every other family present', () => {
      const headers = new Headers({
        RateLimit: '"default";r=5;t=10',
        'RateLimit-Remaining': '6',
        'X-RateLimit-Remaining': '7',
      });
      expect(parseRateLimit(headers, { now: NOW })).toMatchObject({ remaining: 5, source: 'ietf' });
    });

    test('the legacy fields win over the vendor fields', () => {
      const headers = new Headers({ 'RateLimit-Remaining': '6', 'X-RateLimit-Remaining': '7' });
      expect(parseRateLimit(headers, { now: NOW })).toMatchObject({ remaining: 6, source: 'ratelimit-legacy' });
    });

    test('a malformed RateLimit field counts as absent, so the next family is used', () => {
      const headers = new Headers({ RateLimit: '"default";r=oops', 'X-RateLimit-Remaining': '7' });
      expect(parseRateLimit(headers, { now: NOW })).toMatchObject({ remaining: 7, source: 'x-ratelimit' });
    });

    test('X-RateLimit-* wins over X-Rate-Limit-*, and the two prefixes are never mixed', () => {
      const headers = new Headers({
        'X-RateLimit-Remaining': '1',
        'X-Rate-Limit-Remaining': '2',
        'X-Rate-Limit-Limit': '100',
      });
      expect(parseRateLimit(headers, { now: NOW })).toStrictEqual({ remaining: 1, source: 'x-ratelimit' });
    });
  });

  describe('several draft-10 service limits: the most restrictive one is reported', () => {
    test.each<[string, string, string]>([
      ['the smallest remaining', '"hour";r=900;t=1800, "day";r=100;t=36000', 'day'],
      ['on a tie, the longest reset', '"minute";r=0;t=30, "hour";r=0;t=1800', 'hour'],
      ['on a tie, a known reset over an unknown one', '"a";r=0, "b";r=0;t=5', 'b'],
      ['on a full tie, the first listed', '"a";r=0;t=5, "b";r=0;t=5', 'a'],
      ['skipping malformed items', '"bad";r=-1, "good";r=3', 'good'],
    ])('%s', (_name, field, policy) => {
      expect(parseRateLimit(new Headers({ RateLimit: field }), { now: NOW })?.policy).toBe(policy);
    });

    test('the policy is matched by name and, when both carry one, by partition key', () => {
      const headers = new Headers({
        RateLimit: '"peruser";r=0;t=9;pk=:Qg==:',
        'RateLimit-Policy': '"peruser";q=100;pk=:QQ==:, "peruser";q=200;pk=:Qg==:',
      });
      expect(parseRateLimit(headers, { now: NOW })?.limit).toBe(200);
    });

    test('a field split over several lines is read as one list', () => {
      const headers = new Headers();
      headers.append('RateLimit', '"hour";r=900;t=1800');
      headers.append('RateLimit', '"day";r=100;t=36000');
      expect(parseRateLimit(headers, { now: NOW })).toMatchObject({ policy: 'day', remaining: 100 });
    });
  });

  describe('clocks and caches', () => {
    test('an epoch reset is measured against the Date header, so client clock skew does not matter', () => {
      const headers = new Headers({
        Date: HTTP_NOW,
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(NOW_S + 60),
      });
      for (const skew of [-3 * HOUR, 0, 3 * HOUR]) {
        expect(parseRateLimit(headers, { now: NOW + skew })?.resetMs).toBe(60_000);
      }
    });

    test('the epoch/delta threshold is 2024-01-01T00:00:00Z in seconds', () => {
      expect(EPOCH_SECONDS_THRESHOLD).toBe(Date.UTC(2024, 0, 1) / 1000);
      const at = (reset: number) =>
        parseRateLimit(new Headers({ 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(reset) }), { now: NOW })
          ?.resetMs;
      expect(at(EPOCH_SECONDS_THRESHOLD - 1)).toBe((EPOCH_SECONDS_THRESHOLD - 1) * 1000); // a (silly) delay
      expect(at(EPOCH_SECONDS_THRESHOLD)).toBe(0); // an epoch time, already past
    });

    test.each([
      ['RateLimit', { RateLimit: '"default";r=0;t=30' }],
      ['X-RateLimit', { 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': '30' }],
    ])('ignores %s fields on a cached response (Age > 0)', (_name, fields) => {
      expect(parseRateLimit(new Headers({ ...fields, Age: '12' }), { now: NOW })).toBeUndefined();
      expect(parseRateLimit(new Headers({ ...fields, Age: '0' }), { now: NOW })).toBeDefined();
    });

    test.each([
      ['a list keeps its first member', '5, 0', true],
      ['a zero first member', '0, 5', false],
      ['an invalid value is ignored', 'soon', false],
      ['a negative value is ignored', '-3', false],
    ])('Age: %s', (_name, age, cached) => {
      const headers = new Headers({ Age: age, 'RateLimit-Remaining': '1' });
      expect(parseRateLimit(headers, { now: NOW }) === undefined).toBe(cached);
    });
  });

  test('copes with hostile values: huge, long, non-ASCII, injected separators', () => {
    const headers = new Headers({
      RateLimit: `"${'a'.repeat(100_000)}";r=1;t=${'9'.repeat(15)}`,
      'RateLimit-Policy': `${'"x";q=1, '.repeat(10_000)}"y";q=2`,
    });
    expect(parseRateLimit(headers, { now: NOW })).toMatchObject({ remaining: 1, resetMs: MAX_DELAY_MS });
    const injected = new Headers({ 'X-RateLimit-Remaining': '0;r=99', 'X-RateLimit-Reset': '5,6' });
    expect(parseRateLimit(injected, { now: NOW })).toBeUndefined();
    const latin1 = new Headers({ 'X-RateLimit-Remaining': '\u00b9', RateLimit: '"\u00e9";r=0' });
    expect(parseRateLimit(latin1, { now: NOW })).toBeUndefined();
    const huge = new Headers({ 'X-RateLimit-Remaining': '9'.repeat(500), 'X-RateLimit-Reset': '9'.repeat(500) });
    expect(parseRateLimit(huge, { now: NOW })).toStrictEqual({
      remaining: MAX_DELAY_MS,
      resetMs: MAX_DELAY_MS,
      source: 'x-ratelimit',
    });
  });
});

describe('serverDelay()', () => {
  type Row = [name: string, status: number, headers: Record<string, string>, expected: ServerDelay | undefined];

  test.each<Row>([
    [
      'OpenAI: retry-after-ms wins over retry-after',
      429,
      { 'retry-after-ms': '1250', 'retry-after': '2', 'x-ratelimit-remaining-requests': '0' },
      { delayMs: 1250, source: 'retry-after-ms' },
    ],
    [
      'Discord: integer Retry-After wins over the decimal Reset-After',
      429,
      { 'Retry-After': '65', 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset-After': '64.57' },
      { delayMs: 65_000, source: 'retry-after' },
    ],
    [
      'Shopify: Retry-After 2.0 is not delay-seconds (strict)',
      429,
      { 'Retry-After': '2.0', 'X-Shopify-Shop-Api-Call-Limit': '40/40' },
      undefined,
    ],
    [
      'GitHub 429: no Retry-After, so the exhausted quota reset',
      429,
      { Date: HTTP_NOW, 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(NOW_S + 1800) },
      { delayMs: 1_800_000, source: 'x-ratelimit' },
    ],
    [
      'GitHub 403: a RateLimit reset is only a wait on 429/503',
      403,
      { Date: HTTP_NOW, 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(NOW_S + 1800) },
      undefined,
    ],
    [
      'IETF draft-10 on 503 with nothing left',
      503,
      { RateLimit: '"dynamic";r=0;t=20', 'RateLimit-Policy': '"dynamic";q=15;w=20' },
      { delayMs: 20_000, source: 'ietf' },
    ],
    [
      'IETF: Retry-After takes precedence over the RateLimit reset',
      429,
      { 'Retry-After': '20', RateLimit: '"dynamic";r=0;t=40' },
      { delayMs: 20_000, source: 'retry-after' },
    ],
    [
      'IETF draft example: Retry-After as a date, measured against Date',
      429,
      {
        Date: 'Mon, 05 Aug 2019 09:27:00 GMT',
        'Retry-After': 'Mon, 05 Aug 2019 09:27:05 GMT',
        RateLimit: '"default";r=0;t=5',
      },
      { delayMs: 5000, source: 'retry-after' },
    ],
    ['a 429 whose quota is not exhausted', 429, { RateLimit: '"default";r=3;t=40' }, undefined],
    ['a 429 with an exhausted quota but no reset', 429, { RateLimit: '"default";r=0' }, undefined],
    ['a 200 with an exhausted quota', 200, { RateLimit: '"default";r=0;t=48' }, undefined],
    ['a 503 with Retry-After', 503, { 'Retry-After': '120' }, { delayMs: 120_000, source: 'retry-after' }],
    [
      'a redirect with Retry-After (RFC 9110 allows it on 3xx)',
      301,
      { 'Retry-After': '3' },
      { delayMs: 3000, source: 'retry-after' },
    ],
    [
      'a malformed retry-after-ms falls through to Retry-After',
      429,
      { 'retry-after-ms': 'x', 'Retry-After': '1' },
      { delayMs: 1000, source: 'retry-after' },
    ],
    [
      'a malformed Retry-After falls through to RateLimit',
      429,
      { 'Retry-After': 'soon', 'RateLimit-Remaining': '0', 'RateLimit-Reset': '4' },
      { delayMs: 4000, source: 'ratelimit-legacy' },
    ],
    [
      'a cached 429 ignores RateLimit but not Retry-After',
      429,
      { Age: '30', 'Retry-After': '1', RateLimit: '"d";r=0;t=9' },
      { delayMs: 1000, source: 'retry-after' },
    ],
    ['a cached 429 with only RateLimit', 429, { Age: '30', RateLimit: '"d";r=0;t=9' }, undefined],
    ['no timing headers at all', 429, {}, undefined],
  ])('%s', (_name, status, headers, expected) => {
    expect(serverDelay(new Response(null, { status, headers }), { now: NOW })).toStrictEqual(expected);
  });

  test('Shopify: lenient mode reads Retry-After 2.0 as 2 s', () => {
    const response = new Response(null, { status: 429, headers: { 'Retry-After': '2.0' } });
    expect(serverDelay(response, { now: NOW, lenient: true })).toStrictEqual({ delayMs: 2000, source: 'retry-after' });
  });

  test('accepts any object with a status and a headers.get()', () => {
    const headers: HeadersLike = { get: (name) => (name === 'retry-after' ? '7' : null) };
    expect(serverDelay({ status: 429, headers }, { now: NOW })).toStrictEqual({ delayMs: 7000, source: 'retry-after' });
  });

  test('throws a RangeError for a `now` that is not a time value', () => {
    expect(() => serverDelay(new Response(null, { status: 429 }), { now: Number.NaN })).toThrow(RangeError);
  });
});

describe('properties', () => {
  const isDelay = (value: number | undefined) =>
    value === undefined || (Number.isSafeInteger(value) && value >= 0 && value <= MAX_DELAY_MS);
  const anyString = fc.oneof(
    fc.string({ unit: 'binary' }),
    fc.string({ unit: fc.constantFrom(...'0123456789.-+e ,;="\tGMTWedJan:'.split('')), maxLength: 40 }),
  );
  const anyNow = fc.integer({ min: -8.64e15, max: 8.64e15 });

  // Values a server could mean as a delay — seconds, decimals, ms, HTTP-dates — whole or damaged:
  // inputs that reach past the parsers' first check.
  const delayText = fc.oneof(
    fc.nat().map(String),
    fc.tuple(fc.nat({ max: 10 ** 6 }), fc.nat({ max: 999 })).map(([s, ms]) => `${s}.${ms}`),
    fc.integer({ min: 0, max: 253_402_300_799 }).map((s) => new Date(s * 1000).toUTCString()),
  );
  const damagedDelay = fc.tuple(delayText, fc.nat(), fc.string({ unit: 'binary', maxLength: 2 }))
    .map(([text, at, insert]) => { const i = at % (text.length + 1); return text.slice(0, i) + insert + text.slice(i + 1); });
  const delayish = fc.oneof(anyString, delayText, damagedDelay);

  test('Retry-After parsing never throws and gives undefined or a whole delay in [0, MAX_DELAY_MS]', () => {
    const reach = new Reach('Retry-After');
    fc.assert(
      fc.property(delayish, fc.oneof(anyString, delayText), anyNow, fc.boolean(), (value, date, now, lenient) => {
        reach.run();
        const delay = parseRetryAfter(value, { now, date, lenient });
        expect(isDelay(delay)).toBe(true);
        reach.hit('a Retry-After read', delay !== undefined);
        reach.hit('a Retry-After refused', delay === undefined);
        const ms = parseRetryAfterMs(value);
        expect(isDelay(ms)).toBe(true);
        reach.hit('a Retry-After-Ms read', ms !== undefined);
      }),
      { numRuns: 1000 },
    );
    reach.atLeast({ 'a Retry-After read': 200, 'a Retry-After refused': 200, 'a Retry-After-Ms read': 100 });
  });

  test('rate-limit parsing never throws and gives only whole, bounded numbers', () => {
    const reach = new Reach('rate-limit fields');
    const names = [
      ...['ratelimit', 'ratelimit-policy', 'ratelimit-remaining', 'ratelimit-limit', 'ratelimit-reset'],
      ...['x-ratelimit-remaining', 'x-ratelimit-limit', 'x-ratelimit-reset', 'x-ratelimit-reset-after'],
      ...['date', 'age', 'retry-after', 'retry-after-ms'],
    ];
    const fieldValue = fc.oneof(
      anyString,
      delayish,
      fc.constantFrom('0', '1', '"default";r=0;t=5', 'limit=1, remaining=0, reset=2', '"default";q=10;w=1'),
    );
    const fieldMaps = fc.dictionary(fc.constantFrom(...names), fieldValue);
    fc.assert(
      fc.property(fieldMaps, fc.integer({ min: 100, max: 599 }), anyNow, (fields, status, now) => {
        reach.run();
        const headers: HeadersLike = { get: (name) => fields[name] ?? null };
        const info = parseRateLimit(headers, { now });
        if (reach.hit('a quota read', info !== undefined)) {
          for (const n of [info!.limit, info!.remaining, info!.resetMs, info!.windowMs]) expect(isDelay(n)).toBe(true);
          reach.hit('a reset read', info!.resetMs !== undefined);
        }
        const delay = serverDelay({ status, headers }, { now });
        expect(delay === undefined || isDelay(delay.delayMs)).toBe(true);
        reach.hit('a server delay read', delay !== undefined);
      }),
      { numRuns: 1000 },
    );
    reach.atLeast({ 'a quota read': 80, 'a reset read': 20, 'a server delay read': 100 });
  });

  test('delay-seconds round-trip: n → n × 1000', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Math.floor(MAX_DELAY_MS / 1000) }), (n) => {
        expect(parseRetryAfter(String(n), { now: NOW })).toBe(n * 1000);
      }),
    );
  });

  test('lenient decimal seconds with up to 3 fraction digits convert to the exact ms', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 ** 12 }), (ms) => {
        const text = `${Math.floor(ms / 1000)}.${String(ms % 1000).padStart(3, '0')}`;
        expect(parseRetryAfter(text, { now: NOW, lenient: true })).toBe(ms);
      }),
    );
  });

  test('an IMF-fixdate made from a random epoch parses back to the exact delay', () => {
    const epochSeconds = fc.integer({ min: 0, max: 253_402_300_799 }); // up to 9999-12-31T23:59:59Z
    const reach = new Reach('IMF-fixdate delay');
    fc.assert(
      fc.property(epochSeconds, epochSeconds, (target, now) => {
        reach.run();
        reach.hit(target < now ? 'a date in the past (0)' : 'a date ahead');
        const value = new Date(target * 1000).toUTCString();
        expect(parseRetryAfter(value, { now: now * 1000 })).toBe(Math.max(0, (target - now) * 1000));
      }),
    );
    reach.atLeast({ 'a date in the past (0)': 20, 'a date ahead': 20 });
  });

  test('an HTTP-date delay depends only on the Date header, not on the client clock', () => {
    const epochSeconds = fc.integer({ min: 0, max: 253_402_300_799 });
    const reach = new Reach('Date header');
    fc.assert(
      fc.property(epochSeconds, epochSeconds, anyNow, (target, serverNow, clientNow) => {
        reach.run();
        reach.hit(target < serverNow ? 'a date in the past (0)' : 'a date ahead');
        const value = new Date(target * 1000).toUTCString();
        const date = new Date(serverNow * 1000).toUTCString();
        expect(parseRetryAfter(value, { now: clientNow, date })).toBe(Math.max(0, (target - serverNow) * 1000));
      }),
    );
    reach.atLeast({ 'a date in the past (0)': 20, 'a date ahead': 20 });
  });
});
