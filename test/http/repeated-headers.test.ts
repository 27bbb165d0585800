/**
 * A delay or quota header sent on several lines reaches us joined (`3, 3`, RFC 9110 §5.3). Identical
 * repeats mean that value; differing repeats read as their most cautious member (the longest delay,
 * the smallest remaining count); one malformed member makes the field malformed.
 */
import { describe, expect, test } from 'vitest';
import { parseRateLimit, parseRetryAfter, parseRetryAfterMs, serverDelay } from '../../src/http/headers.ts';
import { createThrottledFetch } from '../../src/http/throttled-fetch.ts';
import { SmoothLimiter } from '../../src/limiters/smooth.ts';
import { ManualClock } from '../../src/clock.ts';

const NOW = Date.UTC(2025, 0, 15, 12, 0, 0);

describe('parseRetryAfter on a repeated field', () => {
  test.each([
    ['two identical delay-seconds', '3, 3', 3000],
    ['three identical', '3, 3,\t3', 3000],
    ['a comma without a space (a decimal comma?)', '3,3', undefined],
    ['identical IMF-fixdates', 'Wed, 15 Jan 2025 12:00:30 GMT, Wed, 15 Jan 2025 12:00:30 GMT', 30_000],
    ['identical RFC 850 dates', 'Wednesday, 15-Jan-25 12:00:30 GMT, Wednesday, 15-Jan-25 12:00:30 GMT', 30_000],
    ['differing values: the longest', '120, 30', 120_000],
    ['a date and seconds: the longest', 'Wed, 15 Jan 2025 12:00:30 GMT, 5', 30_000],
    ['one malformed member', '3, soon', undefined],
    ['an empty member', '3, ', undefined],
    ['a lone comma', ',', undefined],
  ])('%s: %j', (_name, value, expected) => {
    expect(parseRetryAfter(value, { now: NOW })).toBe(expected);
  });

  test('decimal members only when lenient', () => {
    expect(parseRetryAfter('1.5, 1.5', { now: NOW, lenient: true })).toBe(1500);
    expect(parseRetryAfter('1.5, 1.5', { now: NOW })).toBeUndefined();
  });
});

test('parseRetryAfterMs on a repeated field', () => {
  expect(parseRetryAfterMs('250, 250')).toBe(250);
  expect(parseRetryAfterMs('250, 900')).toBe(900);
  expect(parseRetryAfterMs('250, x')).toBeUndefined();
});

describe('parseRateLimit on repeated fields', () => {
  test.each([
    ['vendor remaining and reset repeated', { 'X-RateLimit-Remaining': '0, 0', 'X-RateLimit-Reset': '7, 7' }, 0, 7000],
    ['vendor reset-after repeated', { 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset-After': '2.5, 2.5' }, 0, 2500],
    ['vendor differing remaining: the smallest', { 'X-RateLimit-Remaining': '5, 2', 'X-RateLimit-Reset': '9' }, 2, 9000],
    ['vendor differing reset: the longest', { 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': '4, 9' }, 0, 9000],
    ['legacy remaining and reset repeated', { 'RateLimit-Remaining': '0, 0', 'RateLimit-Reset': '3, 3' }, 0, 3000],
  ])('%s', (_name, headers, remaining, resetMs) => {
    const info = parseRateLimit(new Headers(headers), { now: NOW });
    expect(info?.remaining).toBe(remaining);
    expect(info?.resetMs).toBe(resetMs);
  });

  test('a malformed member makes the field malformed', () => {
    expect(parseRateLimit(new Headers({ 'X-RateLimit-Remaining': '0, x' }), { now: NOW })).toBeUndefined();
  });
});

test('serverDelay reads a Retry-After sent twice (Headers.append joins the lines)', () => {
  const headers = new Headers();
  headers.append('Retry-After', '3');
  headers.append('Retry-After', '3');
  expect(serverDelay({ status: 429, headers }, { now: NOW })).toEqual({ delayMs: 3000, source: 'retry-after' });
});

test('the throttled fetch retries a 429 with a repeated Retry-After: 3 after 3 s, not after a backoff step', async () => {
  const clock = new ManualClock();
  const sent: number[] = [];
  const fetch = async (): Promise<Response> => {
    sent.push(clock.now());
    const headers = new Headers();
    if (sent.length === 1) {
      headers.append('Retry-After', '3');
      headers.append('Retry-After', '3');
    }
    return new Response(null, { status: sent.length === 1 ? 429 : 200, headers });
  };
  const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 100, clock }), clock, fetch, wallClock: () => NOW });
  const done = api('https://example.com/a');
  await clock.runAll();
  const response = await done;
  expect(response.status).toBe(200);
  expect(sent[1]! - sent[0]!).toBe(3000);
});

test('sluice/undici reads a repeated Retry-After from raw headers the same way', async () => {
  const { headersView } = await import('../../src/integrations/undici/headers.ts');
  const headers = headersView(['Retry-After', '3', 'retry-after', '3']);
  expect(serverDelay({ status: 429, headers }, { now: NOW })).toEqual({ delayMs: 3000, source: 'retry-after' });
});
