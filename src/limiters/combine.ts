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
 * Named members (`combine({ requests: rpm, tokens: tpm })`) are *dimensions*: `acquire(n)` still
 * takes n of each, but `reserve({ requests: 1, tokens: 1500 })` asks each its own amount (see
 * `reservation.ts`). Dimensions must not share a limiter, so each policy has one amount.
 *
 * @module
 */
import { type BaseLimiterOptions, GatedLimiter, INTERNALS } from "./limiter.ts";
import type { Policy } from "./policy.ts";
import type { Dimensions } from "./reservation.ts";
import { describeValue, keysOf, onlyKnown, optionsObject } from "../validate.ts";

/**
 * Options of a {@link CombinedLimiter}. The clock is the members' (they must share one).
 *
 * @example
 * ```ts
 * new CombinedLimiter([overall, perChannel], { maxQueue: 1000 });
 * ```
 */
export type CombinedLimiterOptions = Omit<BaseLimiterOptions, "clock">;

/**
 * Named members of a combination: each is a *dimension* that a reservation can ask its own amount of.
 *
 * @example
 * ```ts
 * const members: NamedLimiters = { requests: rpm, tokens: tpm };
 * ```
 */
export type NamedLimiters = Readonly<Record<string, GatedLimiter>>;

function checkMembers(limiters: readonly unknown[] | NamedLimiters): [GatedLimiter[], string[] | null] {
  const named = typeof limiters === "object" && limiters !== null && !Array.isArray(limiters) &&
    Object.getPrototypeOf(limiters) === Object.prototype;
  const list: unknown[] = named ? Object.values(limiters) : limiters as unknown[];
  const names = named ? Object.keys(limiters) : null;
  if (!Array.isArray(list) || list.length === 0) {
    throw new RangeError(`\`limiters\` must list at least one limiter, got ${describeValue(limiters)}`);
  }
  const members = list.map((limiter, i) => {
    if (!(limiter instanceof GatedLimiter)) {
      const at = names === null ? `[${i}]` : `.${names[i]}`;
      // A limiter of another copy of sluice (one loaded by `import`, one by `require`, or two
      // versions) has every method but is not an instance of this copy's class: say so.
      const foreign = typeof (limiter as { reserve?: unknown } | null)?.reserve === "function" &&
        typeof (limiter as { tryAcquire?: unknown }).tryAcquire === "function";
      throw new TypeError(
        `\`limiters${at}\` must be a sluice limiter (SmoothLimiter, WindowLimiter, …), got ${describeValue(limiter)}` +
          (foreign ? " from another copy of sluice (ESM and CommonJS, or two versions): create every limiter through one module system" : ""),
      );
    }
    return limiter;
  });
  return [members, names];
}

/** Per policy, the index of the dimension (named member) it belongs to; dimensions must not overlap. */
function dimensionsOf(members: readonly GatedLimiter[], names: readonly string[], policies: readonly Policy[]): Dimensions {
  const owner = new Map<Policy, number>();
  members.forEach((member, d) => {
    for (const policy of member[INTERNALS].policies) {
      const other = owner.get(policy);
      if (other !== undefined && other !== d) {
        throw new TypeError(
          `\`limiters.${names[d]}\` shares a limiter with \`limiters.${names[other]}\`: each dimension needs limiters of its own`,
        );
      }
      owner.set(policy, d);
    }
  });
  return { names, of: policies.map((p) => owner.get(p)!) };
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
  readonly #dimensions: Dimensions | null;

  /**
   * Combines `limiters` into one limiter whose requests count against all of them at once.
   * @param limiters the members (at least one), sharing one clock: a list, or named dimensions
   * @throws {RangeError | TypeError} when `limiters` or an option is invalid
   */
  constructor(limiters: readonly GatedLimiter[] | NamedLimiters, options?: CombinedLimiterOptions) {
    const [members, names] = checkMembers(limiters);
    const o = optionsObject("options", options);
    onlyKnown("CombinedLimiter", o, keysOf<CombinedLimiterOptions>()("maxQueue", "maxWait", "priorityAging"));
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
    this.#dimensions = names === null ? null : dimensionsOf(members, names, policies);
  }

  /** The names of its dimensions (named members), or null for a positional combination. */
  get dimensionNames(): readonly string[] | null {
    return this.#dimensions?.names ?? null;
  }

  /** @internal its named dimensions, for `reserve`. */
  protected override dimensions(): Dimensions | null {
    return this.#dimensions;
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
export function combine(...limiters: GatedLimiter[]): CombinedLimiter;
/**
 * Combines named limiters — *dimensions* — that a reservation asks, and settles, one by one
 * (`acquire(n)` still takes n of each). Dimensions must not share a limiter.
 *
 * @example
 * ```ts
 * import { combine, SmoothLimiter } from "sluice";
 *
 * const llm = combine({
 *   requests: new SmoothLimiter({ limit: 500, interval: 60_000 }),
 *   tokens: new SmoothLimiter({ limit: 30_000, interval: 60_000 }),
 * });
 * const r = await llm.reserve({ requests: 1, tokens: 1500 }); // both at once, or neither
 * r.settle({ tokens: 900 }); // 600 tokens come back
 * ```
 */
export function combine(limiters: NamedLimiters): CombinedLimiter;
export function combine(...limiters: unknown[]): CombinedLimiter {
  const first = limiters[0];
  if (limiters.length === 1 && typeof first === "object" && first !== null && Object.getPrototypeOf(first) === Object.prototype &&
    Object.keys(first).length === 0) {
    throw new RangeError("`limiters` must name at least one limiter (`combine({ requests, tokens })`), got an empty object");
  }
  // Named dimensions: a plain object holding limiters (anything else is checked as a list member,
  // so a look-alike limiter passed by mistake is named as `limiters[0]`).
  if (limiters.length === 1 && typeof first === "object" && first !== null &&
    Object.getPrototypeOf(first) === Object.prototype && Object.values(first).some((v) => v instanceof GatedLimiter)) {
    return new CombinedLimiter(first as NamedLimiters);
  }
  return new CombinedLimiter(limiters as GatedLimiter[]);
}
