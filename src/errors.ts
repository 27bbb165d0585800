/**
 * Errors for failed operations. Bad arguments throw the built-in `TypeError`/`RangeError`; these
 * classes describe an operation that could not be done, with structured fields to act on.
 *
 * @module
 */

const BRAND = Symbol.for("sluice.error");

/**
 * Base class of every error sluice raises for a failed operation. Use {@link isSluiceError} rather
 * than `instanceof` when errors may cross realms or duplicate package copies.
 *
 * @example
 * ```ts
 * import { isSluiceError } from "sluice";
 * try { await work(); } catch (e) { if (isSluiceError(e)) console.log(e.name); }
 * ```
 */
export class SluiceError extends Error {
  /** The error's class name; each subclass sets its own literal. */
  override name = "SluiceError";
  /** @internal brand for cross-realm checks */
  readonly [BRAND] = true;
}

/**
 * True when `error` was raised by sluice (works across realms and duplicated installs).
 *
 * @example
 * ```ts
 * import { isSluiceError } from "sluice";
 * isSluiceError(new Error("x")); // false
 * ```
 */
export function isSluiceError(error: unknown): error is SluiceError {
  return typeof error === "object" && error !== null && (error as Record<symbol, unknown>)[BRAND] === true;
}

/**
 * The limiter predicts a wait longer than the caller's `maxWait`. Decided up front, without waiting
 * and without taking anything; `retryAfter` says how long the wait would have been.
 *
 * @example
 * ```ts
 * import { MaxWaitExceededError, SmoothLimiter } from "sluice";
 * const limiter = new SmoothLimiter({ limit: 1, interval: 60_000 });
 * await limiter.acquire();
 * try { await limiter.acquire(1, { maxWait: 1000 }); }
 * catch (e) { if (e instanceof MaxWaitExceededError) console.log(`try again in ${e.retryAfter} ms`); }
 * ```
 */
export class MaxWaitExceededError extends SluiceError {
  /** Always `"MaxWaitExceededError"`. */
  override name = "MaxWaitExceededError" as const;
  /** The predicted wait in ms: when the request could have been granted. */
  readonly retryAfter: number;
  /** The caller's limit that the wait exceeded, in ms. */
  readonly maxWait: number;

  /**
   * Creates the error; the limiter raises it, user code rarely needs to.
   * @param retryAfter the predicted wait in ms
   * @param maxWait the caller's limit in ms
   * @param options standard error options (`cause`)
   */
  constructor(retryAfter: number, maxWait: number, options?: ErrorOptions) {
    super(`predicted wait of ${Math.ceil(retryAfter)} ms exceeds maxWait of ${maxWait} ms`, options);
    this.retryAfter = retryAfter;
    this.maxWait = maxWait;
  }
}

/**
 * The limiter's queue already holds `maxQueue` waiters; nothing was taken.
 *
 * @example
 * ```ts
 * import { QueueFullError, SmoothLimiter } from "sluice";
 * const limiter = new SmoothLimiter({ limit: 1, maxQueue: 100 });
 * limiter.acquire().catch((e) => { if (e instanceof QueueFullError) console.log("shed load"); });
 * ```
 */
export class QueueFullError extends SluiceError {
  /** Always `"QueueFullError"`. */
  override name = "QueueFullError" as const;
  /** The queue bound that was reached. */
  readonly maxQueue: number;

  /**
   * Creates the error; the limiter raises it, user code rarely needs to.
   * @param maxQueue the queue bound that was reached
   * @param options standard error options (`cause`), and `option`: the name of the bound, for the
   *   message (`"maxQueue"`; a Redis key's `"maxPending"`)
   */
  constructor(maxQueue: number, options?: ErrorOptions & { readonly option?: string }) {
    super(`limiter queue is full (${options?.option ?? "maxQueue"} ${maxQueue})`, options);
    this.maxQueue = maxQueue;
  }
}
