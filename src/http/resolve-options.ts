/**
 * Validation of {@link createThrottledFetch}'s options into the resolved settings the loop reads.
 * Bad options throw at creation time, naming the option and the value
 * (``RangeError: `retry.limit` must be a non-negative integer, got -1``).
 *
 * @module
 */
import { type Clock, MAX_TIMER_DELAY } from "../clock.ts";
import type { Limiter } from "../limiters/limiter.ts";
import type { KeyedLimiter } from "../limiters/keyed.ts";
import { isKeyedLimiter } from "./limiter-shape.ts";
import { AdaptiveRates, type AdaptiveRatesOptions, toldRate } from "../adaptive/rates.ts";
import { GatedLimiter, INTERNALS, resolveClock } from "../limiters/limiter.ts";
import { LIMITER_DEFAULTS } from "../limiters/defaults.ts";
import { WindowLimiter } from "../limiters/window.ts";
import {
  describeValue,
  expectNumber,
  nonNegativeFinite,
  nonNegativeInteger,
  keysOf,
  nonNegativeOrInfinity,
  onlyKnown,
  optionsObject,
  positiveInteger,
  requireFunction,
} from "../validate.ts";
import { RetryBudget, type RetryBudgetOptions } from "./budget.ts";
import { HTTP_DEFAULTS } from "./defaults.ts";
import type { RetryPolicy } from "./retry.ts";
import { concurrencyFor, rateOf } from "./slots.ts";
import { resolveCosts, type ResolvedCosts } from "./costs.ts";
import type { FetchLike, IdempotencyKeyOptions, RetryOptions, ThrottledFetchOptions } from "./options.ts";

/** Every option of the fetch, of `retry` and of `idempotencyKey`: a key outside them is a typo (see `onlyKnown`). */
const FETCH_OPTIONS = keysOf<ThrottledFetchOptions>()(
  "limiter", "limit", "interval", "key", "adaptive", "fetch", "permits", "cost", "settle", "maxConcurrent", "slotTimeout",
  "priority", "maxWait", "retry", "timeout", "totalTimeout", "lenientRetryAfter", "rateLimitHeaders", "idempotencyKey",
  "onThrottle", "onRetry", "onResponse", "clock", "wallClock", "random",
);
const RETRY_OPTIONS = keysOf<RetryOptions>()(
  "limit", "methods", "statusCodes", "maxRetryAfter", "backoff", "budget", "shouldRetry", "pauseDimensions", "delay",
);

/** The settings the loop reads. @internal */
export interface ResolvedOptions {
  /** The learned rates per key, with `adaptive`. */
  readonly adaptive: AdaptiveRates | undefined;
  /** With `adaptive`: the ceiling of a key whose limiter is `limiter` (requests per second). */
  readonly ceiling: (limiter: Limiter | undefined) => number;
  readonly limiter: Limiter | undefined;
  readonly keyed: KeyedLimiter<string> | undefined;
  readonly key: (request: Request) => string;
  readonly fetch: FetchLike | undefined;
  readonly permits: number | ((request: Request) => number);
  /** Set when an attempt takes a reservation (`cost`, `settle` or `maxConcurrent` given). */
  readonly costs: ResolvedCosts | undefined;
  /** The limiter of a key with `maxConcurrent` (its slots combined in). */
  readonly slotsOf: ((limiter: Limiter | undefined, key: string) => Limiter) | undefined;
  readonly priority: ((request: Request) => number) | undefined;
  readonly maxWait: number | undefined;
  readonly policy: RetryPolicy;
  readonly budget: RetryBudget | undefined;
  readonly shouldRetry: RetryOptions["shouldRetry"];
  readonly delay: RetryOptions["delay"];
  readonly timeout: number;
  readonly totalTimeout: number;
  readonly lenientRetryAfter: boolean;
  readonly rateLimitHeaders: boolean;
  readonly idempotencyKey: { readonly header: string; readonly generate: () => string } | undefined;
  readonly onThrottle: ThrottledFetchOptions["onThrottle"];
  readonly onRetry: ThrottledFetchOptions["onRetry"];
  readonly onResponse: ThrottledFetchOptions["onResponse"];
  readonly clock: Clock;
  readonly wallClock: () => number;
  readonly random: () => number;
  /**
   * Nothing reads the call's `Request` unless an error does (no hook, no `key`/`permits` function,
   * no idempotency key): calls may take the lean path (see `throttled-fetch.ts`). @internal
   */
  readonly lean: boolean;
}

