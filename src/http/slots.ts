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
 * The limiter an attempt uses with `maxConcurrent: limit`: `single` with slots combined in (slots
 * alone without it); or, with a KeyedLimiter, per key, the key's limiter (given at each call) with
 * that key's slots. @internal
 *
 * @example
 * ```ts
 * const of = concurrencyFor(rate, 4, clock);
 * of(undefined, ""); // combine(rate, new ConcurrencyLimiter({ limit: 4 }))
 * ```
 */
export function concurrencyFor(
  single: Limiter | undefined,
  limit: number,
  clock: Clock,
): (limiter: Limiter | undefined, key: string) => Limiter {
  if (single !== undefined) {
    const rate = gated(single);
    const combined = new CombinedLimiter([rate, new ConcurrencyLimiter({ limit, clock: rate[INTERNALS].clock })]);
    return () => combined;
  }
  // A key's slots run on its limiter's clock (a combination's members share one).
  let clockOfNew = clock;
  const slots = new KeyedLimiter({ create: () => new ConcurrencyLimiter({ limit, clock: clockOfNew }) });
  const pairs = new WeakMap<GatedLimiter, WeakMap<GatedLimiter, CombinedLimiter>>();
  let alone: ConcurrencyLimiter | undefined;
  return (limiter, key) => {
    if (limiter === undefined) return alone ??= new ConcurrencyLimiter({ limit, clock });
    const rate = gated(limiter);
    clockOfNew = rate[INTERNALS].clock;
    const slot = slots.get(key) as GatedLimiter;
    let inner = pairs.get(rate);
    if (inner === undefined) pairs.set(rate, inner = new WeakMap());
    let combined = inner.get(slot);
    if (combined === undefined) inner.set(slot, combined = new CombinedLimiter([rate, slot]));
    return combined;
  };
}
