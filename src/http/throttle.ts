/**
 * What a response says about the shared rate: "slow down" (throttled), "you have used it all"
 * (quota exhausted), or nothing. Pure: the time comes in as `now` (epoch ms).
 *
 * One caller's 429 is everyone's news: callers of a throttled fetch share one limiter (per key), so
 * the loop pauses that limiter for the delay read here and every caller waits, keeping its place.
 * When a response reports `remaining: 0` with a reset time — or a remaining quota that the client's
 * other requests still in flight will use up — the limiter pauses until the reset *before* any
 * request is rejected. Delays longer than `maxRetryAfter` pause nobody: the server's
 * response goes back to the caller instead of the whole client stalling for hours.
 *
 * What pauses is the attempt's limiter — or, with `retry.pauseDimensions`, only those named members
 * of it ({@link pauseLimiter}): a combination of a resource's budget and slots shared with other
 * resources pauses the budget, and the other resources keep their slots.
 *
 * Two loops apply these decisions, the same way: the throttled fetch (`throttled-fetch.ts`) and the
 * undici interceptor (`integrations/undici/`), which reads undici's raw headers through a
 * `HeadersLike` view.
 *
 * @module
 */
import { type HeadersLike, parseRateLimit, type RateLimitSource, serverDelay, type ServerDelaySource } from "./headers.ts";
import { backoffStep, type RetryPolicy } from "./retry.ts";

/** The server signals read from one response. */
export interface ServerSignals {
  /** The delay the server asked for (any status, see `serverDelay`), in ms, and where it came from. */
  readonly delay: { readonly ms: number; readonly source: ServerDelaySource } | undefined;
  /** 429, or 503 with a delay: the server refused the request to slow us down. */
  readonly throttled: boolean;
  /**
   * Not throttled, but the RateLimit / X-RateLimit headers report 0 remaining (or no more than the
   * other requests in flight) and when the quota resets (ms from now).
   */
  readonly exhausted: { readonly resetMs: number; readonly source: RateLimitSource } | undefined;
}

/** Options of {@link readServerSignals}. */
export interface ServerSignalOptions {
  /** The current time, epoch ms (HTTP-dates and epoch resets are measured against the `Date` header when present). */
  readonly now: number;
  /** Accept decimal Retry-After seconds. */
  readonly lenient: boolean;
  /** Read RateLimit / X-RateLimit headers for an exhausted quota. */
  readonly rateLimitHeaders: boolean;
  /**
   * The client's other requests on this limiter still in flight (see `in-flight.ts`): they may
   * consume the reported remaining quota, so remaining ≤ this counts as exhausted. @default 0
   */
  readonly inFlight?: number;
}

/**
 * Reads the delay, throttling and quota signals of a response.
 *
 * @example
 * ```ts
 * const r = new Response(null, { status: 429, headers: { "Retry-After": "2" } });
 * readServerSignals(r, { now: Date.now(), lenient: true, rateLimitHeaders: true });
 * // { delay: { ms: 2000, source: "retry-after" }, throttled: true, exhausted: undefined }
 * ```
 */
export function readServerSignals(
  response: { readonly status: number; readonly headers: HeadersLike },
  options: ServerSignalOptions,
): ServerSignals {
  // Most responses carry none of the headers read below: one pass over the names tells, instead of
  // a dozen lookups (each of which validates its name in undici's Headers).
  if (!mayCarrySignals(response.headers)) {
    return { delay: undefined, throttled: response.status === 429, exhausted: undefined };
  }
  const found = serverDelay(response, { now: options.now, lenient: options.lenient });
  const delay = found === undefined ? undefined : { ms: found.delayMs, source: found.source };
  const throttled = response.status === 429 || (response.status === 503 && delay !== undefined);
  let exhausted: ServerSignals["exhausted"];
  if (!throttled && options.rateLimitHeaders) {
    const info = parseRateLimit(response.headers, { now: options.now });
    const inFlight = options.inFlight ?? 0;
    if (info !== undefined && info.remaining <= inFlight && info.resetMs !== undefined && info.resetMs > 0) {
      exhausted = { resetMs: info.resetMs, source: info.source };
    }
  }
  return { delay, throttled, exhausted };
}

