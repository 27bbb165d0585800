/**
 * The Redis-backed limiters: the same algorithms as `SmoothLimiter` and `WindowLimiter`, with their
 * state in Redis so a whole fleet shares one budget, and `combineRedis` to take from several of
 * them atomically. Limits travel with every call (changing a limit is a deploy, not a migration).
 *
 * @module
 */
import { LIMITER_DEFAULTS } from "../../limiters/defaults.ts";
import { combine } from "../../limiters/combine.ts";
import type { GatedLimiter } from "../../limiters/limiter.ts";
import { SmoothLimiter } from "../../limiters/smooth.ts";
import { WindowLimiter } from "../../limiters/window.ts";
import { describeValue, keysOf, nonNegativeFinite, onlyKnown, optionsObject, positiveFinite, positiveInteger } from "../../validate.ts";
import { MAX_SPAN_MS, type PolicySpec, RedisLimiter, type RedisLimiterOptions } from "./limiter.ts";
import { checkName, RedisStore } from "./store.ts";
import { dimensionsOf } from "./dimensions.ts";

function checkStore(value: unknown): RedisStore {
  if (!(value instanceof RedisStore)) throw new TypeError(`\`store\` must be a RedisStore, got ${describeValue(value)}`);
  return value;
}

/**
 * A limiter's key: a name (see `checkName`) that does not end like the keys a limiter of its kind
 * keeps beside its own (`<key>:q` and `<key>:b` of a smooth key, `<key>:m` of a window's pause): a
 * smooth key `y:q` would be smooth key `y`'s queue. Kinds live apart (`s:…`, `w:…`), so a window may
 * end in `:q`.
 */
function checkKey(value: unknown, kind: "s" | "w"): string {
  const key = checkName("key", value);
  if (kind === "s" ? /:[qb]$/.test(key) : key.endsWith(":m")) {
    const suffixes = kind === "s" ? '":q" or ":b" (a smooth key\'s companions)' : '":m" (a window\'s pause)';
    throw new RangeError(`\`key\` must not end with ${suffixes}, got ${describeValue(key)}`);
  }
  return key;
}

function intervalUs(interval: number): number {
  const us = Math.round(interval * 1000);
  if (us < 1) throw new RangeError(`\`interval\` must be at least 0.001 ms, got ${interval}`);
  if (interval > MAX_SPAN_MS) throw new RangeError(`\`interval\` must be at most 1e12 ms (about 31 years) in Redis, got ${interval}`);
  return us;
}

/**
 * Options of {@link RedisSmoothLimiter}: those of `SmoothLimiter`, plus the store and key.
 *
 * @example
 * ```ts
 * const options: RedisSmoothLimiterOptions = { store, key: "search", limit: 30, interval: 60_000, burst: 5 };
 * ```
 */
export interface RedisSmoothLimiterOptions extends RedisLimiterOptions {
  /** The store: Redis client, family name, failure policy. */
  store: RedisStore;
  /** The limiter's name within the store's family; processes using the same key share one budget. */
  key: string;
  /** Permits per `interval` (may be fractional). */
  limit: number;
  /** The interval in ms. @default 1000 */
  interval?: number;
  /** Permits stored from idle time. @default 0 */
  burst?: number;
  /**
   * Stored permits when the key is new, or back after it expired: once idle long enough to store
   * `burst` permits, the key lives `keyTtlMargin` more. @default burst
   */
  initialPermits?: number;
}

/**
 * `SmoothLimiter` across processes: `limit` permits per `interval` spaced evenly, with future debt
 * (a large request goes at once when no debt is pending; the callers after it pay), the state held
 * in Redis so every process sharing `key` shares the pace.
 *
 * @example
 * ```ts
 * import { RedisSmoothLimiter } from "sluice/redis";
 *
 * const limiter = new RedisSmoothLimiter({ store, key: "api", limit: 10, interval: 1000 });
 * await limiter.schedule(() => fetch("https://api.example.com/items"));
 * ```
 */
