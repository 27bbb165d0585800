/**
 * RFC 3339 timestamps, as Anthropic sends them in `anthropic-ratelimit-*-reset`
 * (`2025-08-21T12:40:59Z`). Strict: `Date.parse` accepts far more (and differs between engines),
 * so a garbled value could become an arbitrary wait.
 *
 * @module
 */

/** `date-time` of RFC 3339 §5.6: `T`/`t` (or a space, §5.6 note), `Z`/`z` or a numeric offset. */
const RFC3339 = /^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:([Zz])|([+-])(\d\d):(\d\d))$/;

/** Longer values are refused unread (a value with nanoseconds and an offset has 35 characters). */
const MAX_LENGTH = 64;

/**
 * Parses an RFC 3339 `date-time` into epoch ms. A fraction below 1 ms is rounded *up* (these are
 * resets: never earlier than the server meant). Day-of-month and ranges are checked; `:60` is a
 * leap second and lands on the next minute.
 *
 * @returns epoch ms, or `undefined` when absent or not exactly an RFC 3339 date-time.
 * @example
 * ```ts
 * parseRfc3339("2025-08-21T12:40:59Z");          // 1755780059000
 * parseRfc3339("2025-08-21T14:40:59.5+02:00");   // 1755780059500
 * parseRfc3339("2025-02-30T00:00:00Z");          // undefined (no such day)
 * parseRfc3339("Thu, 21 Aug 2025 12:40:59 GMT"); // undefined (an HTTP-date)
 * ```
 */
export function parseRfc3339(value: string | null | undefined): number | undefined {
  if (typeof value !== "string" || value.length > MAX_LENGTH) return undefined;
  const m = RFC3339.exec(value);
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [
    number, number, number, number, number, number,
  ];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  let offsetMinutes = 0;
  if (m[8] === undefined) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return undefined;
    offsetMinutes = (m[9] === "-" ? -1 : 1) * (oh * 60 + om);
  }
  const fraction = m[7] ?? "";
  const ms = Number(fraction.slice(0, 3).padEnd(3, "0")) + (/[1-9]/.test(fraction.slice(3)) ? 1 : 0);
  // setUTCFullYear, unlike Date.UTC, keeps years 0-99 as written.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, ms);
  return date.getTime() - offsetMinutes * 60_000;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}
