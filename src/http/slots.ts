/**
 * `maxConcurrent` for the throttled fetch and `sluice/undici`: a {@link ConcurrencyLimiter} combined
 * with the rate limiter — one grant takes a slot and counts the rate, atomically — or alone. With a
 * {@link KeyedLimiter}, each key gets its own slots (a KeyedLimiter of ConcurrencyLimiters, so idle
 * keys are evicted), combined with that key's limiter; a combination is made once per pair and
 * kept only as long as both limiters live.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { CombinedLimiter } from "../limiters/combine.ts";
import { ConcurrencyLimiter } from "../limiters/concurrency.ts";
import { KeyedLimiter } from "../limiters/keyed.ts";
import { GatedLimiter, INTERNALS, type Limiter } from "../limiters/limiter.ts";
import type { Permits } from "../limiters/reservation.ts";
import { describeValue } from "../validate.ts";

function gated(limiter: Limiter): GatedLimiter {
  if (!(limiter instanceof GatedLimiter)) {
    throw new TypeError(
      `\`maxConcurrent\` combines slots with a sluice limiter (SmoothLimiter, WindowLimiter, …), got ${describeValue(limiter)}`,
    );
  }
  return limiter;
}

/**
 * True when `limiter` holds concurrency slots of its own (a `ConcurrencyLimiter`, or a combination
 * with one, such as a vendor profile's `maxConcurrent`): a reservation on it keeps a slot until it
 * ends, so an unread body must not keep it open for ever (see `AttemptHold`). @internal
 *
 * @example
 * ```ts
 * holdsSlots(combine({ requests, concurrent: new ConcurrencyLimiter({ limit: 4 }) })); // true
 * ```
 */
export function holdsSlots(limiter: Limiter | undefined): boolean {
  return limiter instanceof GatedLimiter && limiter[INTERNALS].queue.slots;
}

/** The dimension name of the slots in the combinations made here. @internal */
export const SLOT = "maxConcurrent";

/**
 * `rate` and `slots` as named dimensions, so that a reservation asks its cost of the rate and ONE
 * slot (a plain combination would ask the cost of each, slots included): a named combination's own
 * dimensions are kept (`{ requests, tokens, maxConcurrent }`), any other limiter is `permits`.
 */
function slotted(rate: GatedLimiter, slots: GatedLimiter): CombinedLimiter {
  const combined = combination(rate, slots);
  RATE.set(combined, rate);
  return combined;
}

/** The rate limiter inside each combination made here (its told rate is the combination's). */
const RATE = new WeakMap<Limiter, Limiter>();

/**
 * The rate limiter a request goes through: the one combined with slots here (the user's `limiter`,
 * or the one `limit`/`interval` built), or `limiter` itself. `adaptive` asks it the told rate: the
 * combination states none of its own. @internal
 *
 * @example
 * ```ts
 * toldRate(rateOf(concurrencyFor(rate, 4, clock)(undefined, ""))); // rate's limit per second
 * ```
 */
export function rateOf(limiter: Limiter | undefined): Limiter | undefined {
  return limiter === undefined ? undefined : RATE.get(limiter) ?? limiter;
}

function combination(rate: GatedLimiter, slots: GatedLimiter): CombinedLimiter {
  // Callers queue on the combination, not on the user's limiter: its maxQueue, maxWait and aging
  // carry over, or `maxConcurrent` would silently lift them.
  const bounds = rate[INTERNALS].bounds;
  const names = rate instanceof CombinedLimiter ? rate.dimensionNames : null;
  if (names === null) return new CombinedLimiter({ permits: rate, [SLOT]: slots }, bounds);
  if (names.includes(SLOT)) {
    throw new TypeError(`\`maxConcurrent\` adds a dimension named "${SLOT}", which the limiter already has`);
  }
  const members: Record<string, GatedLimiter> = {};
  names.forEach((name, i) => (members[name] = (rate as CombinedLimiter).members[i]!));
  return new CombinedLimiter({ ...members, [SLOT]: slots }, bounds);
}

/**
 * What a reservation asks of a limiter made here: `cost` of the rate (a number: of each of its
 * dimensions) and one slot. @internal
 *
 * @example
 * ```ts
 * slotCost(limiter, 3); // { permits: 3, maxConcurrent: 1 }
 * ```
 */
export function slotCost(limiter: Limiter, cost: Permits): Permits {
  if (typeof cost !== "number") return { ...cost, [SLOT]: 1 };
  const out: Record<string, number> = {};
  for (const name of (limiter as CombinedLimiter).dimensionNames ?? []) out[name] = name === SLOT ? 1 : cost;
  return out;
}

/**
 * The limiter an attempt uses with `maxConcurrent: limit` (see {@link slotted}): `single` with slots
 * combined in (slots alone without it); or, with a KeyedLimiter, per key, the key's limiter (given at
 * each call) with that key's slots. @internal
 *
 * @example
 * ```ts
 * const of = concurrencyFor(rate, 4, clock);
 * of(undefined, ""); // combine({ permits: rate, maxConcurrent: new ConcurrencyLimiter({ limit: 4 }) })
 * ```
 */
export function concurrencyFor(
  single: Limiter | undefined,
  limit: number,
  clock: Clock,
  keyed?: KeyedLimiter<string>,
): (limiter: Limiter | undefined, key: string) => Limiter {
  if (single !== undefined) {
    const rate = gated(single);
    const combined = slotted(rate, new ConcurrencyLimiter({ limit, clock: rate[INTERNALS].clock }));
    return () => combined;
  }
  // A key's slots run on its limiter's clock (a combination's members share one).
  let clockOfNew = clock;
  // Forgotten as the user's keys are (their `maxKeys`, `idleTimeout` and clock), not on defaults of their own.
  const slots = new KeyedLimiter({ create: () => new ConcurrencyLimiter({ limit, clock: clockOfNew }), ...keyed?.eviction });
  const pairs = new WeakMap<GatedLimiter, WeakMap<GatedLimiter, CombinedLimiter>>();
  let alone: CombinedLimiter | undefined;
  return (limiter, key) => {
    if (limiter === undefined) return alone ??= new CombinedLimiter({ [SLOT]: new ConcurrencyLimiter({ limit, clock }) });
    const rate = gated(limiter);
    clockOfNew = rate[INTERNALS].clock;
    const slot = slots.get(key) as GatedLimiter;
    let inner = pairs.get(rate);
    if (inner === undefined) pairs.set(rate, inner = new WeakMap());
    let combined = inner.get(slot);
    if (combined === undefined) inner.set(slot, combined = slotted(rate, slot));
    return combined;
  };
}
