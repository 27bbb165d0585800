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
 *   (permits in flight are assumed to complete at `now`: a prediction is a lower bound then);
 * - `adjust(delta, grantedAt, mark, now)` settles a reservation granted at `grantedAt` (see
 *   `reservation.ts`): `delta < 0` gives back permits that were not used, as if the grant had been
 *   smaller (never more than that); `delta > 0` records the extra as debt, granted at `now`;
 * - `finish(n, at)` ends a grant that occupies the policy while its work runs (a concurrency slot).
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
  /**
   * True while held grants are in flight. A `clone(now)` then assumes they are released at `now`, so
   * predictions made from it are stale once time has moved on (see `TailCache.staleBy`).
   */
  readonly holding?: boolean;
  /** True when a scheduled task's permits count from its completion, not its start. */
  readonly countsFromCompletion?: boolean;
  /** Ends a held grant at `at`: from then on it counts as if granted at `at`. */
  release?(permits: number, at: number): void;
  /** Ends a held grant whose task never started (see `Unstarted`): it counts for nothing. */
  unhold?(permits: number): void;
  /**
   * Optional: a number describing the state right after a take (e.g. the permits taken so far),
   * stored with a reservation and passed back to {@link Policy.adjust}.
   */
  mark?(): number;
  /**
   * Optional: settles a grant made at `grantedAt` (`mark` as {@link Policy.mark} returned then):
   * `delta < 0` gives back unused permits, `delta > 0` records debt at `now`. Without it, debt is a
   * `take` at `now` and a refund gives nothing back (never more than the limit allows).
   */
  adjust?(delta: number, grantedAt: number, mark: number, now: number): void;
  /** True when a grant occupies this policy until {@link Policy.finish} (a concurrency slot). */
  readonly holdsUntilFinish?: boolean;
  /** Ends a grant of `permits` that occupied the policy while its work ran. */
  finish?(permits: number, at: number): void;
  /** Grants nothing before `until` (a server asked us to back off). */
  pause(until: number): void;
  /** True when a fresh policy created at `now` would grant nothing this one would not: safe to forget. */
  isAtRest(now: number): boolean;
  /**
   * An independent copy of the state. `asked` (default true): whether the request being predicted
   * asks this policy — a concurrency slot it does not ask is no reason for it to wait, and a copy
   * that freed the slot's work at once would let the callers queued for that slot take, ahead of
   * it, capacity they may never reach in time (see `ConcurrencyPolicy.clone`).
   */
  clone(now: number, asked?: boolean): Policy;
  /** @internal scratch mark used by the gate's scan: the scan epoch in which a waiter holds this policy. */
  heldEpoch: number;
}
