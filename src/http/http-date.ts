/**
 * Strict HTTP-date parser (RFC 9110 §5.6.7).
 *
 * What: `parseHttpDate` turns an HTTP-date into epoch milliseconds, or `undefined`.
 * Why not `Date.parse`: it accepts far more than HTTP allows (and differs between engines), so
 * a garbled `Retry-After` could turn into an arbitrary wait. Here only the three forms RFC 9110
 * names are accepted, character for character (the grammar is case-sensitive):
 *
 *   IMF-fixdate   `Sun, 06 Nov 1994 08:49:37 GMT`   (what servers must send)
 *   RFC 850       `Sunday, 06-Nov-94 08:49:37 GMT`  (obsolete, two-digit year)
 *   asctime       `Sun Nov  6 08:49:37 1994`         (obsolete, no zone: it is GMT)
 *
 * A date is rejected when the day does not exist (`31 Apr`, `29 Feb` of a common year) or when the
 * day name contradicts the date: RFC 5322, which IMF-fixdate is a subset of, requires them to
 * agree, and a contradiction means we cannot know which part the server meant.
 *
 * Calendar maths uses only `Date`'s UTC methods, which ECMAScript defines exactly (no time zone,
 * no parsing), with the year moved into 2000-2399 first (the proleptic Gregorian calendar repeats
 * every 400 years), so years 0000-0099 and every `now` are handled the same way on every host.
 */

/** Options for {@link parseHttpDate}. */
export interface HttpDateOptions {
  /**
   * The current time (epoch ms). Only an RFC 850 date needs it: its two-digit year is read as the
   * year that is not more than 50 years after `now` (RFC 9110 §5.6.7).
   */
  readonly now: number;
}

/**
 * Parses an HTTP-date in any of its three RFC 9110 forms.
 *
 * @returns epoch milliseconds (a whole number of seconds), or `undefined` when the value is absent
 *   or is not exactly one of the three forms.
 * @throws {RangeError} when `now` is not a valid time value (see {@link assertNow}).
 * @example
 * ```ts
 * parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT', { now: 0 }); // 784111777000
 * parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT', { now: Date.UTC(2025, 0, 1) }); // 784111777000
 * parseHttpDate('Sun Nov  6 08:49:37 1994', { now: 0 }); // 784111777000
 * parseHttpDate('1994-11-06T08:49:37Z', { now: 0 }); // undefined (not an HTTP-date)
 * ```
 */
export function parseHttpDate(value: string | null | undefined, options: HttpDateOptions): number | undefined {
  assertNow(options.now);
  if (typeof value !== 'string' || value.length > MAX_HTTP_DATE_LENGTH) return undefined;
  let m = IMF_FIXDATE.exec(value);
  if (m) return toEpochMs(m[1]!, +m[2]!, m[3]!, +m[4]!, m[5]!, m[6]!, m[7]!);
  m = ASCTIME.exec(value);
  if (m) return toEpochMs(m[1]!, +m[3]!.trim(), m[2]!, +m[7]!, m[4]!, m[5]!, m[6]!);
  m = RFC850.exec(value);
  if (m) {
    const month = MONTHS.indexOf(m[3]!) + 1;
    const timeOfDayMs = +m[5]! * 3_600_000 + +m[6]! * 60_000 + +m[7]! * 1000;
    const year = resolveTwoDigitYear(+m[4]!, month, +m[2]!, timeOfDayMs, options.now);
    return toEpochMs(m[1]!.slice(0, 3), +m[2]!, m[3]!, year, m[5]!, m[6]!, m[7]!);
  }
  return undefined;
}

/** Largest magnitude of an ECMAScript time value: ±100,000,000 days around 1970. */
const MAX_TIME_VALUE = 8.64e15;

/**
 * Checks the `now` every parser in this layer takes, so a wrong clock value fails loudly
 * instead of silently producing NaN delays. Shared by the HTTP header parsers.
 *
 * @throws {RangeError} when `now` is not a finite number within the range of `Date`.
 * @example
 * ```ts
 * assertNow(Date.UTC(2025, 0, 1)); // fine
 * assertNow(NaN); // RangeError: `now` must be a finite epoch time in ms, got NaN
 * ```
 */
