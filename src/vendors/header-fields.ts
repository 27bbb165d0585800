/**
 * Small pieces the vendor header readers share: counts, a budget from its fields, `x-should-retry`.
 *
 * @module
 */

import { assertNow } from "../http/http-date.ts";
import { type HeadersLike, referenceTime, trimOws, wholeNumber } from "../http/header-values.ts";
import type { VendorBudget } from "./types.ts";

/** Options of every vendor header reader. */
export interface ReadOptions {
  /**
   * The current time, epoch ms. Absolute resets (Anthropic's RFC 3339, GitHub's epoch seconds) are
   * measured against the response's `Date` header when it is valid — which cancels any skew between
   * our clock and the server's — else against `now`.
   */
  readonly now: number;
}

/**
 * A `^\d+$` count header (`x-ratelimit-remaining-tokens: 149984`), or `undefined` when absent or malformed.
 *
 * @example
 * ```ts
 * countHeader(new Headers({ "x-ratelimit-limit-requests": "60" }), "x-ratelimit-limit-requests"); // 60
 * ```
 */
export function countHeader(headers: HeadersLike, name: string): number | undefined {
  return wholeNumber(headers.get(name));
}

/**
 * A budget from the fields that were present; `undefined` when none was.
 *
 * @example
 * ```ts
 * budgetOf({ limit: 60, remaining: undefined, resetMs: 1000 }); // { limit: 60, resetMs: 1000 }
 * budgetOf({}); // undefined
 * ```
 */
export function budgetOf(fields: {
  limit?: number | undefined;
  remaining?: number | undefined;
  used?: number | undefined;
  resetMs?: number | undefined;
}): VendorBudget | undefined {
  const budget: { -readonly [K in keyof VendorBudget]: VendorBudget[K] } = {};
  if (fields.limit !== undefined) budget.limit = fields.limit;
  if (fields.remaining !== undefined) budget.remaining = fields.remaining;
  if (fields.used !== undefined) budget.used = fields.used;
  if (fields.resetMs !== undefined) budget.resetMs = fields.resetMs;
  return Object.keys(budget).length === 0 ? undefined : budget;
}

/**
 * `x-should-retry`, which OpenAI and Anthropic send to override the client's retry rule (both
 * vendors' official SDKs obey it): `true` or `false`, else `undefined`.
 *
 * @example
 * ```ts
 * readShouldRetry(new Headers({ "x-should-retry": "false" })); // false
 * readShouldRetry(new Headers({ "x-should-retry": "maybe" })); // undefined
 * ```
 */
export function readShouldRetry(headers: HeadersLike): boolean | undefined {
  const raw = headers.get("x-should-retry");
  if (raw === null) return undefined;
  const text = trimOws(raw);
  return text === "true" ? true : text === "false" ? false : undefined;
}

/**
 * The instant absolute resets are measured from: the valid `Date` header, else `now`.
 *
 * @throws {RangeError} when `now` is not a finite epoch time.
 * @example
 * ```ts
 * referenceNow(new Headers({ date: "Thu, 21 Aug 2025 12:40:00 GMT" }), 0); // 1755780000000
 * ```
 */
export function referenceNow(headers: HeadersLike, now: number): number {
  assertNow(now);
  return referenceTime(headers.get("date"), now);
}

/** Sets `key` on `target` only when `value` is defined (the readers return no `undefined` fields). */
export function setDefined<T extends object, K extends keyof T>(target: T, key: K, value: T[K] | undefined): void {
  if (value !== undefined) target[key] = value;
}
