/**
 * Multi-channel composition: a request passes only when ALL given limiters grant it, taken
 * atomically. The combination is a limiter of its own whose policies are the union of its members'
 * (flattened, so combinations nest); its gate is merged with theirs, so one domain, one timer and one
 * arrival order cover the overall limit and every channel that includes it.
 *
 * Atomic by construction: policies are only asked `earliest` while a request waits, and `take` runs
 * on all of them at the same instant — nothing is charged while another member makes the request
 * wait, and nothing is charged twice. The same limiter (an overall limit) can appear in many
 * combinations; a request that waits for its own channel's limit reserves the moment it will be due
 * (see `gate.ts`): other channels keep using the overall limit as long as that leaves it room then,
 * so they do not wait behind it, and callers looping on its members cannot starve it.
 *
 * The combination joins its members' domain under the gate of the larger domain, so combinations
 * made and dropped per key (`KeyedLimiter` of `combine(overall, perKey)`) leave no gate behind.
 *
 * @module
 */
import { type BaseLimiterOptions, GatedLimiter, INTERNALS } from "./limiter.ts";
import type { Policy } from "./policy.ts";
import { describeValue, optionsObject } from "../validate.ts";

/**
 * Options of a {@link CombinedLimiter}. The clock is the members' (they must share one).
 *
 * @example
 * ```ts
 * new CombinedLimiter([overall, perChannel], { maxQueue: 1000 });
 * ```
 */
export type CombinedLimiterOptions = Omit<BaseLimiterOptions, "clock">;

function checkMembers(limiters: readonly unknown[]): GatedLimiter[] {
  if (!Array.isArray(limiters) || limiters.length === 0) {
    throw new RangeError(`\`limiters\` must list at least one limiter, got ${describeValue(limiters)}`);
  }
  return limiters.map((limiter, i) => {
    if (!(limiter instanceof GatedLimiter)) {
      throw new TypeError(
        `\`limiters[${i}]\` must be a sluice limiter (SmoothLimiter, WindowLimiter, …), got ${describeValue(limiter)}`,
      );
    }
    return limiter;
  });
}

/**
 * A limiter that grants a request only when every member grants it, atomically. Prefer the
 * {@link combine} function; use the class to pass options such as `maxQueue`.
 *
 * @example
 * ```ts
 * import { CombinedLimiter, WindowLimiter } from "sluice";
 * const overall = new WindowLimiter({ limit: 2, interval: 1000 });
 * const search = new CombinedLimiter([overall, new WindowLimiter({ limit: 1, interval: 1000 })], { maxQueue: 100 });
 * ```
 */
export class CombinedLimiter extends GatedLimiter {
  /** The limiters this combination was made of. */
  readonly members: readonly GatedLimiter[];

  /**
   * Combines `limiters` into one limiter whose requests count against all of them at once.
   * @param limiters the members (at least one), sharing one clock
   * @throws {RangeError | TypeError} when `limiters` or an option is invalid
   */
  constructor(limiters: readonly GatedLimiter[], options?: CombinedLimiterOptions) {
    const members = checkMembers(limiters);
    const o = optionsObject("options", options);
    const policies = [...new Set<Policy>(members.flatMap((m) => m[INTERNALS].policies))];
    const clock = members[0]![INTERNALS].clock;
    super(policies, { ...o, clock });
    // Into the members' domain (the larger one on a tie), so a combination made and dropped per key
    // leaves no gate behind.
    let gate = members[0]![INTERNALS].gate();
    for (const member of members.slice(1)) gate = gate.merge(member[INTERNALS].gate());
    gate = gate.merge(this[INTERNALS].gate());
    this[INTERNALS].adopt(gate);
    this.members = members;
  }
}

/**
 * Combines limiters: the result grants a request only when ALL of them grant it, taking from all at
 * the same instant. Use it for an overall limit plus per-channel limits ("10/s overall, 2/s per
 * endpoint"), or several windows at once ("4 per second and 60 per minute").
 *
 * @example
 * ```ts
 * import { combine, WindowLimiter } from "sluice";
 *
 * const overall = new WindowLimiter({ limit: 100, interval: 60_000 });
 * const search = combine(overall, new WindowLimiter({ limit: 10, interval: 1000 }));
 * const upload = combine(overall, new WindowLimiter({ limit: 1, interval: 1000 }));
 * await search.acquire(); // counts against `overall` and the search channel, atomically
 * ```
 */
export function combine(...limiters: GatedLimiter[]): CombinedLimiter {
  return new CombinedLimiter(limiters);
}
