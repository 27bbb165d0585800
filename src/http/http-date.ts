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
 * Calendar maths is done with integer day counts (proleptic Gregorian calendar), not `Date`, so
 * years 0000-0099 and every `now` are handled the same way and nothing depends on the host.
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
  const month = MONTHS.indexOf(monthName) + 1;
  const hour = +hh;
  const minute = +mm;
  const second = +ss;
  // second 60 is a leap second; it lands on the next minute's :00, which is close enough.
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  if (day < 1 || day > daysInMonth(year, month)) return undefined;
  const days = daysFromCivil(year, month, day);
  if (WEEKDAYS[mod(days + 4, 7)] !== dayName) return undefined;
  return days * MS_PER_DAY + hour * 3_600_000 + minute * 60_000 + second * 1000;
}

/**
 * RFC 9110 §5.6.7: a two-digit year that "appears to be more than 50 years in the future" means
 * the most recent past year with those digits. So we take the latest year ending in `yy` whose
 * timestamp is not after `now` + 50 calendar years.
 */
function resolveTwoDigitYear(yy: number, month: number, day: number, timeOfDayMs: number, now: number): number {
  const refDays = Math.floor(now / MS_PER_DAY);
  const ref = civilFromDays(refDays);
  // An invalid day such as 29 Feb rolls over in daysFromCivil; fine for a comparison.
  const limit = daysFromCivil(ref.year + 50, ref.month, ref.day) * MS_PER_DAY + (now - refDays * MS_PER_DAY);
  let year = ref.year - mod(ref.year, 100) + yy + 100;
  while (daysFromCivil(year, month, day) * MS_PER_DAY + timeOfDayMs > limit) year -= 100;
  return year;
}

function mod(a: number, n: number): number {
  return ((a % n) + n) % n;
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (month 1-12); exact for any safe year. */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const mp = (month + 9) % 12; // March = 0, so leap days fall at the end of the year
  const doy = Math.floor((153 * mp + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

/** Inverse of {@link daysFromCivil}. */
function civilFromDays(days: number): { year: number; month: number; day: number } {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day };
}