/**
 * False when `headers` (a fetch `Headers`, or any view with `keys()`) certainly has no Retry-After,
 * retry-after-ms, RateLimit or X-RateLimit field; true when it may (or cannot be listed).
 */
function mayCarrySignals(headers: HeadersLike): boolean {
  const keys = (headers as { keys?: () => Iterable<string> }).keys;
  if (typeof keys !== "function") return true;
  for (const name of keys.call(headers)) {
    const lower = name.toLowerCase();
    if (lower.includes("rate") || lower.startsWith("retry-after")) return true;
  }
  return false;
}

/** How long to pause the shared limiter after a response, and why. */
export interface PauseDecision {
  /** ms to pause (> 0), or 0 for no pause. */
  readonly ms: number;
  /** Why: the server throttled us, or the quota is exhausted. */
  readonly reason: "throttled" | "quota-exhausted";
  /** The delay the server asked for (or the backoff step for a throttle without one), in ms. */
  readonly requested: number;
  /** The server's delay exceeded `maxRetryAfter`, so nobody is paused. */
  readonly tooLong: boolean;
}

/**
 * The pause the shared limiter needs after a response with these signals: the server's delay on a
 * throttle (the backoff step when it gave none), the reset time on an exhausted quota; none when
 * the delay exceeds `maxRetryAfter`.
 *
 * @example
 * ```ts
 * pauseFor(signals, 1, policy); // { ms: 2000, reason: "throttled", requested: 2000, tooLong: false }
 * ```
 */
export function pauseFor(
  signals: ServerSignals,
  attempt: number,
  policy: Pick<RetryPolicy, "maxRetryAfter" | "backoff">,
): PauseDecision | undefined {
  let requested: number;
  let reason: PauseDecision["reason"];
  let fromServer = true;
  if (signals.throttled) {
    reason = "throttled";
    if (signals.delay !== undefined) requested = signals.delay.ms;
    else {
      // No delay given: pause for our own backoff step, which `maxRetryAfter` does not limit.
      requested = backoffStep(attempt, policy.backoff);
      fromServer = false;
    }
  } else if (signals.exhausted !== undefined) {
    requested = signals.exhausted.resetMs;
    reason = "quota-exhausted";
  } else {
    return undefined;
  }
  const tooLong = fromServer && requested > policy.maxRetryAfter;
  return { ms: tooLong ? 0 : requested, reason, requested, tooLong };
}

/** The part of a limiter {@link pauseLimiter} uses: `pause`, and a combination's named members. */
interface Pausable {
  pause(ms: number, reason?: string): void;
  readonly dimensionNames?: readonly string[] | null;
  readonly members?: readonly Pausable[];
  /**
   * A combination that pauses some of its dimensions itself (a Redis combination, whose own queue
   * must hold its waiters too): used instead of pausing the members one by one.
   */
  pauseDimensions?(ms: number, dimensions: readonly string[]): void;
}

/**
 * Pauses `limiter` for `ms` — only its dimensions named in `dimensions` when it is a combination
 * of named members (`combine({ requests, tokens })`) that has some of them: the other dimensions
 * keep granting to the other combinations that share them (GitHub's concurrency cap, shared by
 * every resource). Names the combination lacks are skipped; with none of them (or no
 * `dimensions`), the whole limiter pauses, so a pause is never lost.
 *
 * @example
 * ```ts
 * pauseLimiter(combine({ requests: search, concurrent }), 60_000, ["requests"]); // only `search` pauses
 * ```
 */
export function pauseLimiter(limiter: Pausable, ms: number, dimensions: readonly string[] | undefined): void {
  const names = dimensions === undefined ? null : limiter.dimensionNames ?? null;
  if (names !== null && typeof limiter.pauseDimensions === "function") {
    limiter.pauseDimensions(ms, dimensions!);
    return;
  }
  let paused = false;
  if (names !== null && limiter.members !== undefined) {
    for (let i = 0; i < names.length; i++) {
      if (dimensions!.includes(names[i]!)) {
        limiter.members[i]!.pause(ms);
        paused = true;
      }
    }
  }
  if (!paused) limiter.pause(ms);
}
