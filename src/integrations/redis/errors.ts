/**
 * Errors of the Redis limiters. Both extend {@link SluiceError}, so `isSluiceError` recognises them.
 *
 * @module
 */
import { SluiceError } from "../../errors.ts";

/** Which script call failed. */
export type RedisOperation = "reserve" | "cancel" | "pause";

/**
 * Redis could not be reached in time (timeout, closed connection, or a transient server state such
 * as LOADING or BUSY). Under the default `failure: "closed"` policy an `acquire` rejects with it;
 * the underlying error is `cause`.
 *
 * @example
 * ```ts
 * import { RedisUnavailableError } from "sluice/redis";
 * try { await limiter.acquire(); }
 * catch (e) { if (e instanceof RedisUnavailableError) console.log("limiter store down:", e.cause); }
 * ```
 */
export class RedisUnavailableError extends SluiceError {
  /** Always "RedisUnavailableError". */
  override name = "RedisUnavailableError" as const;
  /** The script call that failed. */
  readonly operation: RedisOperation;

  /**
   * Creates the error for a failed script call.
   * @param operation the script call that failed
   * @param message what happened (never a credential)
   */
  constructor(operation: RedisOperation, message: string, options?: ErrorOptions) {
    super(`Redis unavailable during ${operation}: ${message}`, options);
    this.operation = operation;
  }
}

/**
 * Redis answered with an error that means misconfiguration (`WRONGTYPE`, `CROSSSLOT`, a script
 * error, an unknown command…). Never hidden by `failure: "open"`: a misconfigured limiter must not
 * silently allow everything. The server's error is `cause`.
 *
 * @example
 * ```ts
 * import { RedisCommandError } from "sluice/redis";
 * limiter.acquire().catch((e) => { if (e instanceof RedisCommandError) alertOps(e.message); });
 * ```
 */
export class RedisCommandError extends SluiceError {
  /** Always "RedisCommandError". */
  override name = "RedisCommandError" as const;
  /** The script call that failed. */
  readonly operation: RedisOperation;

  /**
   * Creates the error for a failed script call.
   * @param operation the script call that failed
   * @param message what happened (never a credential)
   */
  constructor(operation: RedisOperation, message: string, options?: ErrorOptions) {
    super(`Redis rejected ${operation}: ${message}`, options);
    this.operation = operation;
  }
}