function optionalFunction<T>(name: string, value: T | undefined): T | undefined {
  return value === undefined ? undefined : requireFunction(name, value);
}

function optionalBoolean(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") throw new TypeError(`\`${name}\` must be a boolean, got ${describeValue(value)}`);
  return value;
}

/** A timer length: positive ms up to the runtime's timer range, or Infinity. */
function timerLength(name: string, value: unknown): number {
  expectNumber(name, value);
  const ms = value;
  // One message for every value out of range (-1 used to say "non-negative", then 0 "positive").
  if (!(ms > 0) || (ms > MAX_TIMER_DELAY && ms !== Infinity)) {
    throw new RangeError(`\`${name}\` must be a positive number of ms up to ${MAX_TIMER_DELAY}, or Infinity, got ${describeValue(value)}`);
  }
  return ms;
}

/** Fetches made per ManualClock, for {@link seededJitter}. */
const JITTERED = new WeakMap<Clock, number>();

/**
 * A `ManualClock`, known by its shape: `instanceof` would pull the class (and its timer queue) into
 * every bundle of the fetch, 1.3 KiB for a user who never tests in virtual time.
 */
function isManualClock(clock: Clock): boolean {
  const c = clock as { runUntil?: unknown; advanceTo?: unknown; jumpTo?: unknown };
  return typeof c.runUntil === "function" && typeof c.advanceTo === "function" && typeof c.jumpTo === "function";
}

/**
 * The default jitter under a `ManualClock`: seeded, so a test in virtual time comes out the same on
 * every run even when calls are retried (integrations red-team, 2026-11-27: three runs of the README's
 * simulated-API test with 1000-token prompts gave three different end times). xorshift32, one per
 * fetch; uniform in [0, 1).
 */
function seededJitter(clock: Clock): () => number {
  // Seeded by how many fetches this clock made before: deterministic, yet simulated clients on one
  // clock do not all retry at the same moments (review, 2026-11-27), which full jitter is there for.
  const made = JITTERED.get(clock) ?? 0;
  JITTERED.set(clock, made + 1);
  let x = (0x2545f491 ^ Math.imul(made + 1, 0x9e3779b9)) | 0 || 0x6d2b79f5;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

function isLimiter(value: unknown): value is Limiter {
  const l = value as Limiter;
  return typeof l === "object" && l !== null && typeof l.schedule === "function" && typeof l.pause === "function";
}

function methodList(value: unknown): ReadonlySet<string> {
  // A method is an HTTP token: "GE T" or "GET\n" could never match a request's method.
  if (!Array.isArray(value) || value.some((m) => typeof m !== "string" || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(m))) {
    throw new TypeError(`\`retry.methods\` must be an array of method names, got ${describeValue(value)}`);
  }
  return new Set(value.map((m: string) => m.toUpperCase()));
}

function dimensionList(value: unknown): readonly string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length === 0 || value.some((d) => typeof d !== "string" || d === "")) {
    throw new TypeError(`\`retry.pauseDimensions\` must be a non-empty array of dimension names, got ${describeValue(value)}`);
  }
  return [...value as string[]];
}

function statusList(value: unknown): ReadonlySet<number> {
  if (!Array.isArray(value) || value.some((s) => !Number.isInteger(s) || s < 100 || s > 599)) {
    throw new TypeError(`\`retry.statusCodes\` must be an array of HTTP statuses (100–599), got ${describeValue(value)}`);
  }
  return new Set(value as number[]);
}

