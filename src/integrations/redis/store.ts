/**
 * `RedisStore`: one Redis client, one limiter family (one hash tag), and the rules every call
 * follows — where time comes from, the per-call timeout, the failure policy, the key layout and the
 * bounds on memory. Limiters made on the same store can be combined; all their keys share the hash
 * tag `{sluice:<name>}`, so a combination always lives in one Cluster slot.
 *
 * @module
 */
import { type Clock, systemClock } from "../../clock.ts";
import type { Limiter } from "../../limiters/limiter.ts";
import { resolveClock } from "../../limiters/limiter.ts";
import {
  describeValue,
  keysOf,
  nonNegativeFinite,
  nonNegativeInteger,
  onlyKnown,
  optionsObject,
  positiveFinite,
  positiveInteger,
} from "../../validate.ts";
import { classify, parseReply, type RedisScriptClient, runScript } from "./client.ts";
import { clientCause, RedisCommandError, type RedisOperation, RedisUnavailableError } from "./errors.ts";
import { SCRIPTS } from "./scripts.ts";

/**
 * What a limiter does when Redis cannot be reached in time:
 * - `"closed"`: reject with {@link RedisUnavailableError} (never a silent allow);
 * - `"open"`: grant at once (availability over the limit — the API may answer 429s);
 * - `{ local: share }`: fall back to an in-process limiter with `share` (0 < share ≤ 1) of every
 *   rate (e.g. `1 / fleetSize`), so the fleet together stays near the limit;
 * - `{ fallback: limiter }`: fall back to any limiter you built.
 *
 * @example
 * ```ts
 * const policy: FailurePolicy = { local: 1 / 8 }; // 8 workers share the key
 * ```
 */
export type FailurePolicy = "closed" | "open" | { local: number } | { fallback: Limiter };

/**
 * Default option values of {@link RedisStore}, in one place so code, types and docs cannot drift.
 *
 * @example
 * ```ts
 * import { REDIS_DEFAULTS } from "sluice/redis";
 * console.log(REDIS_DEFAULTS.timeout); // 1000
 * ```
 */
export const REDIS_DEFAULTS: {
  /** Per-call timeout in ms (reserve, cancel, pause). */
  readonly timeout: number;
  /** Failure policy. */
  readonly failure: "closed";
  /** After a failed call, ms during which calls go straight to the failure policy. */
  readonly retryAfterFailure: number;
  /**
   * Outstanding (queued) reservations a smooth key may hold before reserve answers QueueFullError; a
   * window key refuses at `limit + maxPending` entries, those still in its window included.
   */
  readonly maxPending: number;
  /** ms after its grant time during which a reservation can still be cancelled (ambiguous timeouts). */
  readonly cancelGrace: number;
  /** ms a cancel's tombstone lives: a reserve arriving later than this after its cancel is not voided. */
  readonly tombstoneTtl: number;
  /** Extra ms every key lives beyond the moment its state is at rest. */
  readonly keyTtlMargin: number;
  /** ms after its grant time during which a reservation (`reserve`) can be settled; then it counts as reserved. */
  readonly settleTtl: number;
} = Object.freeze({
  timeout: 1000,
  failure: "closed",
  retryAfterFailure: 1000,
  maxPending: 10_000,
  cancelGrace: 5000,
  tombstoneTtl: 60_000,
  keyTtlMargin: 1000,
  settleTtl: 600_000,
});

/**
 * What {@link RedisStoreOptions.onError} receives: a background call failed (a cancel, a pause), or
 * a reserve fell back to the failure policy.
 */
export interface RedisErrorEvent {
  /** Which script call failed. */
  readonly operation: RedisOperation;
  /** The failure, typed by what can be done about it. */
  readonly error: RedisUnavailableError | RedisCommandError;
}

/**
 * Options of {@link RedisStore}.
 *
 * @example
 * ```ts
 * const options: RedisStoreOptions = { client: fromIoredis(redis), name: "github", timeout: 500 };
 * ```
 */
