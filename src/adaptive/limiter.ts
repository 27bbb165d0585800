/**
 * AdaptiveLimiter: a SmoothLimiter whose rate an {@link AdaptiveController} sets from the server's
 * answers, and the small feedback loop (`onSent` / `onResponse`) that a fetch wiring calls around
 * each request.
 *
 * The rate is applied through `SmoothLimiter.setLimit`, so callers already queued are re-timed at
 * once, and with no stored permits (burst 0): a cut, a pause or a long idle time never ends in a
 * burst — callers resume spaced at the learned rate.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { parseRateLimit } from "../http/headers.ts";
import { parseRateLimitPolicy } from "../http/ratelimit-headers.ts";
import type { HeadersLike } from "../http/header-values.ts";
import { readServerSignals } from "../http/throttle.ts";
import { HTTP_DEFAULTS } from "../http/defaults.ts";
import type { AcquireOptions, BaseLimiterOptions, Limiter, ScheduleOptions } from "../limiters/limiter.ts";
import { BASE_OPTIONS, resolveClock } from "../limiters/limiter.ts";
import type { Permits, Reservation, ReserveOptions } from "../limiters/reservation.ts";
import type { LimiterEvents } from "../limiters/events.ts";
import { withRateReason } from "../limiters/set-limit.ts";
import { SmoothLimiter } from "../limiters/smooth.ts";
import type { LimiterStats } from "../limiters/stats.ts";
import { describeValue, keysOf, onlyKnown, optionsObject, requireFunction } from "../validate.ts";
import { AdaptiveController, type Advice, type RateChange, type ResponseOutcome, type SendTag } from "./controller.ts";
import { ADAPTIVE_OPTIONS, type AdaptiveOptions, pickAdaptive } from "./options.ts";

/**
 * Options of {@link AdaptiveLimiter}: the controller's knobs (rates in requests per second) and the
 * limiter's own.
 *
 * @example
 * ```ts
 * const options: AdaptiveLimiterOptions = { maxRate: 20, onChange: (c) => console.log(c.reason, c.rate) };
 * ```
 */
export interface AdaptiveLimiterOptions extends AdaptiveOptions, BaseLimiterOptions {
  /**
   * Called after each change of the rate (already applied), with the change. A throw reaches the
   * caller of the method that made the change (`onResponse`, `setLimit`); the change stays applied.
   * @default none
   */
  onChange?: (change: RateChange) => void;
  /**
   * The wall clock, epoch ms, for reading HTTP-dates and epoch resets in headers (measured against
   * the response's `Date` header when it has one). @default Date.now
   */
  wallClock?: () => number;
}

/**
 * A key whose rate the server cut below a fresh key's start is forgotten after this many probe
 * steps unused — a step is at least the server's window, so a per-hour window keeps it 10 hours…
 */
export const FORGET_CUT_AFTER_STEPS = 10;
/** …and at least this long (ms): 10 minutes. */
export const FORGET_CUT_AFTER_MS = 600_000;

const LIMITER_OPTIONS = keysOf<AdaptiveLimiterOptions>()(...ADAPTIVE_OPTIONS, ...BASE_OPTIONS, "onChange", "wallClock");

/**
 * A limiter that learns the server's rate: it starts conservatively (or at the rate it was told),
 * ramps up while callers wait, cuts once per overload event, resumes spaced after a pause, and obeys
 * a limit the server states in headers. Call {@link AdaptiveLimiter.onSent} when a request leaves
 * and {@link AdaptiveLimiter.onResponse} with its response — or use {@link sendAdaptive}.
 *
 * @example
 * ```ts
 * import { AdaptiveLimiter, sendAdaptive } from "sluice";
 * const limiter = new AdaptiveLimiter({ onChange: ({ rate, reason }) => console.log(rate, reason) });
 * const response = await sendAdaptive(limiter, () => fetch("https://api.example.com/items"));
 * limiter.rate; // the learned rate, requests per second
 * ```
 */
export class AdaptiveLimiter implements Limiter {
  readonly #inner: SmoothLimiter;
  readonly #controller: AdaptiveController;
  readonly #clock: Clock;
  readonly #onChange: ((change: RateChange) => void) | undefined;
  readonly #wallClock: () => number;
  /** When a request was last sent or answered (see `isIdle`). */
  #lastUsed = -Infinity;
  /** The told limit last followed (see {@link AdaptiveLimiter.follow}): the one made with, at first. */
  #followed: number;

