/**
 * KeyedLimiter: one limiter per key (origin, tenant, endpoint), created on first use, with memory
 * bounded by evicting idle keys.
 *
 * Eviction is safe by construction: a key is forgotten only when nothing waits on it and its state is
 * "at rest" — a fresh limiter for that key would grant nothing the old one would not, and no
 * reservation on it is still open (its settle must reach this limiter) — so eviction can
 * never let more through than the limit. Policies shared by several keys (an overall limit combined
 * into each key's limiter) are left out of that test, since forgetting one key does not forget them.
 * A custom limiter (not a GatedLimiter) is at rest only when its `isIdle()` says so; one without
 * `isIdle` is never evicted. An evicted limiter is held weakly: while a caller still holds it (a
 * request in flight that will pause it on a 429), the key's next `get` returns it again instead of
 * making a second limiter for the key.
 * Keys are kept in least-recently-used order in an intrusive linked list beside the lookup Map (so a
 * `get` never reorders the Map, whose iteration slows down under delete/re-insert churn), and the
 * oldest few are checked on each `get`: O(1) per call whatever the number of keys, and no timer is
 * ever armed (an idle KeyedLimiter keeps no process alive).
 * `maxKeys` is therefore a soft bound: busy keys are never dropped to honour it.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { type GateTime, timeOf } from "./gate-time.ts";
import { LIMITER_DEFAULTS } from "./defaults.ts";
import { type AcquireOptions, GatedLimiter, INTERNALS, type Limiter, resolveClock, type ScheduleOptions } from "./limiter.ts";
import type { Policy } from "./policy.ts";
import type { Permits, Reservation, ReserveOptions } from "./reservation.ts";
import { type LimiterEventType, LimiterEvents } from "./events.ts";
import type { LimiterStats } from "./stats.ts";
import { describeValue, keysOf, nonNegativeOrInfinity, onlyKnown, optionsObject, positiveInteger, requireFunction } from "../validate.ts";

const EVENT_TYPES: readonly LimiterEventType[] = ["grant", "refuse", "abort", "pause", "ratechange"];

/** A limiter's stats, if it has them (built-in limiters do; a custom one may). */
function statsOf(limiter: unknown): LimiterStats | undefined {
  const stats = (limiter as { stats?: unknown } | undefined)?.stats;
  return typeof stats === "function" ? (stats.call(limiter) as LimiterStats) : undefined;
}

/** A limiter's event target, if it has one. */
function eventsOfLimiter(limiter: unknown): EventTarget | undefined {
  const events = (limiter as { events?: unknown }).events;
  return events instanceof EventTarget ? events : undefined;
}

/** How many least-recently-used keys one `get` examines for eviction. */
const SWEEP_PER_GET = 4;

/**
 * Options of {@link KeyedLimiter}.
 *
 * @example
 * ```ts
 * const options: KeyedLimiterOptions<string> = {
 *   create: () => new SmoothLimiter({ limit: 5 }),
 *   maxKeys: 1000,
 * };
 * ```
 */
export interface KeyedLimiterOptions<K, L extends Limiter = Limiter> {
  /**
   * Makes the limiter for a key the first time it is used (and again after the key was evicted and
   * its old limiter collected). A custom limiter needs `isIdle()` to be evictable (see
   * {@link Limiter.isIdle}).
   */
  create: (key: K) => L;
  /**
   * Keys kept before idle ones are evicted. A soft bound: keys that are not at rest (waiters, tasks in
   * flight, a pause, grants still counting, a custom limiter without `isIdle`) are kept. @default 10000
   */
  maxKeys?: number;
  /** A key unused this long (ms) is evicted once it is at rest. @default 60000 */
  idleTimeout?: number;
  /** Clock for `idleTimeout`. @default systemClock */
  clock?: Clock;
}

interface Entry<K, L> {
  readonly key: K;
  readonly limiter: L;
  lastUsed: number;
  /** Re-dispatches the limiter's events with `detail.key`, while the KeyedLimiter has listeners. */
  forward: ((event: Event) => void) | null;
  /** Neighbours in least-recently-used order (`prev` is older). */
  prev: Entry<K, L> | null;
  next: Entry<K, L> | null;
}