export interface RedisStoreOptions {
  /** The Redis client, through an adapter ({@link fromNodeRedis}, {@link fromIoredis}) or your own. */
  client: RedisScriptClient;
  /**
   * The family name: every key starts with `{sluice:<name>}:`, one hash tag, so any combination of
   * this store's limiters is one Cluster slot. No `{`, `}` or whitespace.
   */
  name: string;
  /**
   * Where the current time comes from, as integer epoch MICROseconds. Default: the server's `TIME`
   * (one clock for the whole fleet). Pass `() => Date.now() * 1000` on hosts that forbid `TIME`
   * (every process must then have a synchronised clock), or a virtual time in tests.
   * @default undefined (server TIME)
   */
  now?: () => number | bigint;
  /** Local clock for timers and timeouts. @default systemClock */
  clock?: Clock;
  /** Per-call timeout in ms. @default 1000 */
  timeout?: number;
  /** What to do when Redis is unavailable. @default "closed" */
  failure?: FailurePolicy;
  /** After an unavailability, ms during which calls skip Redis and use the failure policy. @default 1000 */
  retryAfterFailure?: number;
  /**
   * Memory bound: queued reservations a smooth key may hold; a window key, `limit + maxPending`
   * entries (those in its window included). @default 10000
   */
  maxPending?: number;
  /** ms after its grant time during which a reservation stays cancellable. @default 5000 */
  cancelGrace?: number;
  /** ms a cancel's tombstone blocks a late reserve with the same id. @default 60000 */
  tombstoneTtl?: number;
  /** Extra ms every key lives past the moment its state is at rest. @default 1000 */
  keyTtlMargin?: number;
  /**
   * ms after its grant time during which a reservation made with `reserve` can be settled (or
   * cancelled): its record is kept that long (at least `cancelGrace`), then dropped, and a settle
   * arriving later changes nothing — the reservation stays counted as reserved. Bounds the memory of
   * reservations never settled. @default 600000 (10 minutes)
   */
  settleTtl?: number;
  /** Called for failures nobody awaits (cancels, pauses) and for each reserve handled by the failure policy. */
  onError?: (event: RedisErrorEvent) => void;
}

const NAME_PATTERN = /^[^{}\s]{1,200}$/;

/** Checks a family or key name: it becomes part of a key next to the hash tag. @internal */
export function checkName(option: string, value: unknown): string {
  if (typeof value !== "string") throw new TypeError(`\`${option}\` must be a string, got ${describeValue(value)}`);
  if (!NAME_PATTERN.test(value)) {
    throw new RangeError(
      `\`${option}\` must be 1–200 characters without braces or whitespace (it sits beside the hash tag), got ${
        describeValue(value)
      }`,
    );
  }
  return value;
}

/** A failure policy, checked as the store and each limiter take it. @internal */
export function checkFailure(value: unknown): FailurePolicy {
  if (value === "closed" || value === "open") return value;
  if (typeof value === "object" && value !== null) {
    if ("local" in value) {
      const share = (value as { local: unknown }).local;
      positiveFinite("failure.local", share);
      if ((share as number) > 1) throw new RangeError(`\`failure.local\` must be at most 1, got ${share}`);
      return { local: share as number };
    }
    if ("fallback" in value) {
      const limiter = (value as { fallback: unknown }).fallback as Limiter;
      if (typeof limiter !== "object" || limiter === null || typeof limiter.acquire !== "function") {
        throw new TypeError(`\`failure.fallback\` must be a Limiter, got ${describeValue(limiter)}`);
      }
      return { fallback: limiter };
    }
  }
  throw new TypeError(
    `\`failure\` must be "closed", "open", { local: share } or { fallback: limiter }, got ${describeValue(value)}`,
  );
}

