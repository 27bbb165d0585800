/**
 * Named dimensions of a Redis combination (`combineRedis({ requests, tokens })`): which policy
 * belongs to which dimension, and how a record of per-dimension amounts (a reservation's permits,
 * or a settle's actual cost) becomes one amount per policy, validated as the in-memory limiters do.
 *
 * @module
 */
import { describeValue } from "../../validate.ts";
import { perDimension } from "../../limiters/reservation.ts";
import type { PolicySpec } from "./calls.ts";

/** A named combination's dimensions: their names, per policy the index of its dimension, per dimension its most permits. @internal */
export interface RedisDimensions {
  readonly names: readonly string[];
  /** Per policy (in spec order), the index of the dimension it belongs to. */
  readonly of: readonly number[];
  /** Per dimension, the most one request can ask (the smallest window limit among its policies). */
  readonly max: readonly number[];
}

/**
 * The dimensions of `specs` given each named member's specs; dimensions must not share a key. @internal
 *
 * @example
 * ```ts
 * dimensionsOf(["requests", "tokens"], [rpm.specs, tpm.specs], [...rpm.specs, ...tpm.specs]);
 * ```
 */
export function dimensionsOf(
  names: readonly string[],
  memberSpecs: readonly (readonly PolicySpec[])[],
  specs: readonly PolicySpec[],
): RedisDimensions {
  const owner = new Map<string, number>();
  memberSpecs.forEach((list, d) => {
    for (const spec of list) {
      const id = `${spec.kind}:${spec.key}`;
      const other = owner.get(id);
      if (other !== undefined && other !== d) {
        throw new TypeError(
          `\`limiters.${names[d]}\` shares the key ${describeValue(spec.key)} with \`limiters.${names[other]}\`: each dimension needs keys of its own`,
        );
      }
      owner.set(id, d);
    }
  });
  const of = specs.map((s) => owner.get(`${s.kind}:${s.key}`)!);
  const max = names.map((_, d) => Math.min(...specs.filter((_, i) => of[i] === d).map((s) => (s.kind === "w" ? s.limit : Infinity))));
  return { names, of, max };
}

/** The per-policy amounts of a reservation asked per dimension (a dimension left out asks 0). @internal */
export function amountsOf(dims: RedisDimensions, asked: Readonly<Record<string, unknown>>): number[] {
  const given = perDimension("permits", asked, dims, dims.max);
  return dims.of.map((d) => given[d] ?? 0);
}

/** The per-policy actual costs of a settle given per dimension (a dimension left out settles as reserved). @internal */
export function actualsOf(dims: RedisDimensions, actual: Readonly<Record<string, unknown>>, reserved: readonly number[]): number[] {
  const given = perDimension("actual", actual, dims, null);
  return reserved.map((n, i) => given[dims.of[i]!] ?? n);
}

/** True for a record of dimensions (an object, not an array), as the in-memory `reserve` tells them. @internal */
export function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
