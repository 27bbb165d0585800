/**
 * What a vendor profile returns: options for `createThrottledFetch`, to spread and compose with
 * the caller's own (`createThrottledFetch({ ...openai({ rpm, tpm }), timeout: 30_000 })`). The
 * `cost`/`settle` shapes are the throttled fetch's (SPEC-fetch-costs); they are restated here so the
 * profiles depend only on the shape, and the type check proves the two agree.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import type { KeyedLimiter } from "../limiters/keyed.ts";
import type { Limiter } from "../limiters/limiter.ts";
import type { ResponseEvent, RetryOptions } from "../http/options.ts";
import { describeValue, optionsObject, requireFunction } from "../validate.ts";

/**
 * Permits per dimension of a named combination (`{ requests: 1, tokens: 1500 }`), or a number.
 *
 * @example
 * ```ts
 * const cost: Cost = { requests: 1, tokens: 1500 };
 * ```
 */
export type Cost = number | Readonly<Record<string, number>>;

/**
 * What a profile's `settle` returns: the actual cost, `undefined` (keep the reservation), or, to read
 * the body without holding the caller's stream back, the response to hand on and a promise of the cost.
 *
 * @example
 * ```ts
 * const later: SettleResult = { response, actual: Promise.resolve({ tokens: 900 }) };
 * ```
 */
export type SettleResult =
  | Cost
  | undefined
  | Promise<Cost | undefined>
  | { readonly response: Response; readonly actual: Promise<Cost | undefined> };

/**
 * The options a vendor profile returns (a subset of `ThrottledFetchOptions`).
 *
 * @example
 * ```ts
 * const options: VendorProfile = openai({ rpm: 500, tpm: 200_000 });
 * const api = createThrottledFetch({ ...options, timeout: 30_000 });
 * ```
 */
export interface VendorProfile {
  /** The budgets: one named combination per key (model, or GitHub resource). */
  readonly limiter: Limiter | KeyedLimiter<string>;
  /** The key of a request's budget. */
  readonly key: (request: Request) => string;
  /** What one attempt reserves, per dimension, from the request. */
  readonly cost: (request: Request) => Promise<Cost>;
  /** The actual cost, read from the response (usage), when the vendor reports it. */
  readonly settle?: (response: Response, context: { request: Request; reserved: Cost; attempt: number }) => SettleResult;
  /** Retry rules the vendor asks for (`x-should-retry`, 529, GitHub's 403s). */
  readonly retry: RetryOptions;
  /** Reads the vendor's rate-limit headers after every response. */
  readonly onResponse: (event: ResponseEvent) => void;
  /** With `clock` given: the clock the budgets run on, for the fetch's timers too. */
  readonly clock?: Clock;
  /** With `wallClock` given: the epoch ms the profile reads resets against, for the fetch too. */
  readonly wallClock?: () => number;
  /** GitHub: the profile reads `x-ratelimit-*` itself, per resource. */
  readonly rateLimitHeaders?: boolean;
}

/**
 * A per-minute count option: a positive safe integer, else a RangeError naming it and the value.
 *
 * @example
 * ```ts
 * perMinuteOption("rpm", 500); // 500
 * perMinuteOption("rpm", 0);   // RangeError: `rpm` must be a positive integer (per minute), got 0
 * ```
 */
export function perMinuteOption(name: string, value: unknown): number {
  if (typeof value !== "number") throw new TypeError(`\`${name}\` must be a number (per minute), got ${describeValue(value)}`);
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`\`${name}\` must be a positive integer (per minute), got ${describeValue(value)}`);
  return value;
}

/**
 * A profile's `wallClock` option: the epoch-ms clock it reads vendor resets against (epoch seconds,
 * RFC 3339 times and HTTP-dates, when the response has no `Date` header). Given, it is passed on
 * to the fetch too, so the profile and the fetch read the same time — a virtual epoch in tests
 * (`() => epoch + clock.now()`). Else `Date.now`, as the fetch's default.
 *
 * @example
 * ```ts
 * const { now, passOn } = wallClockOption(undefined); // now === Date.now, passOn = {}
 * ```
 */
export function wallClockOption(value: unknown): { now: () => number; passOn: { wallClock?: () => number } } {
  if (value === undefined) return { now: Date.now, passOn: {} };
  const wallClock = requireFunction("wallClock", value) as () => number;
  return { now: wallClock, passOn: { wallClock } };
}

/**
 * Checks a profile's options object: an object (or undefined), with no key outside `known` — a
 * misspelt option (`tpms`) would otherwise be silently ignored.
 *
 * @example
 * ```ts
 * profileOptions("openai", { rpm: 1, tpm: 2 }, ["rpm", "tpm"]); // { rpm: 1, tpm: 2 }
 * ```
 */
export function profileOptions<T extends object>(profile: string, value: T | undefined, known: readonly string[]): Partial<T> {
  const o = optionsObject("options", value);
  for (const name of Object.keys(o)) {
    if (!known.includes(name)) {
      throw new TypeError(`\`${name}\` is not an option of ${profile}() (known: ${known.join(", ")})`);
    }
  }
  return o;
}

/**
 * A request's JSON body text, read from a clone (the request itself stays unread), or `undefined`
 * when it has none or it cannot be read.
 *
 * @example
 * ```ts
 * await bodyText(new Request("https://x", { method: "POST", body: "{}" })); // "{}"
 * ```
 */
export async function bodyText(request: Request): Promise<string | undefined> {
  if (request.body === null || request.bodyUsed) return undefined;
  try {
    return await request.clone().text();
  } catch {
    return undefined;
  }
}

/**
 * A minute in ms: the interval of every per-minute budget.
 *
 * @example
 * ```ts
 * new WindowLimiter({ limit: 500, interval: MINUTE });
 * ```
 */
export const MINUTE = 60_000;

/**
 * The error for a request larger than a model's budget for a whole minute (it could never be sent),
 * in the caller's terms: the model, what it asks and why. @internal
 *
 * @example
 * ```ts
 * throw neverFits("gpt-4o", "31013 tokens (prompt about 13, max_tokens × n 31000)", "30000 tokens");
 * ```
 */
export function neverFits(model: string, asked: string, limit: string): RangeError {
  return new RangeError(`a request to model ${JSON.stringify(model)} asks about ${asked}, more than its limit of ${limit} a minute: it could never be sent`);
}
