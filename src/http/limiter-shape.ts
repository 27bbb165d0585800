/**
 * Telling a `KeyedLimiter` from a `Limiter` by shape, for the throttled fetch and `sluice/undici`:
 * an `instanceof` check would bundle the KeyedLimiter class (about 0.9 KiB min+gzip) into every
 * app that uses neither keys nor the class.
 *
 * @module
 */
import type { KeyedLimiter } from "../limiters/keyed.ts";

/**
 * A `KeyedLimiter` (or one shaped like it: `get(key)` and `has(key)`, and no `pause` — a limiter's own),
 * known by shape so that a user who never makes one does not bundle the class. 
 *
 * @example
 * ```ts
 * isKeyedLimiter(new KeyedLimiter({ create: () => new SmoothLimiter({ limit: 5 }) })); // true
 * ```
 */
export function isKeyedLimiter(value: unknown): value is KeyedLimiter<string> {
  const v = value as KeyedLimiter<string> & { pause?: unknown };
  return typeof v === "object" && v !== null && typeof v.get === "function" && typeof v.has === "function" &&
    typeof v.pause !== "function";
}