/** A decoded script reply: a status code, the delay until the grant, and the decision's time. */
export interface Reply {
  /** 0 = reserved; other values name why not (refused by maxWait, queue full, …). */
  readonly code: number;
  /** µs. */
  readonly delay: number;
  /** µs, server time (or injected time). */
  readonly at: number;
}

/**
 * One Redis client and one limiter family. Create limiters on it with {@link RedisSmoothLimiter},
 * {@link RedisWindowLimiter} and combine them with {@link combineRedis}.
 *
 * @example
 * ```ts
 * import { Redis } from "ioredis";
 * import { fromIoredis, RedisStore, RedisWindowLimiter } from "sluice/redis";
 *
 * const store = new RedisStore({ client: fromIoredis(new Redis()), name: "github" });
 * const limiter = new RedisWindowLimiter({ store, key: "core", limit: 5000, interval: 3_600_000 });
 * await limiter.acquire();
 * ```
 */
export class RedisStore {
  /** The adapter calls go through. */
  readonly client: RedisScriptClient;
  /** The family name. */
  readonly name: string;
  /** The key prefix, hash tag included: `{sluice:<name>}:`. */
  readonly prefix: string;
  /** Local clock (timers, timeouts). */
  readonly clock: Clock;
  /** Per-call timeout in ms (see {@link RedisStoreOptions.timeout}). */
  readonly timeout: number;
  /** What happens while Redis is unavailable. */
  readonly failure: FailurePolicy;
  /** ms after an unavailability during which calls skip Redis. */
  readonly retryAfterFailure: number;
  /** Outstanding reservations one key may hold. */
  readonly maxPending: number;
  /** ms after its grant time during which a reservation stays cancellable. */
  readonly cancelGrace: number;
  /** ms a cancel's tombstone blocks a late reserve with the same id. */
  readonly tombstoneTtl: number;
  /** Extra ms every key lives past the moment its state is at rest. */
  readonly keyTtlMargin: number;
  /** ms after its grant time during which a reservation can be settled (see {@link RedisStoreOptions.settleTtl}). */
  readonly settleTtl: number;
  readonly #now: (() => number | bigint) | undefined;
  readonly #onError: ((event: RedisErrorEvent) => void) | undefined;
  #downUntil = -Infinity;

  /** Checks the options; makes no call to Redis until a limiter asks (scripts load on first use). */
  constructor(options: RedisStoreOptions) {
    const o = optionsObject("options", options);
    onlyKnown("RedisStore", o, keysOf<RedisStoreOptions>()(
      "client", "name", "now", "clock", "timeout", "failure", "retryAfterFailure", "maxPending", "cancelGrace", "tombstoneTtl",
      "keyTtlMargin", "settleTtl", "onError",
    ));
    const client = o.client;
    if (typeof client !== "object" || client === null || typeof client.evalsha !== "function" ||
      typeof client.eval !== "function") {
      throw new TypeError(
        `\`client\` must be a RedisScriptClient (use fromNodeRedis or fromIoredis), got ${describeValue(client)}`,
      );
    }
    this.client = client;
    this.name = checkName("name", o.name);
    this.prefix = `{sluice:${this.name}}:`;
    if (o.now !== undefined && typeof o.now !== "function") {
      throw new TypeError(`\`now\` must be a function returning epoch microseconds, got ${describeValue(o.now)}`);
    }
    this.#now = o.now;
    this.clock = o.clock === undefined ? systemClock : resolveClock(o.clock);
    this.timeout = positiveFinite("timeout", o.timeout ?? REDIS_DEFAULTS.timeout);
    this.failure = checkFailure(o.failure ?? REDIS_DEFAULTS.failure);
    this.retryAfterFailure = nonNegativeFinite("retryAfterFailure", o.retryAfterFailure ?? REDIS_DEFAULTS.retryAfterFailure);
    this.maxPending = positiveInteger("maxPending", o.maxPending ?? REDIS_DEFAULTS.maxPending);
    this.cancelGrace = nonNegativeInteger("cancelGrace", o.cancelGrace ?? REDIS_DEFAULTS.cancelGrace);
    this.tombstoneTtl = positiveInteger("tombstoneTtl", o.tombstoneTtl ?? REDIS_DEFAULTS.tombstoneTtl);
    this.keyTtlMargin = nonNegativeInteger("keyTtlMargin", o.keyTtlMargin ?? REDIS_DEFAULTS.keyTtlMargin);
    this.settleTtl = positiveInteger("settleTtl", o.settleTtl ?? REDIS_DEFAULTS.settleTtl);
    if (o.onError !== undefined && typeof o.onError !== "function") {
      throw new TypeError(`\`onError\` must be a function, got ${describeValue(o.onError)}`);
    }
    this.#onError = o.onError;
  }

