/**
 * A policy is one rate-limiting algorithm as a small synchronous state machine. It never waits and
 * never reads a clock: the caller passes `now`, so a policy is exact and testable with tables of
 * steps. All waiting lives in the gate (`gate.ts`), shared by every policy.
 *
 * Contract, for any state and any `now` that never decreases between calls:
 * - `earliest(n, now)` is the earliest time ≥ `now` at which `n` permits could be granted, given the
 *   grants recorded so far (it does not change the state in a way anyone can observe);
 * - `take(n, at)` records a grant of `n` permits at `at`; it is only called with
 *   `at ≥ earliest(n, now)` and with `at` never decreasing;
 * - `pause(until)` grants nothing before `until`;
 * - `clone()` copies the state, so the gate can predict waits by simulation without touching it.
 *
 * @module
 */
export interface Policy {
  /** The largest request this policy can ever grant (`Infinity` when any size is possible). */
  readonly maxPermits: number;
  /** The earliest time ≥ `now` at which `permits` could be granted. */
  earliest(permits: number, now: number): number;
  /** Records a grant of `permits` at time `at`. */
  take(permits: number, at: number): void;
  /** Grants nothing before `until` (a server asked us to back off). */
  pause(until: number): void;
  /** True when a fresh policy created at `now` would grant nothing this one would not: safe to forget. */
  isAtRest(now: number): boolean;
  /** An independent copy of the state. */
  clone(): Policy;
  /** @internal scratch mark used by the gate's scan: the scan epoch in which a waiter holds this policy. */
  heldEpoch: number;
}