export class RedisSmoothLimiter extends RedisLimiter {
  /** Creates the limiter; its key in Redis appears on first use. */
  constructor(options: RedisSmoothLimiterOptions) {
    const o = optionsObject("options", options);
    onlyKnown("RedisSmoothLimiter", o, keysOf<RedisSmoothLimiterOptions>()(
      "store", "key", "limit", "interval", "burst", "initialPermits", "maxWait", "maxQueue", "failure",
    ));
    const store = checkStore(o.store);
    const key = checkKey(o.key, "s");
    const limit = positiveFinite("limit", o.limit);
    const interval = positiveFinite("interval", o.interval ?? LIMITER_DEFAULTS.interval);
    const burst = nonNegativeFinite("burst", o.burst ?? LIMITER_DEFAULTS.burst);
    const initial = nonNegativeFinite("initialPermits", o.initialPermits ?? burst);
    if (initial > burst) throw new RangeError(`\`initialPermits\` must be at most \`burst\` (${burst}), got ${initial}`);
    if (interval / limit > MAX_SPAN_MS) {
      throw new RangeError(`\`limit\` must allow a permit at least every 1e12 ms (about 31 years) in Redis, got ${limit} per ${interval} ms`);
    }
    const spec: PolicySpec = { kind: "s", key, limit, interval, intervalUs: intervalUs(interval), burst, initial };
    super(store, [spec], o);
  }

  /** The in-process limiter used under the `{ local: share }` failure policy: `share` of the rate. */
  protected buildFallback(share: number): GatedLimiter {
    const s = this.specs[0]!;
    return new SmoothLimiter({
      limit: s.limit * share,
      interval: s.interval,
      burst: s.burst * share,
      initialPermits: s.initial * share,
      clock: this.store.clock,
    });
  }
}

/**
 * Options of {@link RedisWindowLimiter}: those of `WindowLimiter`, plus the store and key.
 *
 * @example
 * ```ts
 * const options: RedisWindowLimiterOptions = { store, key: "core", limit: 5000, interval: 3_600_000 };
 * ```
 */
export interface RedisWindowLimiterOptions extends RedisLimiterOptions {
  /** The store: Redis client, family name, failure policy. */
  store: RedisStore;
  /** The limiter's name within the store's family; processes using the same key share one budget. */
  key: string;
  /** The most permits granted in any window of `interval` ms, fleet-wide. */
  limit: number;
  /** The window length in ms. */
  interval: number;
}

/**
 * `WindowLimiter` across processes: never more than `limit` permits granted in ANY window of
 * `interval` ms by all processes sharing `key` together. Grants are first come, first served across
 * the fleet; Redis stores one entry per reservation (not per permit). Every slot counts from its
 * grant (there is no `countFrom: "completion"` across processes; the throttled fetch's and
 * `sluice/undici`'s request for it is ignored): against a strict server's window, make `interval`
 * the server's plus the longest time a request takes to reach it.
 *
 * @example
 * ```ts
 * import { RedisWindowLimiter } from "sluice/redis";
 *
 * const limiter = new RedisWindowLimiter({ store, key: "core", limit: 5000, interval: 3_600_000 });
 * await limiter.acquire(); // counts against the fleet's 5000 per rolling hour
 * ```
 */
export class RedisWindowLimiter extends RedisLimiter {
  /** Creates the limiter; its key in Redis appears on first use. */
  constructor(options: RedisWindowLimiterOptions) {
    const o = optionsObject("options", options);
    onlyKnown("RedisWindowLimiter", o, keysOf<RedisWindowLimiterOptions>()("store", "key", "limit", "interval", "maxWait", "maxQueue", "failure"));
    const store = checkStore(o.store);
    const key = checkKey(o.key, "w");
    const limit = positiveInteger("limit", o.limit);
    const interval = positiveFinite("interval", o.interval);
    const spec: PolicySpec = { kind: "w", key, limit, interval, intervalUs: intervalUs(interval), burst: 0, initial: 0 };
    super(store, [spec], o);
  }