  /** The key of the records of reserve batch `batch` (a string, one entry per reservation). @internal */
  recordKey(batch: string): string {
    return `${this.prefix}r:${batch}`;
  }

  /** True while a recent failure says Redis is down (calls skip it until the cooldown ends). */
  isDown(): boolean {
    return this.clock.now() < this.#downUntil;
  }

  /** The `now` argument of a script: '' for server TIME, else the injected µs. @internal */
  nowArg(): string {
    if (this.#now === undefined) return "";
    const t = this.#now();
    const n = typeof t === "bigint" ? t : Math.floor(t);
    if (typeof n === "number" ? !Number.isSafeInteger(n) || n < 0 : n < 0n) {
      throw new RangeError(`\`now\` must return a non-negative integer of microseconds, got ${String(t)}`);
    }
    return String(n);
  }

  /** Reports a failure nobody awaits. @internal */
  report(operation: RedisOperation, error: RedisUnavailableError | RedisCommandError): void {
    if (this.#onError === undefined) return;
    try {
      this.#onError({ operation, error });
    } catch {
      // a throwing hook must not break the limiter
    }
  }

  /**
   * Runs one script with the per-call timeout. Rejects with {@link RedisUnavailableError} (timeout,
   * connection, transient state — and marks the store down for `retryAfterFailure`) or
   * {@link RedisCommandError} (a reply meaning misconfiguration). @internal
   */
  call(operation: RedisOperation, keys: readonly string[], args: readonly string[]): Promise<Reply>;
  /** The same, with the reply read by `parse` (a reserve batch's replies). @internal */
  call<T>(operation: RedisOperation, keys: readonly string[], args: readonly string[], parse: (reply: unknown) => T): Promise<T>;
  call(
    operation: RedisOperation,
    keys: readonly string[],
    args: readonly string[],
    parse: (reply: unknown) => unknown = parseReply,
  ): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      let done = false;
      const timer = this.clock.setTimeout(() => {
        if (done) return;
        done = true;
        this.#markDown();
        reject(new RedisUnavailableError(operation, `no reply within ${this.timeout} ms`));
      }, this.timeout);
      runScript(this.client, SCRIPTS[operation], keys, args).then(
        (reply) => {
          if (done) return;
          done = true;
          this.clock.clearTimeout(timer);
          try {
            resolve(parse(reply));
          } catch (error) {
            reject(new RedisCommandError(operation, (error as Error).message, { cause: error }));
          }
        },
        (error: unknown) => {
          if (done) return;
          done = true;
          this.clock.clearTimeout(timer);
          const message = error instanceof Error ? error.message : String(error);
          if (classify(this.client, error) === "error") {
            reject(new RedisCommandError(operation, message, { cause: clientCause(error) }));
          } else {
            this.#markDown();
            reject(new RedisUnavailableError(operation, message, { cause: clientCause(error) }));
          }
        },
      );
    });
  }

  #markDown(): void {
    if (this.retryAfterFailure > 0) this.#downUntil = this.clock.now() + this.retryAfterFailure;
  }
}
