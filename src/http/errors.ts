/**
 * Errors of the throttled fetch. Everything else it rejects with is what `fetch` itself would
 * reject with (a network `TypeError`, the caller's `signal.reason`) or a limiter error
 * (`MaxWaitExceededError`, `QueueFullError`).
 *
 * @module
 */
import { SluiceError } from "../errors.ts";

/**
 * A throttled fetch ran out of time: one attempt got no response headers within `timeout`
 * (`scope: "attempt"`, after any retries it was allowed), or the whole call — queueing, attempts
 * and retry waits — did not finish within `totalTimeout` (`scope: "total"`).
 *
 * Its `name` is `"TimeoutError"`, like the `DOMException` that `fetch` rejects with when an
 * `AbortSignal.timeout()` signal fires, so `error.name === "TimeoutError"` catches both. A caller's
 * own signal still rejects with its own reason, unchanged. The message names the method and the URL
 * without credentials, query or fragment.
 *
 * @example
 * ```ts
 * import { createThrottledFetch, SmoothLimiter, TimeoutError } from "sluice";
 * const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 5 }), timeout: 2000 });
 * try { await api("https://example.com/slow"); }
 * catch (e) { if (e instanceof TimeoutError) console.log(e.scope, e.timeout, e.attempts); }
 * ```
 */
export class TimeoutError extends SluiceError {
  /** Always "TimeoutError", like the DOMException of `AbortSignal.timeout()`. */
  override name = "TimeoutError" as const;
  /** Which bound was exceeded: one attempt's `timeout` or the call's `totalTimeout`. */
  readonly scope: "attempt" | "total";
  /** The bound that was exceeded, in ms. */
  readonly timeout: number;
  /** Attempts started (sent to the server) before the call gave up. */
  readonly attempts: number;

  /** Creates the error for a per-attempt or total timeout. */
  constructor(
    request: string,
    scope: "attempt" | "total",
    timeout: number,
    attempts: number,
    options?: ErrorOptions,
  ) {
    const what = scope === "attempt"
      ? `no response headers within the timeout of ${timeout} ms (attempt ${attempts})`
      : `not completed within the total timeout of ${timeout} ms (${attempts} attempt${attempts === 1 ? "" : "s"} sent)`;
    super(`${request}: ${what}`, options);
    this.scope = scope;
    this.timeout = timeout;
    this.attempts = attempts;
  }
}
