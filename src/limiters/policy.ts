/**
 * A policy is one rate-limiting algorithm as a small synchronous state machine. It never waits and
 * never reads a clock: the caller passes `now`, so a policy is exact and testable with tables of
 * steps. All waiting lives in the gate (`gate.ts`), shared by every policy.
 *
 * Contract, for any state and any `now` that never decreases between calls:
 * - `earliest(n, now)` is the earliest time ≥ `now` at which `n` permits could be granted, given the
 *   grants recorded so far (it does not change the state in a way anyone can observe);
 * - `take(n, at, hold)` records a grant of `n` permits at `at`; it is only called with
 *   `at ≥ earliest(n, now)` and with `at` never decreasing. With `hold`, a policy that counts from the
 *   moment work starts or ends (`holdsUntilRelease`) keeps the permits in flight until
 *   `release(n, at)`, which records them at `at`;
 * - `pause(until)` grants nothing before `until`;
 * - `clone(now)` copies the state, so the gate can predict waits by simulation without touching it
 *   (permits in flight are assumed to complete at `now`: a prediction is a lower bound then).
 *
 * @module
 */
export interface Policy {
  /** The largest request this policy can ever grant (`Infinity` when any size is possible). */
  readonly maxPermits: number;
  /** The earliest time ≥ `now` at which `permits` could be granted. */
  earliest(permits: number, now: number): number;
  /**
   * Optional: `earliest(permits, now)` as it would be after `take(taken, now)`, without changing the
   * state — a shortcut for the gate, which otherwise asks a `clone`.
   */
  earliestAfter?(taken: number, permits: number, now: number): number;
  /** Records a grant of `permits` at time `at` (`hold`: in flight until released, if supported). */
  take(permits: number, at: number, hold?: boolean): void;
  /** True when held grants count from their `release` (a strict window: from the task's start or end). */
  readonly holdsUntilRelease?: boolean;
  /** True when a scheduled task's permits count from its completion, not its start. */
  readonly countsFromCompletion?: boolean;
  /** Ends a held grant at `at`: from then on it counts as if granted at `at`. */
  release?(permits: number, at: number): void;
  /** Grants nothing before `until` (a server asked us to back off). */
  pause(until: number): void;
  /** True when a fresh policy created at `now` would grant nothing this one would not: safe to forget. */
  isAtRest(now: number): boolean;
  /** An independent copy of the state. */
  clone(now: number): Policy;
  /** @internal scratch mark used by the gate's scan: the scan epoch in which a waiter holds this policy. */
  heldEpoch: number;
}
