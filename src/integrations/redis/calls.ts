/**
 * How a Redis limiter's decisions are encoded as script calls: the policy specs, the keys every
 * decision touches, and the ARGV of `reserve`, `cancel` and `pause` (layout in `scripts.ts`).
 *
 * @module
 */
import type { RedisStore } from "./store.ts";

/**
 * One policy of a Redis limiter as its scripts see it (read-only; exposed on `RedisLimiter.specs`).
 *
 * @example
 * ```ts
 * for (const spec of limiter.specs) console.log(spec.kind, spec.key, spec.limit, spec.interval);
 * ```
 */
export interface PolicySpec {
  /** `s` = smooth (future debt), `w` = strict rolling window. */
  readonly kind: "s" | "w";
  /** The user's key name (unique per kind within a store). */
  readonly key: string;
  /** Permits per `interval`. */
  readonly limit: number;
  /** ms, as the user gave it. */
  readonly interval: number;
  /** µs, an integer. */
  readonly intervalUs: number;
  /** Stored permits from idle time (smooth only; 0 for a window). */
  readonly burst: number;
  /** Stored permits when the key is new (smooth only). */
  readonly initial: number;
}

/** The keys and arguments of one limiter's script calls, built once per limiter. @internal */
export class PolicyCalls {
  readonly store: RedisStore;
  /** Every Redis key the limiter's decisions touch (besides per-reservation records), 2 per policy. */
  readonly policyKeys: readonly string[];
  readonly #specArgs: readonly string[];

  constructor(store: RedisStore, specs: readonly PolicySpec[]) {
    this.store = store;
    const keys: string[] = [];
    const args: string[] = [String(specs.length)];
    for (const spec of specs) {
      const base = `${store.prefix}${spec.kind}:${spec.key}`;
      keys.push(base, spec.kind === "s" ? `${base}:q` : `${base}:m`);
      args.push(spec.kind, String(spec.limit), String(spec.intervalUs), String(spec.burst), String(spec.initial));
    }
    this.policyKeys = keys;
    this.#specArgs = args;
  }

  pauseArgs(ms: number): string[] {
    const store = this.store;
    return [store.nowArg(), "", String(Math.round(ms * 1000)), "inf", "0", "0", String(store.keyTtlMargin), "0", ...this.#specArgs];
  }

  /** Keys of a cancel or pause: the record hash of reservation `id`'s batch, then the policy keys. */
  keys(id: string): string[] {
    return [this.store.recordKey(batchOf(id)), ...this.policyKeys];
  }

  /** Keys of a reserve batch: the policy keys, then the batch's record hash. */
  reserveKeys(batch: string): string[] {
    return [...this.policyKeys, this.store.recordKey(batch)];
  }

  /** ARGV of a reserve batch: the common head with [2] = the request count, [3] = the batch id, then (n, maxWait µs) per request. */
  reserveArgs(batch: string, permits: readonly number[], maxWaits: readonly number[]): string[] {
    const store = this.store;
    const args = [
      store.nowArg(),
      String(permits.length),
      batch,
      "",
      String(store.maxPending),
      String(store.cancelGrace),
      String(store.keyTtlMargin),
      String(store.tombstoneTtl),
      ...this.#specArgs,
    ];
    for (let i = 0; i < permits.length; i++) args.push(String(permits[i]), maxWaitArg(maxWaits[i]!));
    return args;
  }

  args(id: string, permits: number, maxWait: number): string[] {
    const store = this.store;
    return [
      store.nowArg(),
      id,
      String(permits),
      maxWaitArg(maxWait),
      String(store.maxPending),
      String(store.cancelGrace),
      String(store.keyTtlMargin),
      String(store.tombstoneTtl),
      ...this.#specArgs,
    ];
  }
}

/** A maxWait in ms as the scripts read it: whole µs, or 'inf'. */
function maxWaitArg(maxWait: number): string {
  return maxWait === Infinity ? "inf" : String(Math.floor(maxWait * 1000));
}

/**
 * The batch a reservation id belongs to: ids are `<batch>/<i>`, the i-th request (from 1) of the
 * reserve call `<batch>`; an id without `/` names its own batch. @internal
 */
export function batchOf(id: string): string {
  const slash = id.lastIndexOf("/");
  return slash < 0 ? id : id.slice(0, slash);
}

/** The id of the `index`-th request (from 1) of reserve batch `batch`. @internal */
export function reservationId(batch: string, index: number): string {
  return `${batch}/${index}`;
}
