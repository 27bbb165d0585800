/**
 * Live limit changes: `setLimit({ limit, interval })` on a built-in limiter changes its policy's
 * numbers in place and re-times the callers already queued.
 *
 * Queued callers took nothing (a reservation is a rule for others, not a take), so re-timing them is
 * one fresh scan of the domain under the new numbers: the timer is re-armed for the new earliest
 * time and every cached prediction is dropped (the scan drops the tail cache). Callers that were
 * already due under the old limit are granted first, under the limit they were due under. The
 * change shows in `stats().rate` and fires `ratechange` (reason "setLimit") before that scan.
 *
 * @module
 */
import { INTERNALS, type GatedLimiter } from "./limiter.ts";
import { amountAt } from "./scan.ts";
import { noteRate } from "./stats.ts";
import { keysOf, onlyKnown, optionsObject, positiveInteger, timeInterval } from "../validate.ts";
import type { Policy } from "./policy.ts";

/**
 * The argument of `setLimit` on every built-in limiter.
 *
 * @example
 * ```ts
 * import { SmoothLimiter } from "sluice";
 * const limiter = new SmoothLimiter({ limit: 20, interval: 1000 });
 * limiter.setLimit({ limit: 10 }); // from now on 10 per second; queued callers are re-timed
 * ```
 */
export interface SetLimitOptions {
  /** The new limit, validated as the constructor's `limit`. */
  limit: number;
  /** The new interval in ms, validated as the constructor's `interval`. @default the current interval */
  interval?: number;
}

/** A policy whose numbers can change in place. @internal */
export interface AdjustablePolicy extends Policy {
  /** Applies the new numbers at `now` (see each algorithm's `setLimit` for what happens to its state). */
  setLimit(limit: number, interval: number, now: number): void;
}

/** The reason the next `applyLimit` reports in its `ratechange` event (see {@link withRateReason}). */
let reasonOverride: string | undefined;

/**
 * Runs `change` (a `setLimit` call) so that its `ratechange` event carries `reason` instead of
 * "setLimit": how `AdaptiveLimiter` reports why its rate moved. Synchronous, so no other change interleaves.
 * @internal
 * @example
 * ```ts
 * withRateReason("throttled", () => inner.setLimit({ limit: 5 }));
 * ```
 */
export function withRateReason(reason: string, change: () => void): void {
  const outer = reasonOverride;
  reasonOverride = reason;
  try {
    change();
  } finally {
    reasonOverride = outer;
  }
}

/**
 * Applies a validated change to `policy` (a policy of `limiter`) at the gate's current time, then
 * rescans the domain so queued callers are re-timed.
 * @throws {RangeError} when a queued request asks for more permits than the new limit can ever grant
 *   (nothing changes then).
 * @internal
 */
export function applyLimit(limiter: GatedLimiter, policy: AdjustablePolicy, limit: number, interval: number, countsPermits: boolean): void {
  const gate = limiter[INTERNALS].gate();
  const now = gate.now();
  gate.serveOverdue(now);
  if (countsPermits) {
    for (const queue of gate.active) {
      const at = queue.policies.indexOf(policy);
      if (at === -1) continue;
      for (const w of queue.waiters()) { // every priority level
        // What the waiter asks of this policy: with named dimensions, its own amount, not the largest.
        const asked = amountAt(w.amounts(), at, w.permits);
        if (asked > limit) {
          throw new RangeError(`\`limit\` must be at least the largest queued request (${asked} permits), got ${limit}`);
        }
      }
    }
  }
  policy.setLimit(limit, interval, now);
  // Before the rescan: listeners hear of the new rate before the grants it allows.
  noteRate(limiter[INTERNALS].queue, { limit, interval }, reasonOverride ?? "setLimit");
  gate.scan(now);
}

/**
 * `setLimit` of a limiter whose limit is a whole number of permits per window (window, fixed window,
 * sliding counter): reads the options like the constructor does, `interval` defaulting to the
 * current one, and applies them.
 *
 * @example
 * ```ts
 * setWindowLimit(this, this.#policy, { limit: 50 });
 * ```
 */
export function setWindowLimit(
  limiter: GatedLimiter,
  policy: AdjustablePolicy & { readonly interval: number },
  options: SetLimitOptions,
): void {
  const o = optionsObject("options", options);
  onlyKnown("setLimit()", o, keysOf<SetLimitOptions>()("limit", "interval"));
  const limit = positiveInteger("limit", o.limit);
  const interval = o.interval === undefined ? policy.interval : timeInterval("interval", o.interval);
  applyLimit(limiter, policy, limit, interval, true);
}
