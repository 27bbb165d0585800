import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { assertNow, parseHttpDate } from '../../src/http/http-date.ts';
import { Reach } from '../reach.ts';


const NOW = Date.UTC(2025, 0, 15, 12, 0, 0);
const RFC_EXAMPLE = Date.UTC(1994, 10, 6, 8, 49, 37);

const LONG_DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const pad = (n: number, width = 2) => String(n).padStart(width, '0');
const time = (d: Date) => `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;

/** Formats epoch ms as `Sunday, 06-Nov-94 08:49:37 GMT`. */
function rfc850(ms: number): string {
  const d = new Date(ms);
  const dd = pad(d.getUTCDate());
  const yy = pad(d.getUTCFullYear() % 100);
  return `${LONG_DAYS[d.getUTCDay()]}, ${dd}-${MONTHS[d.getUTCMonth()]}-${yy} ${time(d)} GMT`;
}

/** Formats epoch ms as `Sun Nov  6 08:49:37 1994`. */
function asctime(ms: number): string {
  const d = new Date(ms);
  const day = String(d.getUTCDate()).padStart(2, ' ');
  const year = pad(d.getUTCFullYear(), 4);
  return `${LONG_DAYS[d.getUTCDay()]!.slice(0, 3)} ${MONTHS[d.getUTCMonth()]} ${day} ${time(d)} ${year}`;
}

describe('parseHttpDate()', () => {
  test.each([
    ['IMF-fixdate', 'Sun, 06 Nov 1994 08:49:37 GMT'],
    ['obsolete RFC 850', 'Sunday, 06-Nov-94 08:49:37 GMT'],
    ['obsolete asctime', 'Sun Nov  6 08:49:37 1994'],
    ['asctime with a zero-padded day', 'Sun Nov 06 08:49:37 1994'],
  ])('reads the RFC 9110 example in %s form', (_form, value) => {
    expect(parseHttpDate(value, { now: NOW })).toBe(RFC_EXAMPLE);
  });

  test('accepts 29 February in a leap year and a leap second', () => {
    expect(parseHttpDate('Thu, 29 Feb 2024 00:00:00 GMT', { now: NOW })).toBe(Date.UTC(2024, 1, 29));
    expect(parseHttpDate('Sat, 31 Dec 2016 23:59:60 GMT', { now: NOW })).toBe(Date.UTC(2017, 0, 1));
  });

  test('handles years the Date constructor would misread (0000-0099)', () => {
    const expected = new Date(0).setUTCFullYear(1, 0, 1); // 0001-01-01, a Monday
    expect(parseHttpDate('Mon, 01 Jan 0001 00:00:00 GMT', { now: NOW })).toBe(expected);
  });

  test.each([
    ['ISO 8601', '1994-11-06T08:49:37Z'],
    ['a lowercase zone', 'Sun, 06 Nov 1994 08:49:37 gmt'],
    ['another zone', 'Sun, 06 Nov 1994 08:49:37 UTC'],
    ['a numeric offset', 'Sun, 06 Nov 1994 08:49:37 +0000'],
    ['a missing zone', 'Sun, 06 Nov 1994 08:49:37'],
    ['a lowercase month', 'Sun, 06 nov 1994 08:49:37 GMT'],
    ['a one-digit day in IMF-fixdate', 'Sun, 6 Nov 1994 08:49:37 GMT'],
    ['a two-digit year in IMF-fixdate', 'Sun, 06 Nov 94 08:49:37 GMT'],
    ['a long day name in IMF-fixdate', 'Sunday, 06 Nov 1994 08:49:37 GMT'],
    ['a short day name in RFC 850', 'Sun, 06-Nov-94 08:49:37 GMT'],
    ['a double space', 'Sun,  06 Nov 1994 08:49:37 GMT'],
    ['trailing text', 'Sun, 06 Nov 1994 08:49:37 GMT; x'],
    ['hour 24', 'Sun, 06 Nov 1994 24:00:00 GMT'],
    ['minute 60', 'Sun, 06 Nov 1994 08:60:00 GMT'],
    ['second 61', 'Sun, 06 Nov 1994 08:49:61 GMT'],
    ['31 April', 'Thu, 31 Apr 2025 00:00:00 GMT'],
    ['29 February of a common year', 'Sat, 29 Feb 2025 00:00:00 GMT'],
    ['day 00', 'Sat, 00 Feb 2025 00:00:00 GMT'],
    ['a weekday that contradicts the date', 'Mon, 06 Nov 1994 08:49:37 GMT'],
    ['Unicode digits', 'Sun, ٠٦ Nov 1994 08:49:37 GMT'],
    ['an empty string', ''],
    ['a very long string', `Sun, 06 Nov 1994 08:49:37 GMT${' '.repeat(100_000)}`],
  ])('rejects %s', (_name, value) => {
    expect(parseHttpDate(value, { now: NOW })).toBeUndefined();
  });

  test('returns undefined for null and undefined', () => {
    expect(parseHttpDate(null, { now: NOW })).toBeUndefined();
    expect(parseHttpDate(undefined, { now: NOW })).toBeUndefined();
  });

  describe('two-digit RFC 850 years: more than 50 years ahead of now means the previous century', () => {
    test.each([
      ['94 seen in 2025 is 1994', 'Sunday, 06-Nov-94 08:49:37 GMT', NOW, RFC_EXAMPLE],
      ['26 seen in 2025 is 2026', 'Thursday, 15-Jan-26 12:00:00 GMT', NOW, Date.UTC(2026, 0, 15, 12)],
      ['75 exactly 50 years ahead is 2075', 'Tuesday, 15-Jan-75 12:00:00 GMT', NOW, Date.UTC(2075, 0, 15, 12)],
      ['75 one second past 50 years is 1975', 'Wednesday, 15-Jan-75 12:00:01 GMT', NOW, Date.UTC(1975, 0, 15, 12, 0, 1)],
      ['01 seen in 2099 is 2101', 'Saturday, 01-Jan-01 00:00:00 GMT', Date.UTC(2099, 5, 1), Date.UTC(2101, 0, 1)],
      ['00 decides whether 29 Feb exists (2000 is a leap year)', 'Tuesday, 29-Feb-00 00:00:00 GMT', NOW, Date.UTC(2000, 1, 29)],
    ])('%s', (_name, value, now, expected) => {
      expect(parseHttpDate(value, { now })).toBe(expected);
    });
  });

  test('throws a RangeError for a `now` that is not a time value', () => {
    expect(() => parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT', { now: Number.NaN })).toThrow(RangeError);
    expect(() => assertNow(Number.POSITIVE_INFINITY)).toThrow('`now` must be a finite epoch time in ms, got Infinity');
    expect(() => assertNow(8.64e15 + 1)).toThrow(RangeError);
    expect(() => assertNow(-8.64e15)).not.toThrow();
  });
});

describe('properties', () => {
  // Whole seconds from 0000-01-01 to 9999-12-31T23:59:59Z: every date IMF-fixdate can express, with
  // the edges drawn on purpose — years 0000-0099 (which the Date constructor misreads) and 29 February.
  const YEAR_100 = -59_011_459_200;
  const anySecond = fc.integer({ min: -62_167_219_200, max: 253_402_300_799 });
  const leapDay = fc.integer({ min: 0, max: 2499 }).map((k) => Date.UTC(4 * k, 1, 29) / 1000).filter((s) => new Date(s * 1000).getUTCMonth() === 1);
  const epochSeconds = fc.oneof(
    { weight: 2, arbitrary: anySecond },
    { weight: 1, arbitrary: fc.integer({ min: -62_167_219_200, max: YEAR_100 - 1 }) },
    { weight: 1, arbitrary: fc.tuple(leapDay, fc.integer({ min: 0, max: 86_399 })).map(([day, s]) => day + s) },
  );
  const isLeapDay = (s: number) => { const d = new Date(s * 1000); return d.getUTCMonth() === 1 && d.getUTCDate() === 29; };
  const RUNS = 300;

  test('any IMF-fixdate produced by toUTCString() parses back to the same instant', () => {
    const reach = new Reach('IMF-fixdate');
    fc.assert(
      fc.property(epochSeconds, (s) => {
        reach.run();
        reach.hit('a year 0000-0099', s < YEAR_100);
        reach.hit('29 February', isLeapDay(s));
        expect(parseHttpDate(new Date(s * 1000).toUTCString(), { now: NOW })).toBe(s * 1000);
      }),
      { numRuns: RUNS },
    );
    reach.atLeast({ 'a year 0000-0099': 30, '29 February': 30 });
  });

  test('any asctime date parses back to the same instant', () => {
    const reach = new Reach('asctime');
    fc.assert(
      fc.property(epochSeconds, (s) => {
        reach.run();
        reach.hit('a year 0000-0099', s < YEAR_100);
        reach.hit('29 February', isLeapDay(s));
        reach.hit('a one-digit day', new Date(s * 1000).getUTCDate() < 10);
        expect(parseHttpDate(asctime(s * 1000), { now: NOW })).toBe(s * 1000);
      }),
      { numRuns: RUNS },
    );
    reach.atLeast({ 'a year 0000-0099': 30, '29 February': 30, 'a one-digit day': 30 });
  });

  test('an RFC 850 date within 49 years of now parses back to the same instant', () => {
    const YEAR = 365 * 86_400;
    const reach = new Reach('RFC 850');
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 200_000_000_000 }), // now, in seconds: 1970 to ~8300
        fc.integer({ min: -49 * YEAR, max: 49 * YEAR }),
        (nowSeconds, offset) => {
          const at = (nowSeconds + offset) * 1000;
          fc.pre(at >= 0);
          reach.run();
          // The two-digit year resolves across a century boundary: the case the 50-year rule exists for.
          const century = (ms: number) => Math.floor(new Date(ms).getUTCFullYear() / 100);
          reach.hit('another century than now', century(at) !== century(nowSeconds * 1000));
          reach.hit('in the past', offset < 0);
          reach.hit('in the future', offset > 0);
          expect(parseHttpDate(rfc850(at), { now: nowSeconds * 1000 })).toBe(at);
        },
      ),
      { numRuns: RUNS },
    );
    reach.atLeast({ 'another century than now': 30, 'in the past': 80, 'in the future': 80 });
  });

  test('never throws and returns undefined or a whole number, whatever the input', () => {
    const reach = new Reach('hostile dates');
    // Random text, and real dates in the three forms with one character changed or cut short:
    // inputs that reach deep into the parser, not only its first check.
    const dateText = fc.tuple(epochSeconds, fc.constantFrom(
      (ms: number) => new Date(ms).toUTCString(), rfc850, asctime,
    )).map(([s, format]) => format(s * 1000));
    const damaged = fc.tuple(dateText, fc.nat(), fc.string({ unit: 'binary', maxLength: 2 }), fc.boolean())
      .map(([text, at, insert, cut]) => {
        const i = at % (text.length + 1);
        return cut ? text.slice(0, i) : text.slice(0, i) + insert + text.slice(i + 1);
      });
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), dateText, damaged), fc.integer({ min: -8.64e15, max: 8.64e15 }), (value, now) => {
        reach.run();
        const result = parseHttpDate(value, { now });
        expect(result === undefined || Number.isInteger(result)).toBe(true);
        reach.hit(result === undefined ? 'rejected' : 'parsed');
      }),
      { numRuns: 1000 },
    );
    reach.atLeast({ rejected: 400, parsed: 150 });
  });
});
