/**
 * The adaptive controller's vocabulary: why a rate changed, a change, a send's tag, what a response
 * said, and the controller's answer. Shared by the controller, the limiter and the fetch wirings.
 *
 * @module
 */
import type { RateLimitInfo } from "../http/headers.ts";

/** Why the rate last changed. */
export type RateChangeReason =
  /** Nothing known yet: doubled while callers waited and no throttle came. */
  | "slow-start"
  /** After the cut that ended slow start (or after a limit drop): stepping up +10 % a step to find the limit. */
  | "search"
  /** Climbing back toward the last rate known to work, after a cut. */
  | "recover"
  /** Past the last rate known to work, looking for more (a raised limit). */
  | "probe"
  /** The one cut of an overload event (a throttle of a request sent in the current epoch). */
  | "throttled"
  /** The server stated its limit in headers. */
  | "server-limit"
  /** The told limit (`maxRate`) changed. */
  | "set-limit";

/**
 * One change of the rate.
 *
 * @example
 * ```ts
 * const change: RateChange = { rate: 9, previous: 16, reason: "throttled", at: 4200, epoch: 1 };
 * ```
 */
export interface RateChange {
  /** The new rate, requests per second. */
  readonly rate: number;
  /** The rate before. */
  readonly previous: number;
  /** Why it changed. */
  readonly reason: RateChangeReason;
  /** When, on the controller's clock (ms). */
  readonly at: number;
  /** The epoch after the change (a cut starts a new one). */
  readonly epoch: number;
}

/**
 * What the controller remembers about one request it was told was sent.
 *
 * @example
 * ```ts
 * const tag = controller.onSent(now, true); // { epoch: 0, gen: 3, at: now, seq: 41 }
 * ```
 */
export interface SendTag {
  /** The overload epoch at the send: a throttle of an older epoch never cuts again. */
  readonly epoch: number;
  /** The rate generation at the send: only answers to requests sent at the current rate raise it. */
  readonly gen: number;
  /** The send time. */
  readonly at: number;
  /** How many requests were sent before this one (to count those a header snapshot did not see). */
  readonly seq: number;
}

/**
 * What one response said, as far as the rate is concerned (read it with `readServerSignals` and
 * `parseRateLimit`, or let `AdaptiveLimiter.onResponse` do it).
 *
 * @example
 * ```ts
 * const outcome: ResponseOutcome = { throttled: true, delayMs: 2000 };
 * ```
 */
export interface ResponseOutcome {
  /** 429, or 503 with a delay: the server refused the request to slow us down. */
  readonly throttled: boolean;
  /**
   * A server error that is no throttle (a 5xx without a delay): the server is failing, not pacing
   * us. Neither accepted nor refused: it never raises the rate, and many of them hold it.
   */
  readonly failed?: boolean;
  /**
   * A bare 503 (no delay): an overloaded server — or an nginx `limit_req` at its default status —
   * when other answers still succeed; the same as an outage when none does. It cuts like a throttle,
   * but only after a request sent since the last cut was accepted (so an outage cuts once at most).
   */
  readonly overloaded?: boolean;
  /** The delay the server asked for, in ms. */
  readonly delayMs?: number | undefined;
  /**
   * The longest pause the caller accepts (the fetch's `maxRetryAfter`), ms: a refusal run's own
   * waits stay within it, as a server's longer delay would pause nobody. @default 2 minutes
   */
  readonly maxPauseMs?: number | undefined;
  /** The RateLimit / X-RateLimit state it reported. */
  readonly rateLimit?: RateLimitInfo | undefined;
  /**
   * A quota policy it stated without a remaining quota (`RateLimit-Policy` alone): `limit` units
   * per `windowMs`, and the draft-10 quota unit when stated.
   */
  readonly policy?: { readonly limit: number; readonly windowMs: number; readonly quotaUnit?: string } | undefined;
}

/**
 * The controller's answer to one response.
 *
 * @example
 * ```ts
 * const { change, pauseMs } = controller.onResponse(tag, { throttled: true, delayMs: 1000 }, now);
 * ```
 */
export interface Advice {
  /** The rate change to apply, if any. */
  readonly change: RateChange | undefined;
  /** Pause every caller this many ms (the server's delay, or until a used-up quota resets); 0 for none. */
  readonly pauseMs: number;
}
