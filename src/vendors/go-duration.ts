/**
 * Go durations, as OpenAI sends them in `x-ratelimit-reset-requests` / `-tokens` ("6m0s", "1.2s",
 * "850ms", "12ms"): what Go's `time.Duration.String()` writes and `time.ParseDuration` reads.
 *
 * The sum is taken in integer nanoseconds (BigInt), so "0.1s" + "0.2s" is exactly 300 ms and no
 * float rounding can shorten a wait; the result is rounded *up* to whole ms (a reset is a time to
 * wait, and waiting 1 ms too long is harmless where 1 ms too short is a refused request).
 *
 * @module
 */

import { MAX_DELAY_MS } from "../http/header-values.ts";

/** Nanoseconds per unit; Go spells microseconds `us`, `µs` (U+00B5) or `μs` (U+03BC). */
const UNIT_NS: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  "\u00b5s": 1_000n,
  "\u03bcs": 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

/**
 * One `[digits][.[digits]]<unit>` component, as Go's `time.ParseDuration` reads it: either side of
 * the dot may be empty (`.5s`, `1.s`) but not both (checked by the caller); units are tried longest
 * first so "ms" is not "m".
 */
const COMPONENT = /(\d*)(?:\.(\d*))?(ns|us|\u00b5s|\u03bcs|ms|s|m|h)/y;

/** Longer values are refused unread: the longest Go writes, "2562047h47m16.854775807s", has 24. */
const MAX_LENGTH = 64;

const NS_PER_MS = 1_000_000n;

/**
 * Parses a Go duration into whole milliseconds, rounded up.
 *
 * Accepts one or more `<number><unit>` components (`1h2m3.5s`, `1.2s`, `850ms`, `1µs`, `1us`),
 * units `h`, `m`, `s`, `ms`, `us`/`µs`/`μs`, `ns`, and the bare `0` Go writes for a zero duration.
 * Like Go, either side of a decimal point may be empty (`.5s` = 500 ms, `1.s` = 1 s), not both
 * (`.s`). Stricter than Go in one way only: a sign is refused (a reset cannot be negative). A number
 * without a unit (`5` — Azure OpenAI's integer seconds are not Go durations), spaces, or an unknown
 * unit make the whole value malformed, and a malformed value is `undefined`, never a guess.
 *
 * @returns whole ms, rounded up and clamped to {@link MAX_DELAY_MS}; `undefined` when absent or malformed.
 * @example
 * ```ts
 * parseGoDuration("6m0s");     // 360000
 * parseGoDuration("1.2s");     // 1200
 * parseGoDuration("1h2m3.5s"); // 3723500
 * parseGoDuration("1µs");      // 1 (rounded up)
 * parseGoDuration(".5s");      // 500 (as Go's time.ParseDuration)
 * parseGoDuration("-1s");      // undefined
 * ```
 */
export function parseGoDuration(value: string | null | undefined): number | undefined {
  const ns = parseGoDurationNs(value);
  if (ns === undefined) return undefined;
  const ms = (ns + NS_PER_MS - 1n) / NS_PER_MS;
  return ms > BigInt(MAX_DELAY_MS) ? MAX_DELAY_MS : Number(ms);
}

/**
 * Parses a Go duration into exact integer nanoseconds (see {@link parseGoDuration} for the grammar).
 * Fraction digits below a nanosecond are dropped, as Go does.
 *
 * @example
 * ```ts
 * parseGoDurationNs("1.5us"); // 1500n
 * parseGoDurationNs("0");     // 0n
 * parseGoDurationNs("1");     // undefined: no unit
 * ```
 */
export function parseGoDurationNs(value: string | null | undefined): bigint | undefined {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_LENGTH) return undefined;
  if (value === "0") return 0n;
  let total = 0n;
  COMPONENT.lastIndex = 0;
  while (COMPONENT.lastIndex < value.length) {
    const m = COMPONENT.exec(value);
    const whole = m?.[1] ?? "";
    const fraction = m?.[2] ?? "";
    if (m === null || (whole === "" && fraction === "")) return undefined; // "s", ".s": no digits
    const unit = UNIT_NS[m[3]!]!;
    // The fraction scaled into the unit's ns exactly: digits × unit / 10^digits, truncated.
    const fractionNs = fraction === "" ? 0n : (BigInt(fraction) * unit) / 10n ** BigInt(fraction.length);
    total += BigInt(whole === "" ? "0" : whole) * unit + fractionNs;
  }
  return total;
}
