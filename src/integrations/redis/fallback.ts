/**
 * What a Redis limiter does for a request while Redis is unavailable: the failure policy, applied to
 * one `acquire` or one `tryAcquireAsync`.
 *
 * @module
 */
import { abortReason } from "../../limiters/gate.ts";
import type { Limiter } from "../../limiters/limiter.ts";
import type { Permits } from "../../limiters/reservation.ts";
import { RedisUnavailableError } from "./errors.ts";
import type { FailurePolicy } from "./store.ts";
import { RESOLVED } from "./waiter.ts";

/**
 * The failure policy for one acquire: `open` grants, `closed` rejects with `error`, a fallback
 * limiter (`fallback()`, built on first use) decides otherwise. @internal
 *
 * @example
 * ```ts
 * await acquireUnavailable("open", () => undefined, 1, Infinity, undefined, error); // resolves at once
 * ```
 */
export function acquireUnavailable(
  failure: FailurePolicy,
  fallback: () => Limiter | undefined,
  permits: number,
  maxWait: number,
  signal: AbortSignal | undefined,
  error: RedisUnavailableError,
  asked: Permits = permits,
): Promise<void> {
  if (failure === "open") return RESOLVED;
  if (failure === "closed") return Promise.reject(error);
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  try {
    const options = maxWait === Infinity ? { signal } : { signal, maxWait };
    const limiter = fallback()!;
    // Per dimension: a fallback that reserves (the local one of a named combination: a named in-process
    // combination) takes the same record and keeps it as reserved — the handle is settled in Redis or
    // not at all. Another fallback acquires the largest amount.
    const granted = typeof asked !== "number" && limiter.reserve !== undefined
      ? limiter.reserve(asked, options).then((r) => void r.release())
      : limiter.acquire(permits, options);
    return granted.catch((fallbackError: unknown) => Promise.reject(overShare(fallbackError, error)));
  } catch (fallbackError) {
    return Promise.reject(overShare(fallbackError, error));
  }
}

/**
 * The outcome of a request larger than the local share can ever grant (the fleet could — the
 * limiter already checked the caller's input against its full limit): a `RedisUnavailableError`
 * saying so, caused by the fallback's RangeError, rather than that RangeError, which would blame the
 * caller's input. Other errors (abort, MaxWaitExceededError) pass as they are.
 */
function overShare(fallbackError: unknown, error: RedisUnavailableError): unknown {
  if (!(fallbackError instanceof RangeError)) return fallbackError;
  return new RedisUnavailableError(
    error.operation,
    "the request exceeds what the local share can grant during an outage (failure: { local })",
    { cause: fallbackError },
  );
}

/**
 * The failure policy for one try: `open` answers 0 (taken), `closed` throws `error`, a fallback
 * limiter answers with its own `tryAcquire`. @internal
 *
 * @example
 * ```ts
 * tryUnavailable("open", () => undefined, 1, error); // 0
 * ```
 */
export function tryUnavailable(
  failure: FailurePolicy,
  fallback: () => Limiter | undefined,
  permits: number,
  error: RedisUnavailableError,
): number {
  if (failure === "open") return 0;
  if (failure === "closed") throw error;
  try {
    return fallback()!.tryAcquire(permits);
  } catch (fallbackError) {
    throw overShare(fallbackError, error);
  }
}