  /** The in-process limiter used under the `{ local: share }` failure policy: `share` of the rate. */
  protected buildFallback(share: number): GatedLimiter {
    const s = this.specs[0]!;
    // At least one permit per window, or the fallback could never grant anything.
    return new WindowLimiter({ limit: Math.max(1, Math.floor(s.limit * share)), interval: s.interval, clock: this.store.clock });
  }
}

/**
 * Options of a {@link RedisCombinedLimiter}.
 *
 * @example
 * ```ts
 * new RedisCombinedLimiter([overall, search], { maxQueue: 1000 });
 * ```
 */
export type RedisCombinedLimiterOptions = RedisLimiterOptions;

/**
 * Named members of a Redis combination: each is a *dimension* that a reservation asks, and settles,
 * its own amount of.
 *
 * @example
 * ```ts
 * const members: NamedRedisLimiters = { requests: rpm, tokens: tpm };
 * ```
 */
export type NamedRedisLimiters = Readonly<Record<string, RedisLimiter>>;

/** True for a plain object of members (named dimensions), as `combine` tells them. */
function isNamed(limiters: unknown): limiters is NamedRedisLimiters {
  return typeof limiters === "object" && limiters !== null && !Array.isArray(limiters) &&
    Object.getPrototypeOf(limiters) === Object.prototype;
}

/**
 * A Redis limiter that grants a request only when every member grants it: one script computes the
 * grant time on every key and takes on all of them at that instant, or takes nothing. Named members
 * are dimensions: `reserve({ requests: 1, tokens: 900 })` asks each its own amount, and the handle
 * settles per dimension (`acquire(n)` still takes n of each).
 *
 * @example
 * ```ts
 * import { RedisCombinedLimiter } from "sluice/redis";
 * const search = new RedisCombinedLimiter([overall, searchOnly], { maxQueue: 500 });
 * const llm = new RedisCombinedLimiter({ requests: rpm, tokens: tpm }, { maxWait: 30_000 });
 * ```
 */
export class RedisCombinedLimiter extends RedisLimiter {
  /** The limiters this combination was made of. */
  readonly members: readonly RedisLimiter[];

  /**
   * Combines limiters of one store — a list, or named dimensions (which must not share a key); every
   * decision covers all their keys in one script call.
   */
  constructor(limiters: readonly RedisLimiter[] | NamedRedisLimiters, options?: RedisCombinedLimiterOptions) {
    const names = isNamed(limiters) ? Object.keys(limiters) : null;
    const list: unknown = names === null ? limiters : Object.values(limiters);
    if (!Array.isArray(list) || list.length === 0) {
      throw new RangeError(`\`limiters\` must list at least one Redis limiter, got ${describeValue(limiters)}`);
    }
    list.forEach((limiter, i) => {
      if (!(limiter instanceof RedisLimiter)) {
        const at = names === null ? `[${i}]` : `.${names[i]}`;
        throw new TypeError(`\`limiters${at}\` must be a Redis limiter, got ${describeValue(limiter)}`);
      }
    });
    const members = list as RedisLimiter[];
    const store = members[0]!.store;
    // One store = one hash tag: a combination across stores could span Cluster slots, so refuse it.
    if (members.some((l) => l.store !== store)) {
      throw new TypeError("`combineRedis` needs limiters of one RedisStore (one hash tag, one Cluster slot)");
    }
    const specs = new Map<string, PolicySpec>();
    for (const spec of members.flatMap((l) => l.specs)) {
      const id = `${spec.kind}:${spec.key}`;
      const seen = specs.get(id);
      if (seen === undefined) specs.set(id, spec);
      else if (seen.limit !== spec.limit || seen.intervalUs !== spec.intervalUs || seen.burst !== spec.burst ||
        seen.initial !== spec.initial) {
        throw new TypeError(`\`combineRedis\` got two different limits for the key ${describeValue(spec.key)}`);
      }
    }
    const all = [...specs.values()];
    const dims = names === null ? null : dimensionsOf(names, members.map((m) => m.specs), all);
    const o = optionsObject("options", options);
    onlyKnown("RedisCombinedLimiter", o, keysOf<RedisCombinedLimiterOptions>()("maxWait", "maxQueue", "failure"));
    super(store, all, o, dims);
    this.members = members;
  }

