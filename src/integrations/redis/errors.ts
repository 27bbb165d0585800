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

/**
 * A Redis client's error as the `cause` of ours: its name, message, `code` and stack, without what a
 * client attaches beside them — ioredis puts each failed command's arguments on its errors
 * (`command.args`), and the AUTH it sends on connect carries the password there, which
 * `console.error(error)` would print. A value that is not an Error passes as it is.
 *
 * @example
 * ```ts
 * new RedisCommandError("reserve", error.message, { cause: clientCause(error) });
 * ```
 * @internal
 */
export function clientCause(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const copy = new Error(error.message);
  copy.name = error.name;
  if (error.stack !== undefined) copy.stack = error.stack;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" || typeof code === "number") (copy as Error & { code?: unknown }).code = code;
  return copy;
}
