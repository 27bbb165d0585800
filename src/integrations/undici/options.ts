/**
 * Options of {@link throttle}: the public types, and their validation into the settings the
 * interceptor reads. Bad options throw when the interceptor is made, naming the option and the value.
 * Defaults are the throttled fetch's (`DEFAULTS`), so both read the server the same way.
 *
 * @module
 */
import { resolveCosts } from "../../http/costs.ts";
import { concurrencyFor } from "../../http/slots.ts";
import { MAX_TIMER_DELAY, systemClock } from "../../clock.ts";
import { AdaptiveRates, type AdaptiveRatesOptions } from "../../adaptive/rates.ts";
import { HTTP_DEFAULTS } from "../../http/defaults.ts";
import type { HeadersLike } from "../../http/headers.ts";
import { LIMITER_DEFAULTS } from "../../limiters/defaults.ts";
import type { KeyedLimiter } from "../../limiters/keyed.ts";
import { isKeyedLimiter } from "../../http/limiter-shape.ts";
import type { Limiter } from "../../limiters/limiter.ts";
import { WindowLimiter } from "../../limiters/window.ts";
import {
  describeValue,
  quietly,
  keysOf,
  nonNegativeFinite,
  nonNegativeOrInfinity,
  onlyKnown,
  optionsObject,
  positiveInteger,
  requireFunction,
} from "../../validate.ts";
import type { DispatchRequest } from "./types.ts";

/**
 * Sent to `onThrottle` when a response throttled us (429, or 503 with a delay) or reported an
 * exhausted quota.
 *
 * @example
 * ```ts
 * const onThrottle = ({ request, reason, delay, paused }: DispatchThrottleEvent) =>
 *   console.warn(`${String(request.origin)} ${reason}: asked ${delay} ms, paused ${paused} ms`);
 * ```
 */
export interface DispatchThrottleEvent {
  /** undici's dispatch options of the request whose response asked for the pause. */
  readonly request: DispatchRequest;
  /** The response status. */
  readonly statusCode: number;
  /** The response headers, read as `Headers.get` would read them. */
  readonly headers: HeadersLike;
  /** Which attempt of this request got the response (1-based; undici's retry interceptor makes more). */
  readonly attempt: number;
  /** The key of the limiter (with a `KeyedLimiter`), else undefined. */
  readonly key: string | undefined;
  /** `"throttled"`: 429, or 503 with a delay. `"quota-exhausted"`: RateLimit headers say 0 remaining. */
  readonly reason: "throttled" | "quota-exhausted";
  /** The delay the server asked for, in ms (the backoff step on a 429 without one). */
  readonly delay: number;
  /** How long the shared limiter was paused, in ms: `delay`, or 0 when it exceeds `maxRetryAfter`. */
  readonly paused: number;
}

/**
 * Options of {@link throttle}.
 *
 * @example
 * ```ts
 * const options: ThrottleOptions = {
 *   limiter: new WindowLimiter({ limit: 100, interval: 60_000, countFrom: "completion" }),
 *   maxRetryAfter: 120_000,
 * };
 * ```
 */