  /**
   * Pauses only the members named in `dimensions` for `ms`, across the fleet (the others keep
   * granting to whoever else uses them), and holds this combination's own queue exactly as a whole
   * pause does: its waiters granted before the pause ends give their slots back and re-reserve, in
   * order, once Redis has the pause. Names the combination lacks are skipped; with none of them,
   * the whole combination pauses, so a pause is never lost. The throttled fetch calls this for
   * `retry.pauseDimensions`.
   *
   * @example
   * ```ts
   * llm.pauseDimensions(10_000, ["requests"]); // llm = combineRedis({ requests, tokens }): tokens keep flowing elsewhere
   * ```
   */
  pauseDimensions(ms: number, dimensions: readonly string[]): void {
    nonNegativeFinite("ms", ms);
    if (ms === 0) return;
    const names = this.dimensionNames ?? [];
    const picked = this.members.filter((_, i) => dimensions.includes(names[i]!));
    if (picked.length === 0) {
      this.pause(ms);
      return;
    }
    // Each member's pause goes out on the member's keys (and holds the member's own queue); this
    // queue waits for their answers before its waiters re-reserve.
    this.pauseAnswered(ms, Promise.allSettled(picked.map((member) => member.pauseAnswered(ms))));
  }

  /** The in-process limiter used under the `{ local: share }` failure policy: `share` of the rate. */
  protected buildFallback(share: number): GatedLimiter {
    // Members' local limiters are shared, so an overall limit stays one budget across channels offline
    // too; named members stay named, so a reservation per dimension falls back per dimension.
    const names = this.dimensionNames;
    const locals = this.members.map((m) => m.localFallback(share));
    if (names === null) return combine(...locals);
    return combine(Object.fromEntries(names.map((name, i) => [name, locals[i]!])));
  }
}

/**
 * Combines Redis limiters of one store: the result grants a request only when ALL of them grant it,
 * taking from all at the same instant in one script — a refused combination writes nothing. Use it
 * for an overall limit plus per-endpoint limits shared by a whole fleet.
 *
 * @example
 * ```ts
 * import { combineRedis, RedisWindowLimiter } from "sluice/redis";
 *
 * const overall = new RedisWindowLimiter({ store, key: "overall", limit: 5000, interval: 3_600_000 });
 * const search = combineRedis(overall, new RedisWindowLimiter({ store, key: "search", limit: 30, interval: 60_000 }));
 * await search.acquire(); // one atomic decision over both keys
 * ```
 */
export function combineRedis(...limiters: RedisLimiter[]): RedisCombinedLimiter;
/**
 * Combines named Redis limiters — *dimensions* — that a reservation asks, and settles, one by one,
 * with the API and semantics of the in-memory `combine({ … })`: all dimensions are taken at one
 * instant in one script call (or none), a settle adjusts them in one call, idempotent by reservation
 * id. Dimensions must not share a key; `acquire(n)` still takes n of each.
 *
 * @example
 * ```ts
 * import { combineRedis, RedisSmoothLimiter } from "sluice/redis";
 *
 * const llm = combineRedis({
 *   requests: new RedisSmoothLimiter({ store, key: "rpm", limit: 500, interval: 60_000 }),
 *   tokens: new RedisSmoothLimiter({ store, key: "tpm", limit: 30_000, interval: 60_000 }),
 * });
 * const r = await llm.reserve({ requests: 1, tokens: 900 }); // both at once, or neither
 * r.settle({ tokens: 640 }); // 260 tokens go back to the whole fleet
 * ```
 */
export function combineRedis(limiters: NamedRedisLimiters): RedisCombinedLimiter;
export function combineRedis(...limiters: unknown[]): RedisCombinedLimiter {
  const first = limiters[0];
  // Named dimensions: a plain object holding limiters (anything else is checked as a list member).
  if (limiters.length === 1 && isNamed(first) && Object.values(first).some((v) => v instanceof RedisLimiter)) {
    return new RedisCombinedLimiter(first);
  }
  return new RedisCombinedLimiter(limiters as RedisLimiter[]);
}