/** A version-4 UUID from `crypto.randomUUID`, or from `getRandomValues` where that is missing. */
function randomUuid(): string {
  const c = globalThis.crypto;
  if (typeof c?.randomUUID === "function") return c.randomUUID();
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function resolveIdempotencyKey(value: unknown): ResolvedOptions["idempotencyKey"] {
  if (value === undefined) value = HTTP_DEFAULTS.idempotencyKey;
  if (value === false) return undefined;
  const o = value === true ? {} : optionsObject("idempotencyKey", value as IdempotencyKeyOptions);
  onlyKnown("`idempotencyKey`", o, keysOf<IdempotencyKeyOptions>()("header", "generate"));
  const header = o.header ?? HTTP_DEFAULTS.idempotencyKeyHeader;
  if (typeof header !== "string" || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(header)) {
    throw new TypeError(`\`idempotencyKey.header\` must be a header name, got ${describeValue(header)}`);
  }
  return { header, generate: optionalFunction("idempotencyKey.generate", o.generate) ?? randomUuid };
}

function resolveBudget(value: unknown): RetryBudget | undefined {
  if (value === false) return undefined;
  if (value instanceof RetryBudget) return value;
  return new RetryBudget(optionsObject("retry.budget", value as RetryBudgetOptions));
}

function originOf(request: Request): string {
  return new URL(request.url).origin;
}

function resolveAdaptive(value: unknown, clock: Clock, wallClock: () => number): AdaptiveRates | undefined {
  if (value === undefined) value = HTTP_DEFAULTS.adaptive;
  if (value === false) return undefined;
  if (value !== true && (typeof value !== "object" || value === null)) {
    throw new TypeError(`\`adaptive\` must be a boolean, an options object or an AdaptiveRates, got ${describeValue(value)}`);
  }
  return AdaptiveRates.of(value as true | AdaptiveRatesOptions | AdaptiveRates, clock, wallClock);
}

/** Validates `options` and fills in the defaults. @internal */
export function resolveOptions(options: ThrottledFetchOptions): ResolvedOptions {
  const o = optionsObject("options", options);
  onlyKnown("createThrottledFetch()", o, FETCH_OPTIONS);
  // Timers run on the limiter's clock unless told otherwise, so a ManualClock limiter needs nothing more.
  const limiterClock = o.limiter instanceof GatedLimiter ? o.limiter[INTERNALS].clock : undefined;
  const clock = resolveClock(o.clock ?? limiterClock);
  if (o.limiter !== undefined && (o.limit !== undefined || o.interval !== undefined)) {
    throw new TypeError("`limit`/`interval` make a limiter of their own: give them or `limiter`, not both");
  }
  const keyed = isKeyedLimiter(o.limiter) ? o.limiter : undefined;
  let limiter = keyed !== undefined ? undefined : o.limit !== undefined || o.interval !== undefined
    ? new WindowLimiter({ limit: o.limit as number, interval: o.interval ?? LIMITER_DEFAULTS.interval, countFrom: "completion", clock })
    : (o.limiter as Limiter | undefined);
  const wallClock = optionalFunction("wallClock", o.wallClock) ?? Date.now;
  const adaptive = resolveAdaptive(o.adaptive, clock, wallClock);
  const costs = resolveCosts(o);
  let slotsOf: ResolvedOptions["slotsOf"];
  if (costs?.maxConcurrent !== undefined) {
    const slots = concurrencyFor(keyed === undefined ? limiter : undefined, costs.maxConcurrent, clock, keyed);
    if (keyed === undefined) limiter = slots(undefined, "");
    else slotsOf = slots;
  }
  // Adaptive alone (no limit told) needs no limiter: the learned rate is the only one.
  if (keyed === undefined && !isLimiter(limiter) && !(adaptive !== undefined && limiter === undefined)) {
    throw new TypeError(`\`limiter\` must be a Limiter or a KeyedLimiter (or give \`limit\`), got ${describeValue(o.limiter)}`);
  }
  if (keyed === undefined && o.key !== undefined && adaptive === undefined) {
    throw new TypeError("`key` needs a KeyedLimiter as `limiter` (one limiter per key), got a single limiter");
  }
  const permits = o.permits ?? HTTP_DEFAULTS.permits;
  if (typeof permits !== "function") positiveInteger("permits", permits);
  const priority = optionalFunction("priority", o.priority);

  const r = typeof o.retry === "number"
    ? { limit: o.retry }
    : optionsObject("retry", o.retry);
  onlyKnown("`retry`", r, RETRY_OPTIONS);
  const d = HTTP_DEFAULTS.retry;
  const backoff = optionsObject("retry.backoff", r.backoff);
  onlyKnown("`retry.backoff`", backoff, ["base", "cap"]);
  const base = nonNegativeFinite("retry.backoff.base", backoff.base ?? d.backoff.base);
  const cap = nonNegativeFinite("retry.backoff.cap", backoff.cap ?? d.backoff.cap);
  const maxRetryAfter = nonNegativeFinite("retry.maxRetryAfter", r.maxRetryAfter ?? d.maxRetryAfter);
  for (const [name, value] of [["retry.backoff.cap", cap], ["retry.maxRetryAfter", maxRetryAfter]] as const) {
    if (value > MAX_TIMER_DELAY) throw new RangeError(`\`${name}\` must be at most ${MAX_TIMER_DELAY} ms, got ${value}`);
  }
  const policy: RetryPolicy = {
    limit: nonNegativeInteger("retry.limit", r.limit ?? d.limit),
    methods: methodList(r.methods ?? d.methods),
    statusCodes: statusList(r.statusCodes ?? d.statusCodes),
    maxRetryAfter,
    backoff: { base, cap },
    pauseDimensions: dimensionList(r.pauseDimensions),
  };

  const resolved: Omit<ResolvedOptions, "lean"> = {
    adaptive,
    ceiling: (limiter) => toldRate(rateOf(limiter)),
    limiter,
    keyed,
    key: optionalFunction("key", o.key) ?? originOf,
    fetch: optionalFunction("fetch", o.fetch),
    permits,
    costs,
    slotsOf,
    priority,
    maxWait: o.maxWait === undefined ? undefined : nonNegativeOrInfinity("maxWait", o.maxWait),
    policy,
    budget: policy.limit === 0 ? undefined : resolveBudget(r.budget),
    shouldRetry: optionalFunction("retry.shouldRetry", r.shouldRetry),
    delay: optionalFunction("retry.delay", r.delay),
    timeout: timerLength("timeout", o.timeout ?? HTTP_DEFAULTS.timeout),
    totalTimeout: timerLength("totalTimeout", o.totalTimeout ?? HTTP_DEFAULTS.totalTimeout),
    lenientRetryAfter: optionalBoolean("lenientRetryAfter", o.lenientRetryAfter, HTTP_DEFAULTS.lenientRetryAfter),
    rateLimitHeaders: optionalBoolean("rateLimitHeaders", o.rateLimitHeaders, HTTP_DEFAULTS.rateLimitHeaders),
    idempotencyKey: resolveIdempotencyKey(o.idempotencyKey),
    onThrottle: optionalFunction("onThrottle", o.onThrottle),
    onRetry: optionalFunction("onRetry", o.onRetry),
    onResponse: optionalFunction("onResponse", o.onResponse),
    clock,
    wallClock,
    random: optionalFunction("random", o.random) ?? (isManualClock(clock) ? seededJitter(clock) : Math.random),
  };
  const lean = adaptive === undefined && typeof permits !== "function" && keyed === undefined && resolved.idempotencyKey === undefined &&
    costs === undefined && priority === undefined &&
    !resolved.shouldRetry && !resolved.delay && !resolved.onThrottle && !resolved.onRetry && !resolved.onResponse;
  return { ...resolved, lean };
}