export function assertNow(now: number): void {
  if (typeof now !== 'number' || !(Math.abs(now) <= MAX_TIME_VALUE)) {
    throw new RangeError(`\`now\` must be a finite epoch time in ms, got ${String(now)}`);
  }
}

// The longest valid form, "Wednesday, 09-Nov-94 08:49:37 GMT", has 33 characters.
const MAX_HTTP_DATE_LENGTH = 40;

const DAY = '(Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const DAY_LONG = '(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = '(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '(\\d\\d):(\\d\\d):(\\d\\d)';
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d\\d) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850 = new RegExp(`^${DAY_LONG}, (\\d\\d)-${MONTH}-(\\d\\d) ${TIME} GMT$`);
// asctime pads a one-digit day with a space ("Nov  6"); two digits ("Nov 06") also match 2DIGIT.
const ASCTIME = new RegExp(`^${DAY} ${MONTH} (\\d\\d| \\d) ${TIME} (\\d{4})$`);

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
// Indexed by (days since 1970-01-01 + 4) mod 7, because 1970-01-01 was a Thursday.
const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

const MS_PER_DAY = 86_400_000;

function toEpochMs(
  dayName: string,
  day: number,
  monthName: string,
  year: number,
  hh: string,
  mm: string,
  ss: string,
): number | undefined {
  const hour = +hh;
  const minute = +mm;
  const second = +ss;
  // second 60 is a leap second; it lands on the next minute's :00, which is close enough.
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  const days = daysFromCivil(year, MONTHS.indexOf(monthName) + 1, day);
  // A day that does not exist (31 Apr, 29 Feb of a common year, 00) rolls into another month.
  // Checked 400·k years earlier (same calendar), within the range of Date.
  if (new Date(mod(days, 146_097) * MS_PER_DAY).getUTCDate() !== day) return undefined;
  if (WEEKDAYS[mod(days + 4, 7)] !== dayName) return undefined;
  return days * MS_PER_DAY + hour * 3_600_000 + minute * 60_000 + second * 1000;
}

/**
 * RFC 9110 §5.6.7: a two-digit year that "appears to be more than 50 years in the future" means
 * the most recent past year with those digits. So we take the latest year ending in `yy` whose
 * timestamp is not after `now` + 50 calendar years.
 */
function resolveTwoDigitYear(yy: number, month: number, day: number, timeOfDayMs: number, now: number): number {
  const ref = new Date(Math.floor(now / MS_PER_DAY) * MS_PER_DAY);
  const refYear = ref.getUTCFullYear();
  // An invalid day such as 29 Feb rolls over in daysFromCivil; fine for a comparison.
  const limit = daysFromCivil(refYear + 50, ref.getUTCMonth() + 1, ref.getUTCDate()) * MS_PER_DAY + mod(now, MS_PER_DAY);
  let year = refYear - mod(refYear, 100) + yy + 100;
  while (daysFromCivil(year, month, day) * MS_PER_DAY + timeOfDayMs > limit) year -= 100;
  return year;
}

function mod(a: number, n: number): number {
  return ((a % n) + n) % n;
}

/**
 * Days since 1970-01-01 of a proleptic Gregorian date (month 1-12; a day past the month's end
 * rolls over), exact for any safe year. `Date`'s UTC methods are exact and host-independent
 * (ECMAScript defines them), but cover only ±273,790 years, and `Date.UTC` reads years 0-99 as
 * 1900-1999: so the year is moved into 2000-2399 first. The calendar repeats every 400 years,
 * which are exactly 146,097 days.
 */
function daysFromCivil(year: number, month: number, day: number): number {
  const cycles = Math.floor(year / 400) - 5;
  return Date.UTC(year - cycles * 400, month - 1, day) / MS_PER_DAY + cycles * 146_097;
}