/**
 * One limiter per key, created on demand; idle keys are evicted so memory stays bounded.
 *
 * @example
 * ```ts
 * import { KeyedLimiter, SmoothLimiter } from "sluice";
 *
 * const perHost = new KeyedLimiter({ create: () => new SmoothLimiter({ limit: 5, interval: 1000 }) });
 * await perHost.get(new URL(url).host).acquire();
 * ```
 */
export class KeyedLimiter<K = string, L extends Limiter = Limiter> {
  readonly #create: (key: K) => L;
  readonly #maxKeys: number;
  readonly #idleTimeout: number;
  readonly #clock: Clock;
  /** Gate time of the clock (validated, never backwards), as the limiters it makes see it. */
  readonly #time: GateTime;
  readonly #entries = new Map<K, Entry<K, L>>();
  /** Least recently used. */
  #oldest: Entry<K, L> | null = null;
  /** Most recently used. */
  #newest: Entry<K, L> | null = null;
  /** Per policy: how many keys' limiters include it (shared ones are left out of the idle test). */
  readonly #policyKeys = new Map<Policy, number>();
  /**
   * Limiters of evicted keys, held weakly. A caller may still hold one (a request in flight that
   * will pause it on a 429, code that kept `get(key)`'s result): while it is alive it is the key's
   * limiter again on the next `get`, so a key never has two limiters at once. Entries go when their
   * limiter is collected.
   */
  readonly #evicted = new Map<K, WeakRef<L>>();
  readonly #collected = new FinalizationRegistry<K>((key) => {
    if (this.#evicted.get(key)?.deref() === undefined) this.#evicted.delete(key);
  });

  /**
   * Creates an empty map of keys; limiters are made on first use of each key.
   * @throws {RangeError | TypeError} when an option is invalid, naming it and its value.
   */
  constructor(options: KeyedLimiterOptions<K, L>) {
    const o = optionsObject("options", options);
    onlyKnown("KeyedLimiter", o, keysOf<KeyedLimiterOptions<K, L>>()("create", "maxKeys", "idleTimeout", "clock"));
    this.#create = requireFunction("create", o.create as (key: K) => L);
    this.#maxKeys = positiveInteger("maxKeys", o.maxKeys ?? LIMITER_DEFAULTS.maxKeys);
    this.#idleTimeout = nonNegativeOrInfinity("idleTimeout", o.idleTimeout ?? LIMITER_DEFAULTS.idleTimeout);
    this.#clock = resolveClock(o.clock);
    this.#time = timeOf(this.#clock);
  }

  /**
   * @internal How it forgets keys (`maxKeys`, `idleTimeout`, the clock): a companion map kept beside
   * it (the fetch's `maxConcurrent` slots per key) forgets alike.
   */
  get eviction(): { readonly maxKeys: number; readonly idleTimeout: number; readonly clock: Clock } {
    return { maxKeys: this.#maxKeys, idleTimeout: this.#idleTimeout, clock: this.#clock };
  }

  /** How many keys currently have a limiter. */
  get size(): number {
    return this.#entries.size;
  }

  /** True when `key` currently has a limiter (does not create one). */
  has(key: K): boolean {
    return this.#entries.has(key);
  }

  /**
   * The limiter `key` has now, or undefined — without creating one or counting as a use, so looking
   * (a dashboard, a log line) does not keep an idle key from being evicted.
   * @example
   * ```ts
   * perHost.peek("https://api.example.com")?.stats().queued; // undefined when the host has no limiter
   * ```
   */
  peek(key: K): L | undefined {
    return this.#entries.get(key)?.limiter;
  }

  /** The limiter for `key`, created with `create(key)` on first use. */
  get(key: K): L {
    const now = this.#time.now();
    let entry = this.#entries.get(key);
    if (entry !== undefined) {
      entry.lastUsed = now;
      if (entry !== this.#newest) {
        this.#unlink(entry);
        this.#append(entry);
      }
    } else {
      const limiter = this.#revive(key) ?? this.#make(key);
      entry = { key, limiter, lastUsed: now, forward: null, prev: null, next: null };
      this.#count(limiter, +1);
      this.#entries.set(key, entry);
      this.#append(entry);
      this.#subscribe(entry);
    }
    this.#sweep(now, entry);
    return entry.limiter;
  }

  /** Shorthand for `get(key).acquire(permits, options)`. */
  acquire(key: K, permits?: number, options?: AcquireOptions): Promise<void> {
    return this.get(key).acquire(permits, options);
  }

  /** Shorthand for `get(key).tryAcquire(permits)`. */
  tryAcquire(key: K, permits?: number): number {
    return this.get(key).tryAcquire(permits);
  }

  /** Shorthand for `get(key).schedule(task, options)`. */
  schedule<T>(key: K, task: () => T | PromiseLike<T>, options?: ScheduleOptions): Promise<T> {
    return this.get(key).schedule(task, options);
  }

  /**
   * Shorthand for `get(key).reserve(permits, options)` (see {@link GatedLimiter.reserve}).
   * @throws {TypeError} when the key's limiter is a custom one without `reserve`
   */
  reserve(key: K, permits?: Permits, options?: ReserveOptions): Promise<Reservation> {
    const limiter = this.get(key);
    if (typeof limiter.reserve !== "function") {
      throw new TypeError(`\`create\` must return a limiter with \`reserve\` to reserve, got ${describeValue(limiter)}`);
    }
    return limiter.reserve(permits, options);
  }

  /** The evicted limiter of `key` if something still holds it. */
  #revive(key: K): L | undefined {
    const limiter = this.#evicted.get(key)?.deref();
    this.#evicted.delete(key);
    if (limiter !== undefined) {
      this.#collected.unregister(limiter);
      this.#retire(limiter, -1);
    }
    return limiter;
  }

  // --- stats and events (see stats.ts, events.ts) ---

  /** Counts of evicted keys, so the totals never go down when a key is forgotten. */
  readonly #retired = { granted: 0, refused: 0, aborted: 0 };
  #events: LimiterEvents | undefined = undefined;

  /**
   * Counters summed over every key (grants, refusals and aborts of evicted keys included), or one
   * key's (`stats(key)`, without creating it: zeros for a key that has no limiter). Keys whose
   * limiter has no `stats()` (a custom limiter) count nothing.
   * @example
   * ```ts
   * perHost.stats();             // every host
   * perHost.stats("example.com"); // one host
   * ```
   */
  stats(key?: K): LimiterStats {
    if (arguments.length > 0) {
      const limiter = this.#entries.get(key as K)?.limiter ?? this.#evicted.get(key as K)?.deref();
      return statsOf(limiter) ?? { queued: 0, inFlight: 0, granted: 0, refused: 0, aborted: 0, pausedUntil: undefined };
    }
    let queued = 0, inFlight = 0, { granted, refused, aborted } = this.#retired;
    let until: number | undefined;
    for (const entry of this.#entries.values()) {
      const s = statsOf(entry.limiter);
      if (s === undefined) continue;
      queued += s.queued;
      inFlight += s.inFlight;
      granted += s.granted;
      refused += s.refused;
      aborted += s.aborted;
      if (s.pausedUntil !== undefined && !(until !== undefined && until >= s.pausedUntil)) until = s.pausedUntil;
    }
    return { queued, inFlight, granted, refused, aborted, pausedUntil: until };
  }

  /**
   * Every key's events, re-dispatched here with `detail.key` set. A key's limiter is listened to only
   * while this target has a listener of that type.
   * @example
   * ```ts
   * perHost.events.addEventListener("refuse", (e) => console.warn((e as CustomEvent).detail.key));
   * ```
   */
  get events(): LimiterEvents {
    if (this.#events !== undefined) return this.#events;
    const events = (this.#events = new LimiterEvents());
    events.onListening = (type, listening) => {
      for (const entry of this.#entries.values()) {
        const target = eventsOfLimiter(entry.limiter);
        if (target === undefined) continue;
        if (listening) target.addEventListener(type, this.#forwarder(entry));
        else if (entry.forward !== null) target.removeEventListener(type, entry.forward);
      }
      if (!listening && !EVENT_TYPES.some((t) => events.listens(t))) {
        for (const entry of this.#entries.values()) entry.forward = null;
      }
    };
    return events;
  }

  #forwarder(entry: Entry<K, L>): (event: Event) => void {
    return entry.forward ??= (event: Event) => {
      const detail = (event as CustomEvent<object>).detail;
      this.#events!.emit(event.type as LimiterEventType, { ...detail, key: entry.key });
    };
  }

  #subscribe(entry: Entry<K, L>): void {
    const events = this.#events;
    if (events === undefined) return;
    for (const type of EVENT_TYPES) {
      if (!events.listens(type)) continue;
      const target = eventsOfLimiter(entry.limiter);
      if (target === undefined) return;
      target.addEventListener(type, this.#forwarder(entry));
    }
  }

  #unsubscribe(entry: Entry<K, L>): void {
    if (entry.forward === null) return;
    const target = eventsOfLimiter(entry.limiter);
    if (target !== undefined) for (const type of EVENT_TYPES) target.removeEventListener(type, entry.forward);
    entry.forward = null;
  }

  #retire(limiter: L, sign: number): void {
    const s = statsOf(limiter);
    if (s === undefined) return;
    this.#retired.granted += sign * s.granted;
    this.#retired.refused += sign * s.refused;
    this.#retired.aborted += sign * s.aborted;
  }

  #make(key: K): L {
    const limiter = this.#create(key);
    if (typeof limiter !== "object" || limiter === null || typeof limiter.acquire !== "function") {
      throw new TypeError(`\`create\` must return a Limiter, got ${describeValue(limiter)}`);
    }
    return limiter;
  }

  #evict(entry: Entry<K, L>): void {
    this.#unsubscribe(entry);
    this.#retire(entry.limiter, +1);
    this.#entries.delete(entry.key);
    this.#count(entry.limiter, -1);
    this.#evicted.set(entry.key, new WeakRef(entry.limiter));
    this.#collected.register(entry.limiter, entry.key, entry.limiter);
  }

  #count(limiter: L, delta: number): void {
    if (!(limiter instanceof GatedLimiter)) return;
    for (const p of limiter[INTERNALS].policies) {
      const n = (this.#policyKeys.get(p) ?? 0) + delta;
      if (n <= 0) this.#policyKeys.delete(p);
      else this.#policyKeys.set(p, n);
    }
  }

  #atRest(limiter: L): boolean {
    if (!(limiter instanceof GatedLimiter)) {
      // A custom limiter is forgotten only on its own word: one that cannot say it is idle may have
      // waiters or grants still counting, and a second limiter made for its key would double the limit.
      const custom = limiter as L & { isIdle?: () => unknown };
      return typeof custom.isIdle === "function" && custom.isIdle() === true;
    }
    const parts = limiter[INTERNALS];
    // An open reservation may still settle (debt), a running task may still end: either must land on
    // the limiter the key keeps.
    if (parts.queue.size > 0 || parts.queue.inFlight > 0) return false;
    const t = parts.gate().now();
    return parts.policies.every((p) => (this.#policyKeys.get(p) ?? 0) > 1 || p.isAtRest(t));
  }

  /**
   * Evicts now every key that `get` would evict when it next looks: unused for `idleTimeout` (or
   * beyond `maxKeys`) and at rest. `get` examines only a few of the least recently used keys each
   * time and no timer runs (an idle KeyedLimiter keeps no process alive), so after traffic stops the
   * keys stay until the next calls; call this from your own timer to free them sooner. Returns how
   * many keys it evicted.
   *
   * @example
   * ```ts
   * setInterval(() => perHost.prune(), 60_000).unref?.();
   * ```
   */
  prune(): number {
    const before = this.#entries.size;
    this.#sweep(this.#time.now(), null, this.#entries.size);
    return before - this.#entries.size;
  }

  #sweep(now: number, current: Entry<K, L> | null, limit = SWEEP_PER_GET): void {
    let entry = this.#oldest;
    for (let examined = 0; examined < limit && entry !== null && entry !== current; examined++) {
      const next = entry.next;
      const over = this.#entries.size > this.#maxKeys;
      const stale = now - entry.lastUsed >= this.#idleTimeout;
      if (!over && !stale) break; // LRU order: nothing older to find
      // Asked before unlinking, so a custom `isIdle()` that throws leaves the list intact.
      const atRest = this.#atRest(entry.limiter);
      this.#unlink(entry);
      if (atRest) {
        this.#evict(entry);
      } else {
        this.#append(entry); // busy: behind the others, so the next sweep looks further
      }
      entry = next;
    }
  }

  #append(entry: Entry<K, L>): void {
    entry.prev = this.#newest;
    entry.next = null;
    if (this.#newest === null) this.#oldest = entry;
    else this.#newest.next = entry;
    this.#newest = entry;
  }

  #unlink(entry: Entry<K, L>): void {
    if (entry.prev === null) this.#oldest = entry.next;
    else entry.prev.next = entry.next;
    if (entry.next === null) this.#newest = entry.prev;
    else entry.next.prev = entry.prev;
    entry.prev = entry.next = null;
  }
}