  /**
   * Creates the limiter at the controller's starting rate, nothing queued.
   * @throws {RangeError | TypeError} when an option is invalid, naming it and its value.
   */
  constructor(options: AdaptiveLimiterOptions = {}) {
    const o = optionsObject("options", options);
    onlyKnown("AdaptiveLimiter", o, LIMITER_OPTIONS);
    const clock = resolveClock(o.clock);
    this.#onChange = o.onChange === undefined ? undefined : requireFunction("onChange", o.onChange);
    this.#wallClock = o.wallClock === undefined ? Date.now : requireFunction("wallClock", o.wallClock);
    this.#controller = new AdaptiveController(pickAdaptive(o), clock.now());
    this.#followed = this.#controller.ceiling;
    this.#clock = clock;
    this.#inner = new SmoothLimiter({
      limit: this.#controller.rate,
      interval: 1000,
      clock,
      maxQueue: o.maxQueue,
      maxWait: o.maxWait,
      priorityAging: o.priorityAging,
    });
  }

  /** The current rate, requests per second. */
  get rate(): number {
    return this.#controller.rate;
  }

  /** The last change of the rate — `{ rate, previous, reason, at, epoch }` — or `undefined` before the first. */
  get lastChange(): RateChange | undefined {
    return this.#controller.lastChange;
  }

  /** The controller (read-only use: its state, epoch and in-flight count). */
  get controller(): AdaptiveController {
    return this.#controller;
  }

  /** How many callers are waiting. */
  get queued(): number {
    return this.#inner.queued;
  }

  /** Resolves when a permit is granted at the current rate (see {@link Limiter.acquire}). */
  acquire(permits: number = 1, options?: AcquireOptions): Promise<void> {
    return this.#inner.acquire(permits, options);
  }

  /** Takes permits only if free now; else the wait in ms (see {@link Limiter.tryAcquire}). */
  tryAcquire(permits: number = 1): number {
    return this.#inner.tryAcquire(permits);
  }

  /** Waits like `acquire` and returns a handle whose `cancel()` gives the permits back (see `Limiter.reserve`). */
  reserve(permits: Permits = 1, options?: ReserveOptions): Promise<Reservation> {
    return this.#inner.reserve(permits, options);
  }

  /** Runs `task` once permits are granted (see {@link Limiter.schedule}). */
  schedule<T>(task: () => T | PromiseLike<T>, options?: ScheduleOptions): Promise<T> {
    return this.#inner.schedule(task, options);
  }

  /** Grants nothing for `ms`; callers resume spaced at the learned rate. */
  pause(ms: number): void {
    this.#inner.pause(ms);
    this.#controller.onPause(this.#clock.now() + ms);
  }

  /** True while a pause (the server's delay, a used-up quota) holds every caller back. */
  get paused(): boolean {
    return this.#clock.now() < this.#controller.pausedUntil;
  }

  /**
   * True when forgetting this limiter (a `KeyedLimiter` evicting an idle key) cannot send faster
   * than the server allows: nothing waits or is paused, no request is in flight (its answer must
   * reach the learned state), and the learned rate is at least where a fresh limiter starts. A key
   * whose rate the server cut below that start is kept (a fresh one would overload it again) — but
   * not forever: once unused for {@link FORGET_CUT_AFTER_STEPS} probe steps (at least
   * {@link FORGET_CUT_AFTER_MS}), the cut is old news and the key may go, else every host that ever
   * refused a request would stay in memory for good. One that learned a higher rate may be
   * forgotten at once, at the cost of slow start next time.
   */
  isIdle(): boolean {
    const c = this.#controller;
    if (c.inFlight !== 0 || !this.#inner.isIdle()) return false;
    return c.rate >= c.initialRate ||
      this.#clock.now() - this.#lastUsed >= Math.max(FORGET_CUT_AFTER_MS, FORGET_CUT_AFTER_STEPS * c.step);
  }

  /**
   * A snapshot of its counters (see README "Stats and events"); `rate` is the learned rate, per 1000 ms.
   * @example
   * ```ts
   * limiter.stats().rate; // { limit: 8, interval: 1000 }
   * ```
   */
  stats(): LimiterStats {
    return this.#inner.stats();
  }

  /**
   * Its events; each change of the learned rate fires `ratechange` with the controller's reason
   * (`"slow-start"`, `"throttled"`, …) as `detail.reason`.
   * @example
   * ```ts
   * limiter.events.addEventListener("ratechange", (e) => console.log((e as CustomEvent).detail.reason));
   * ```
   */
  get events(): LimiterEvents {
    return this.#inner.events;
  }

  /**
   * Changes the told limit: from now on the ceiling, and the rate (queued callers are re-timed).
   * `interval` defaults to 1000 ms.
   * @throws {RangeError | TypeError} when an option is invalid, naming it and its value.
   * @example
   * ```ts
   * limiter.setLimit({ limit: 600, interval: 60_000 }); // told 10 per second
   * ```
   */
  setLimit(options: { limit: number; interval?: number }): void {
    const o = optionsObject("options", options);
    onlyKnown("setLimit()", o, ["limit", "interval"]);
    if (typeof o.limit !== "number") throw new TypeError(`\`limit\` must be a number, got ${describeValue(o.limit)}`);
    if (!(o.limit > 0 && Number.isFinite(o.limit))) throw new RangeError(`\`limit\` must be a positive finite number, got ${describeValue(o.limit)}`);
    const interval = o.interval ?? 1000;
    if (typeof interval !== "number") throw new TypeError(`\`interval\` must be a number, got ${describeValue(interval)}`);
    if (!(interval >= 0.001 && Number.isFinite(interval))) {
      throw new RangeError(`\`interval\` must be a finite number of ms, at least 0.001 (1 µs), got ${describeValue(interval)}`);
    }
    this.#apply({ change: this.#controller.setMaxRate((o.limit * 1000) / interval, this.#clock.now()), pauseMs: 0 });
  }

  /**
   * @internal Follows the told limit (requests per second) when it changed since the last call, as
   * {@link AdaptiveLimiter.setLimit} does: the fetch passes its limiter's rate on every attempt, so
   * a `setLimit` there reaches the learned rate.
   */
  follow(told: number): void {
    if (told === this.#followed) return;
    this.#followed = told;
    this.#apply({ change: this.#controller.setMaxRate(told, this.#clock.now()), pauseMs: 0 });
  }

  /**
   * Call when a granted request is sent; pass the tag back to {@link AdaptiveLimiter.onResponse}.
   * `waited`: whether its caller had to wait for the rate (only then may the rate grow).
   */
  onSent(waited: boolean): SendTag {
    return this.#controller.onSent(this.#lastUsed = this.#clock.now(), waited);
  }

  /** Call when a request sent with `tag` got no response (a network error, an abort). */
  onAbandoned(tag: SendTag): void {
    this.#lastUsed = this.#clock.now();
    this.#controller.onAbandoned(tag);
  }

  /**
   * Call with the response to the request sent with `tag`: reads its status and headers, applies
   * the rate change (re-timing queued callers) and the pause the server asked for. Returns the advice.
   *
   * `maxDelay` (ms, default `DEFAULTS.retry.maxRetryAfter`, 60 s): a server delay or quota reset
   * longer than this pauses nobody and says nothing about the server's window, as a throttled
   * fetch's `maxRetryAfter` (the caller gets the response instead; a hostile `Retry-After` cannot
   * stall the key). The answer still counts as a throttle.
   */
  onResponse(tag: SendTag, response: { readonly status: number; readonly headers: HeadersLike }, options?: { readonly maxDelay?: number }): Advice {
    const now = this.#wallClock();
    const maxDelay = options?.maxDelay ?? HTTP_DEFAULTS.retry.maxRetryAfter;
    const signals = readServerSignals(response, { now, lenient: true, rateLimitHeaders: false });
    const read = parseRateLimit(response.headers, { now });
    const rateLimit = read?.resetMs !== undefined && read.resetMs > maxDelay ? { ...read, resetMs: undefined } : read;
    const outcome: ResponseOutcome = {
      throttled: signals.throttled,
      failed: !signals.throttled && response.status >= 500 && response.status !== 503,
      overloaded: !signals.throttled && response.status === 503,
      delayMs: signals.delay !== undefined && signals.delay.ms <= maxDelay ? signals.delay.ms : undefined,
      maxPauseMs: maxDelay,
      rateLimit,
      // A policy stated without a RateLimit field (or one that names no limit) still states the rate.
      policy: rateLimit?.limit === undefined ? parseRateLimitPolicy(response.headers) : undefined,
    };
    return this.onOutcome(tag, outcome);
  }

  /** {@link AdaptiveLimiter.onResponse} for an outcome already read. */
  onOutcome(tag: SendTag, outcome: ResponseOutcome): Advice {
    const advice = this.#controller.onResponse(tag, outcome, this.#lastUsed = this.#clock.now());
    this.#apply(advice);
    return advice;
  }

  #apply(advice: Advice): void {
    const change = advice.change;
    if (change !== undefined) {
      // Its `ratechange` event says why the controller moved (not "setLimit").
      withRateReason(change.reason, () => this.#inner.setLimit({ limit: change.rate, interval: 1000 }));
    }
    if (advice.pauseMs > 0) this.pause(advice.pauseMs);
    if (advice.change !== undefined) this.#onChange?.(advice.change);
  }
}

/**
 * The feedback loop around one request: waits for the rate, sends, and feeds the answer back to
 * the limiter. Retries must come through here again (each attempt is a request the server counts).
 *
 * @example
 * ```ts
 * const response = await sendAdaptive(limiter, () => fetch(url), { signal });
 * ```
 */
export async function sendAdaptive<R extends { readonly status: number; readonly headers: HeadersLike }>(
  limiter: AdaptiveLimiter,
  send: () => Promise<R>,
  options?: AcquireOptions,
): Promise<R> {
  options?.signal?.throwIfAborted();
  // Demand exceeds the rate when this caller finds others queued or must wait itself; otherwise
  // `tryAcquire` has just taken its permit.
  const waited = limiter.queued > 0 || limiter.tryAcquire(1) > 0;
  if (waited) await limiter.acquire(1, options);
  const tag = limiter.onSent(waited);
  let response: R;
  try {
    response = await send();
  } catch (error) {
    limiter.onAbandoned(tag);
    throw error;
  }
  limiter.onResponse(tag, response);
  return response;
}