export interface ThrottleOptions {
  /**
   * The limiter every request takes permits from before it is sent — share one instance between
   * everything that calls the API. A {@link KeyedLimiter} gives each `key(request)` its own limiter
   * (default key: the origin).
   */
  limiter?: Limiter | KeyedLimiter<string>;
  /**
   * Shorthand for a limiter at a server's documented limit, "`limit` requests per `interval` ms":
   * `new WindowLimiter({ limit, interval, countFrom: "completion" })`. Give `limiter` instead to
   * share it with other clients (a throttled fetch, another agent).
   */
  limit?: number;
  /** With `limit`: the window in ms. @default 1000 */
  interval?: number;
  /**
   * Learn the server's rate per `key(request)`, as the throttled fetch's `adaptive` does: `true`,
   * the knobs (`ADAPTIVE_DEFAULTS`, and `onChange`), or an {@link AdaptiveRates} shared with a
   * throttled fetch. Alone, the rate is discovered; with `limit`/`limiter`, that limit is the
   * ceiling and the starting rate, its window's burst spread evenly until the server accepts a
   * second's worth at it. Each dispatch (each attempt of undici's retry interceptor
   * composed outside) waits for the learned rate. @default false
   */
  adaptive?: boolean | AdaptiveRatesOptions | AdaptiveRates;
  /**
   * With a `KeyedLimiter` or `adaptive`: the key of a request, from undici's dispatch options.
   * @default the origin, e.g. "https://api.example.com"
   */
  key?: (request: DispatchRequest) => string;
  /**
   * At most this many requests in flight at once (per key with a `KeyedLimiter`), alone or with
   * `limit`/`limiter`: a `ConcurrencyLimiter` combined with the rate limiter. A slot is held from
   * the grant until the response ends (its body fully delivered to the caller's handler), fails or
   * is upgraded — or until no body data has flowed for `slotTimeout` ms after its headers (a body
   * nobody reads stalls under backpressure), so a response the caller never reads cannot hold a
   * slot forever; before its headers the request holds its slot (a server still working on it).
   * @example
   * ```ts
   * throttle({ limit: 10, interval: 1000, maxConcurrent: 4 });
   * ```
   */
  maxConcurrent?: number;
  /** With `maxConcurrent`: ms without body data, from the response headers, before its slot is freed. @default 30000 */
  slotTimeout?: number;
  /** Permits one request costs, or a function of its dispatch options. @default 1 */
  permits?: number | ((request: DispatchRequest) => number);
  /**
   * Fail a request at once with `MaxWaitExceededError` when the limiter predicts a longer wait than
   * this (ms). @default the limiter's own `maxWait`
   */
  maxWait?: number;
  /**
   * Read each response's status and headers and pause the shared limiter when the server says so
   * (429/503 + Retry-After, RateLimit / X-RateLimit remaining 0). `false`: only pace. @default true
   */
  respectServer?: boolean;
  /**
   * The longest server-requested delay that pauses the limiter, in ms; a longer one pauses nobody
   * (the caller gets the response and decides). @default DEFAULTS.retry.maxRetryAfter (60000)
   */
  maxRetryAfter?: number;
  /**
   * How long a 429 WITHOUT a delay pauses the limiter: `min(cap, base·2ⁿ⁻¹)` ms for the n-th attempt
   * of the request. @default DEFAULTS.retry.backoff ({ base: 1000, cap: 30000 })
   */
  backoff?: { base?: number; cap?: number };
  /** Accept decimal Retry-After seconds (`1.5`), which RFC 9110 does not allow. @default true */
  lenientRetryAfter?: boolean;
  /** Pause the limiter until the reset when RateLimit / X-RateLimit headers say 0 remaining. @default true */
  rateLimitHeaders?: boolean;
  /**
   * A response throttled us or reported an exhausted quota (called before the caller sees it). Called
   * synchronously, inside undici's handler: a promise it returns (an `async` hook) is not awaited, and
   * its rejection is dropped rather than left unhandled.
   */
  onThrottle?: (event: DispatchThrottleEvent) => unknown;
  /** Epoch ms, for HTTP-dates and epoch resets (the `Date` header is preferred when present). @default Date.now */
  wallClock?: () => number;
}

/** The settings the interceptor reads. @internal */
export interface ResolvedThrottleOptions {
  /** The limiter of a request's key (the one limiter when not keyed; none with `adaptive` alone). */
  readonly limiterOf: (key: string | undefined) => Limiter | undefined;
  /** The learned rates per key, with `adaptive`. */
  readonly adaptive: AdaptiveRates | undefined;
  /** The key of a request, or undefined without a KeyedLimiter. */
  readonly keyOf: (request: DispatchRequest) => string | undefined;
  readonly permits: number | ((request: DispatchRequest) => number);
  /** With `maxConcurrent`: the slot's idle timeout (a request's task lasts until its body ends). */
  readonly slotTimeout: number | undefined;
  readonly maxWait: number | undefined;
  readonly respectServer: boolean;
  readonly policy: { readonly maxRetryAfter: number; readonly backoff: { readonly base: number; readonly cap: number } };
  readonly lenientRetryAfter: boolean;
  readonly rateLimitHeaders: boolean;
  readonly onThrottle: ThrottleOptions["onThrottle"];
  readonly wallClock: () => number;
}

function optionalBoolean(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") throw new TypeError(`\`${name}\` must be a boolean, got ${describeValue(value)}`);
  return value;
}

function optionalFunction<T>(name: string, value: T | undefined): T | undefined {
  return value === undefined ? undefined : requireFunction(name, value);
}

function isLimiter(value: unknown): value is Limiter {
  const l = value as Limiter;
  return typeof l === "object" && l !== null && typeof l.schedule === "function" && typeof l.pause === "function";
}

/** "https://api.example.com" from undici's `origin` (a string, possibly with a path, or a URL). */
export function originOf(request: DispatchRequest): string {
  const { origin } = request;
  if (origin instanceof URL) return origin.origin;
  if (typeof origin !== "string") throw new TypeError(`the request has no \`origin\` to key by, got ${describeValue(origin)}`);
  try {
    return new URL(origin).origin;
  } catch {
    return origin;
  }
}

/** Every option of `throttle()`: a key outside them is a typo (see `onlyKnown`). */
const THROTTLE_OPTIONS = keysOf<ThrottleOptions>()(
  "limiter", "limit", "interval", "adaptive", "key", "maxConcurrent", "slotTimeout", "permits", "maxWait", "respectServer",
  "maxRetryAfter", "backoff", "lenientRetryAfter", "rateLimitHeaders", "onThrottle", "wallClock",
);

