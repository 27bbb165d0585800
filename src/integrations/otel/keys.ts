/**
 * Keys as an attribute, with the cardinality bounded: every distinct attribute value is a time
 * series in the backend, and a `KeyedLimiter`'s keys (tenants, users, hosts) can be unbounded. A key
 * goes through the `key` function (identity by default; return `undefined` to leave it out, or a
 * bucket such as a plan tier), and only the first `maxKeys` distinct values are admitted; later
 * ones are reported without `sluice.key`, so totals stay right while the series count stays bounded.
 * Attribute objects are built once per admitted value, so recording allocates nothing.
 *
 * @module
 */
import { describeValue, nonNegativeIntegerOrInfinity, requireFunction } from "../../validate.ts";
import { ATTRIBUTES } from "./names.ts";
import type { Attributes } from "./types.ts";

/**
 * How keys become the `sluice.key` attribute.
 *
 * @example
 * ```ts
 * const byPlan: KeyAttributeOptions = { key: (tenant) => planOf(tenant), maxKeys: 10 };
 * ```
 */
export interface KeyAttributeOptions {
  /**
   * The attribute value for a key, or `undefined` to leave the key out (its measurements are
   * reported without `sluice.key`). Called on every event, so keep it cheap; one that throws leaves
   * the key out (metrics never break the caller). @default the key itself
   */
  key?: (key: string) => string | undefined;
  /**
   * Distinct `sluice.key` values reported, the first ones seen; later values are reported without
   * `sluice.key`. `0` never breaks measurements out by key; `Infinity` for no bound (only when keys
   * are known to be few, such as a handful of API origins). @default 100
   */
  maxKeys?: number;
}

/**
 * Default of {@link KeyAttributeOptions.maxKeys}: distinct `sluice.key` values reported.
 *
 * @example
 * ```ts
 * import { DEFAULT_MAX_KEYS } from "sluice/otel";
 * console.log(DEFAULT_MAX_KEYS); // 100
 * ```
 */
export const DEFAULT_MAX_KEYS = 100;

/** Maps keys to attribute values (bounded) and caches what `build` makes for each value. */
export class KeyAttributes<T> {
  readonly #map: (key: string) => string | undefined;
  readonly #max: number;
  readonly #build: (attributes: Attributes) => T;
  readonly #common: Attributes;
  readonly #admitted = new Map<string, T>();
  /** What measurements without a key (or past the bound) use. */
  readonly none: T;

  constructor(options: KeyAttributeOptions, common: Attributes, build: (attributes: Attributes) => T) {
    this.#map = options.key === undefined ? (key) => key : requireFunction("key", options.key);
    this.#max = options.maxKeys === undefined ? DEFAULT_MAX_KEYS : nonNegativeIntegerOrInfinity("maxKeys", options.maxKeys);
    this.#common = common;
    this.#build = build;
    this.none = build(common);
  }

  /** The attribute value of `key`, or undefined when it is not broken out. */
  value(key: string | undefined): string | undefined {
    if (key === undefined || this.#max === 0) return undefined;
    let value: unknown;
    try {
      value = this.#map(key);
    } catch {
      return undefined;
    }
    if (typeof value !== "string") return undefined;
    if (this.#admitted.has(value)) return value;
    if (this.#admitted.size >= this.#max) return undefined;
    this.#admitted.set(value, this.#build({ ...this.#common, [ATTRIBUTES.key]: value }));
    return value;
  }

  /** What `build` made for the key's attribute value (or {@link KeyAttributes.none}). */
  for(key: string | undefined): T {
    const value = this.value(key);
    return value === undefined ? this.none : this.#admitted.get(value)!;
  }

  /** What `build` made for an attribute value `value()` returned. */
  forValue(value: string | undefined): T {
    return value === undefined ? this.none : this.#admitted.get(value)!;
  }
}

/**
 * The common attributes of every measurement: `sluice.limiter.name` and the caller's own.
 * Validates `name` and `attributes`.
 */
export function commonAttributes(name: unknown, attributes: unknown): Attributes {
  if (typeof name !== "string") throw new TypeError(`\`name\` must be a string, got ${describeValue(name)}`);
  if (name === "") throw new RangeError("`name` must be a non-empty string, got \"\"");
  if (attributes !== undefined && (typeof attributes !== "object" || attributes === null || Array.isArray(attributes))) {
    throw new TypeError(`\`attributes\` must be an object, got ${describeValue(attributes)}`);
  }
  return { ...(attributes as Attributes | undefined), [ATTRIBUTES.limiterName]: name };
}
