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
  /**
   * Every Redis key the limiter's decisions touch (besides per-reservation records): smooth: state,
   * queue, undo log; window: entries, pause.
   */
  readonly policyKeys: readonly string[];
  /** ARGV[4]: the store's constants, one argument (fewer arguments = less work per call on both sides). */
  readonly #constants: string;
  /** ARGV[5]: the policies, 5 fields each, one argument. */
  readonly #specs: string;

  constructor(store: RedisStore, specs: readonly PolicySpec[]) {
    this.store = store;
    const keys: string[] = [];
    const fields: (string | number)[] = [];
    for (const spec of specs) {
      const base = `${store.prefix}${spec.kind}:${spec.key}`;
      if (spec.kind === "s") keys.push(base, `${base}:q`, `${base}:b`);
      else keys.push(base, `${base}:m`);
      fields.push(spec.kind, spec.limit, spec.intervalUs, spec.burst, spec.initial);
    }
    this.policyKeys = keys;
    this.#specs = fields.map(String).join(" ");
    this.#constants = [store.settleTtl, store.maxPending, store.cancelGrace, store.keyTtlMargin, store.tombstoneTtl].join(" ");
  }

  pauseArgs(ms: number): string[] {
    return [this.store.nowArg(), "0", String(Math.round(ms * 1000)), this.#constants, this.#specs];
  }

  /** Keys of a pause: the policy keys. */
  pauseKeys(): readonly string[] {
    return this.policyKeys;
  }

  /** Keys of a reserve batch: the policy keys, then the batch's record key. */
  reserveKeys(batch: string): string[] {
    return [...this.policyKeys, this.store.recordKey(batch)];
  }

  /**
   * ARGV of a reserve batch: the common head with [2] = the request count, [3] = the batch id, then
   * (n, maxWait µs, '1' for a reservation that settles) per request; n is a number of every policy,
   * or one per policy (named dimensions).
   */
  reserveArgs(batch: string, permits: readonly Amounts[], maxWaits: readonly number[], settles?: readonly boolean[]): string[] {
    const args = this.#head(permits.length, batch);
    for (let i = 0; i < permits.length; i++) {
      args.push(amountsArg(permits[i]!), maxWaitArg(maxWaits[i]!), settles?.[i] === true ? "1" : "");
    }
    return args;
  }

  /**
   * Keys and ARGV of one cancel call giving back `ids` in order — or settling those with an actual
   * cost in `actuals`: the policy keys, then each distinct record key; per operation (its record
   * key's index, its entry index, its id, '' or the actual cost).
   */
  cancelCall(ids: readonly string[], actuals?: readonly (Amounts | undefined)[]): { keys: string[]; args: string[] } {
    const keys = [...this.policyKeys];
    const records = new Map<string, number>();
    const args = this.#head(ids.length, "");
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      const actual = actuals?.[i];
      const slash = id.lastIndexOf("/");
      const batch = slash < 0 ? id : id.slice(0, slash);
      const entry = slash < 0 ? "1" : id.slice(slash + 1);
      let index = records.get(batch);
      if (index === undefined) {
        records.set(batch, (index = records.size + 1));
        keys.push(this.store.recordKey(batch));
      }
      args.push(String(index), entry, slash < 0 ? reservationId(id, 1) : id, actual === undefined ? "" : amountsArg(actual));
    }
    return { keys, args };
  }

  #head(count: number, batch: string): string[] {
    return [this.store.nowArg(), String(count), batch, this.#constants, this.#specs];
  }
}

/** A request's permits or a settle's actual cost: a number of every policy, or one per policy (named dimensions). @internal */
export type Amounts = number | readonly number[];

/** Amounts as the scripts read them: a number, or per policy `a;b;…;` (the trailing `;` marks a list even of one). */
function amountsArg(amounts: Amounts): string {
  return typeof amounts === "number" ? String(amounts) : `${amounts.join(";")};`;
}

/** A maxWait in ms as the scripts read it: whole µs, or 'inf'. */
function maxWaitArg(maxWait: number): string {
  return maxWait === Infinity ? "inf" : String(Math.floor(maxWait * 1000));
}

/** The id of the `index`-th request (from 1) of reserve batch `batch`. @internal */
export function reservationId(batch: string, index: number): string {
  return `${batch}/${index}`;
}