/** Validates `options` and fills in the defaults. @internal */
export function resolveThrottleOptions(options: ThrottleOptions): ResolvedThrottleOptions {
  const o = optionsObject("options", options);
  onlyKnown("throttle()", o, THROTTLE_OPTIONS);
  if (o.limiter !== undefined && (o.limit !== undefined || o.interval !== undefined)) {
    throw new TypeError("`limit`/`interval` make a limiter of their own: give them or `limiter`, not both");
  }
  const keyed = isKeyedLimiter(o.limiter) ? o.limiter : undefined;
  let single = keyed !== undefined ? undefined : o.limit !== undefined || o.interval !== undefined
    ? new WindowLimiter({ limit: o.limit as number, interval: o.interval ?? LIMITER_DEFAULTS.interval, countFrom: "completion" })
    : (o.limiter as Limiter | undefined);
  const wallClock = optionalFunction("wallClock", o.wallClock) ?? Date.now;
  let adaptive: AdaptiveRates | undefined;
  const a = o.adaptive ?? HTTP_DEFAULTS.adaptive;
  if (a !== false) {
    if (a !== true && (typeof a !== "object" || a === null)) {
      throw new TypeError(`\`adaptive\` must be a boolean, an options object or an AdaptiveRates, got ${describeValue(a)}`);
    }
    adaptive = AdaptiveRates.of(a as true | AdaptiveRatesOptions | AdaptiveRates, systemClock, wallClock);
  }
  const costs = resolveCosts({ maxConcurrent: o.maxConcurrent, slotTimeout: o.slotTimeout });
  if (costs !== undefined && typeof o.permits === "number" && o.permits !== 1) {
    throw new TypeError(`\`permits\` must be 1 with \`maxConcurrent\` in sluice/undici, got ${describeValue(o.permits)}`);
  }
  let slotsOf: ((limiter: Limiter | undefined, key: string) => Limiter) | undefined;
  if (costs?.maxConcurrent !== undefined) {
    const slots = concurrencyFor(keyed === undefined ? single : undefined, costs.maxConcurrent, systemClock, keyed);
    if (keyed === undefined) single = slots(undefined, "");
    else slotsOf = slots;
  }
  if (keyed === undefined && !isLimiter(single) && !(adaptive !== undefined && single === undefined)) {
    throw new TypeError(`\`limiter\` must be a Limiter or a KeyedLimiter (or give \`limit\`), got ${describeValue(o.limiter)}`);
  }
  if (keyed === undefined && o.key !== undefined && adaptive === undefined) {
    throw new TypeError("`key` needs a KeyedLimiter as `limiter` (one limiter per key), got a single limiter");
  }
  const key = optionalFunction("key", o.key) ?? originOf;
  const permits = o.permits ?? HTTP_DEFAULTS.permits;
  if (typeof permits !== "function") positiveInteger("permits", permits);

  const d = HTTP_DEFAULTS.retry;
  const backoff = optionsObject("backoff", o.backoff);
  onlyKnown("`backoff`", backoff, ["base", "cap"]);
  const base = nonNegativeFinite("backoff.base", backoff.base ?? d.backoff.base);
  const cap = nonNegativeFinite("backoff.cap", backoff.cap ?? d.backoff.cap);
  const maxRetryAfter = nonNegativeFinite("maxRetryAfter", o.maxRetryAfter ?? d.maxRetryAfter);
  for (const [name, value] of [["backoff.cap", cap], ["maxRetryAfter", maxRetryAfter]] as const) {
    if (value > MAX_TIMER_DELAY) throw new RangeError(`\`${name}\` must be at most ${MAX_TIMER_DELAY} ms, got ${value}`);
  }

  return {
    limiterOf: keyed === undefined ? () => single : slotsOf === undefined ? (k) => keyed.get(k!) : (k) => slotsOf(keyed.get(k!), k!),
    adaptive,
    slotTimeout: costs?.slotTimeout,
    keyOf: keyed === undefined && adaptive === undefined ? () => undefined : (request) => {
      const k = key(request);
      if (typeof k !== "string") { quietly(k); throw new TypeError(`\`key\` must return a string, got ${describeValue(k)}`); }
      return k;
    },
    permits,
    maxWait: o.maxWait === undefined ? undefined : nonNegativeOrInfinity("maxWait", o.maxWait),
    respectServer: optionalBoolean("respectServer", o.respectServer, true),
    policy: { maxRetryAfter, backoff: { base, cap } },
    lenientRetryAfter: optionalBoolean("lenientRetryAfter", o.lenientRetryAfter, HTTP_DEFAULTS.lenientRetryAfter),
    rateLimitHeaders: optionalBoolean("rateLimitHeaders", o.rateLimitHeaders, HTTP_DEFAULTS.rateLimitHeaders),
    onThrottle: optionalFunction("onThrottle", o.onThrottle),
    wallClock,
  };
}
