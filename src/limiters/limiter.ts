/**
 * The base class that binds a set of policies to the shared gate. Subclasses only choose their
 * policy; waiting, ordering, aborts, `maxWait`, `maxQueue` and `pause` are implemented once, here
 * and in `gate.ts`. The `Limiter` interface it implements and the options are in `limiter-types.ts`
 * (re-exported here).
 *
 * @module
 */
import { type Clock, systemClock } from "../clock.ts";
import { MaxWaitExceededError, QueueFullError } from "../errors.ts";
import {
  checkPermits,
  describeValue,
  nonNegativeFinite,
  nonNegativeIntegerOrInfinity,
  nonNegativeOrInfinity,
  optionalSignal,
  optionsObject,
  requireFunction,
} from "../validate.ts";
import { abortReason, Gate, RESOLVED, startTask, type Task, WaitQueue } from "./gate.ts";
import { type OnDone, Unstarted } from "./settle.ts";
import type { Policy } from "./policy.ts";
import { arrivalOf } from "./waiter.ts";
import { grantAhead, grantsOnArrival } from "./predict.ts";
import { type Dimensions, type Permits, type Reservation, type ReserveOptions, reserveOn } from "./reservation.ts";
import { checkPriority } from "./priority.ts";
import { READS_SIGNAL_LIKE } from "./signals.ts";
import type { LimiterEvents } from "./events.ts";
import { LIMITER_DEFAULTS } from "./defaults.ts";
import type { AcquireOptions, BaseLimiterOptions, Limiter, ScheduleOptions } from "./limiter-types.ts";
import { eventsOf, grantedAtOnce, type LimiterStats, notePause, pauseEnd, refused, snapshot } from "./stats.ts";

export type { AcquireOptions, BaseLimiterOptions, Limiter, ScheduleOptions };

/** The options every built-in limiter takes (`BaseLimiterOptions`), for each one's `onlyKnown` list. @internal */
export const BASE_OPTIONS = ["clock", "maxQueue", "maxWait", "priorityAging"] as const satisfies readonly (keyof BaseLimiterOptions)[];

/** Checks a `clock` option and falls back to {@link systemClock}. @internal */
export function resolveClock(clock: unknown): Clock {
  if (clock === undefined) return systemClock;
  const c = clock as Clock;
  if (typeof c !== "object" || c === null || typeof c.now !== "function" ||
    typeof c.setTimeout !== "function" || typeof c.clearTimeout !== "function") {
    throw new TypeError(`\`clock\` must be a Clock (now, setTimeout, clearTimeout), got ${describeValue(clock)}`);
  }
  return c;
}

/** @internal access to a built-in limiter's parts, for `combine` and `KeyedLimiter`. */
export const INTERNALS: unique symbol = Symbol("sluice.limiter.internals");

/** @internal */
export interface LimiterInternals {
  readonly policies: readonly Policy[];
  readonly queue: WaitQueue;
  readonly clock: Clock;
  /** Its queue's bounds and aging, for a combination made in its place (the fetch's `maxConcurrent`). */
  readonly bounds: { readonly maxQueue: number; readonly maxWait: number; readonly priorityAging: number };
  gate(): Gate;
  adopt(gate: Gate): void;
}

/**
 * Base of every built-in limiter: a set of policies, one FIFO queue and a gate shared with every
 * limiter it is combined with. Not meant to be subclassed by users; implement {@link Limiter}
 * instead for a custom limiter.
 *
 * @example
 * ```ts
 * import { GatedLimiter, SmoothLimiter } from "sluice";
 * new SmoothLimiter({ limit: 1 }) instanceof GatedLimiter; // true
 * ```
 */
export abstract class GatedLimiter implements Limiter {
  static {
    // Its gate reads only `aborted`, `reason` and the "abort" event of a signal (limiters/signals.ts).
    Object.defineProperty(this.prototype, READS_SIGNAL_LIKE, { value: true });
  }
  #gate: Gate;
  readonly #queue: WaitQueue;
  readonly #maxQueue: number;
  readonly #maxWait: number;
  /**
   * When a scheduled task's permits start to count, for policies that can tell (a strict window):
   * "start" — a queued task's permits are held at its grant and stamped when it starts, so start
   * times keep the limit however long a burst of tasks takes to get going; "completion" — held until
   * the task settles (`countFrom: "completion"`); "grant" — no such policy, they count at the grant.
   */
  readonly #countFrom: "grant" | "start" | "completion";
  /** True when a grant holds concurrency slots until its work ends (see `concurrency.ts`). */
  readonly #slots: boolean;

  /** @internal */
  readonly [INTERNALS]: LimiterInternals;

  /** Binds `policies` to a new gate; subclasses validate their own options first. */
  protected constructor(policies: readonly Policy[], options: BaseLimiterOptions) {
    const clock = resolveClock(options.clock);
    this.#maxQueue = nonNegativeIntegerOrInfinity("maxQueue", options.maxQueue ?? Infinity);
    this.#maxWait = nonNegativeOrInfinity("maxWait", options.maxWait ?? Infinity);
    this.#gate = new Gate(clock);
    this.#queue = new WaitQueue(policies);
    this.#countFrom = policies.some((p) => p.countsFromCompletion === true)
      ? "completion"
      : policies.some((p) => p.holdsUntilRelease === true)
      ? "start"
      : "grant";
    if (this.#countFrom !== "grant") this.#queue.countFrom = this.#countFrom;
    this.#slots = policies.some((p) => p.holdsUntilFinish === true);
    this.#queue.slots = this.#slots;
    // --- stats: the limit of a single-policy limiter (live changes report through `noteRate`); a
    // ConcurrencyLimiter's `limit` counts slots, not permits per interval: it has no rate ---
    const { limit, interval } = options as { limit?: unknown; interval?: unknown };
    if (policies.length === 1 && typeof limit === "number" && !this.#slots) {
      this.#queue.rateLimit = limit;
      this.#queue.rateInterval = typeof interval === "number" ? interval : LIMITER_DEFAULTS.interval;
    }
    // --- priorities ---
    if (options.priorityAging !== undefined) {
      this.#queue.aging = nonNegativeOrInfinity("priorityAging", options.priorityAging);
    }
    const self = this;
    this[INTERNALS] = {
      policies,
      queue: this.#queue,
      clock,
      bounds: { maxQueue: this.#maxQueue, maxWait: this.#maxWait, priorityAging: this.#queue.aging },
      gate: () => self.#root(),
      adopt: (gate) => {
        self.#gate = gate;
      },
    };
  }

  #root(): Gate {
    let gate = this.#gate;
    if (gate.forward !== null) this.#gate = gate = gate.root(); // path compression
    return gate;
  }

  /** How many callers are waiting on this limiter. */
  get queued(): number {
    return this.#queue.size;
  }

  /** Resolves when `permits` are granted (see {@link Limiter.acquire}). */
  acquire(permits: number = 1, options?: AcquireOptions): Promise<void> {
    this.#noSlots("acquire");
    return this.#acquire(permits, options) as Promise<void>;
  }

  #acquire(permits: number, options: AcquireOptions | undefined, task?: Task): Promise<unknown> {
    this.#checkPermits(permits);
    const opts = optionsObject("options", options);
    const signal = optionalSignal("signal", opts.signal);
    const maxWait = opts.maxWait === undefined ? this.#maxWait : nonNegativeOrInfinity("maxWait", opts.maxWait);
    const priority = opts.priority === undefined ? 0 : checkPriority(opts.priority);
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const gate = this.#root();
    const now = gate.now();
    gate.serveOverdue(now);
    // A task started just now (an overdue grant) may have aborted this caller's signal.
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const asked = task === undefined ? undefined : (opts as ScheduleOptions).countFrom;
    if (asked !== undefined && asked !== "completion") {
      throw new RangeError(`\`countFrom\` must be "completion" or undefined, got ${describeValue(asked)}`);
    }
    // A policy that can hold permits (a strict window) can hold them until completion for this task
    // alone; one that cannot (no window) counts at the grant whatever was asked.
    const countFrom = task === undefined ? "grant" : asked === "completion" && this.#countFrom !== "grant" ? "completion" : this.#countFrom;
    // Granted at once, a task starts now: only completion needs its permits held.
    const holdNow = countFrom === "completion";
    if (gate.tryTakeNow(this.#queue, permits, now, holdNow)) {
      grantedAtOnce(this.#queue, permits);
      if (task === undefined) return RESOLVED;
      return startTask(task, holdNow || this.#slots ? this.#releaser(permits, holdNow) : undefined, this.#queue);
    }
    if (maxWait !== Infinity) {
      const wait = gate.predict(this.#queue, permits, now, null, priority, maxWait);
      if (wait > maxWait) {
        refused(this.#queue, permits, "maxWait", wait);
        return Promise.reject(new MaxWaitExceededError(wait, maxWait));
      }
    }
    if (this.#queue.size >= this.#maxQueue && !grantsOnArrival(gate, this.#queue, permits, now, null, priority)) {
      refused(this.#queue, permits, "maxQueue");
      return Promise.reject(new QueueFullError(this.#maxQueue));
    }
    // A held task's permits are stamped at its start, or released at its completion, by the gate
    // (see the queue's `countFrom`).
    return gate.enqueue(this.#queue, permits, now, signal, countFrom !== "grant", task, priority, arrivalOf(opts), countFrom === "completion");
  }

  /** Releases permits held until a task completes (`release`) and the concurrency slots it holds. */
  #releaser(permits: number, release: boolean): OnDone {
    const policies = this[INTERNALS].policies;
    // A task that never started (`Unstarted`: its caller left at the grant) gives its grant back.
    if (!this.#slots) return (outcome) => outcome instanceof Unstarted ? this.#root().unstarted(policies, permits, true) : this.#root().release(policies, permits);
    return (outcome) => outcome instanceof Unstarted ? this.#root().unstarted(policies, permits, release) : this.#root().finish(policies, permits, release);
  }

  /** Takes `permits` only if free now; else the wait in ms (see {@link Limiter.tryAcquire}). */
  tryAcquire(permits: number = 1): number {
    this.#noSlots("tryAcquire");
    this.#checkPermits(permits);
    const gate = this.#root();
    const now = gate.now();
    gate.serveOverdue(now);
    if (gate.tryTakeNow(this.#queue, permits, now, false)) {
      grantedAtOnce(this.#queue, permits);
      return 0;
    }
    const wait = gate.predict(this.#queue, permits, now);
    // 0 with waiters queued: they wait at a lower priority and this ranks ahead of them. Granted as
    // acquire() would be, or 0 would promise permits it never took (red-team, 2026-11-27: 50 of 50
    // answered 0 against a window of 10 with 5 left).
    if (wait > 0) return wait;
    return grantAhead(gate, this.#queue, permits, now) ? 0 : Math.max(gate.predict(this.#queue, permits, now), 1);
  }

  /** Runs `task` once permits are granted (see {@link Limiter.schedule}). */
  schedule<T>(task: () => T | PromiseLike<T>, options?: ScheduleOptions): Promise<T> {
    requireFunction("task", task);
    const permits = options?.permits ?? 1;
    // The task runs at its grant, started by the gate (see TaskWaiter); see #countFrom for when its
    // permits start to count.
    return this.#acquire(permits, options, task) as Promise<T>;
  }

  /**
   * Grants nothing for `ms` (see {@link Limiter.pause}); `reason` goes to the `pause` event.
   * @example
   * ```ts
   * limiter.pause(5000, "429");
   * ```
   */
  pause(ms: number, reason?: string): void {
    nonNegativeFinite("ms", ms);
    if (reason !== undefined && typeof reason !== "string") {
      throw new TypeError(`\`reason\` must be a string, got ${describeValue(reason)}`);
    }
    if (ms === 0) return;
    const policies = this[INTERNALS].policies;
    notePause(policies, this.#root().pause(policies, ms));
    // --- stats and events ---
    const events = this.#queue.events;
    if (events !== null && events.listens("pause")) {
      // `until` is when the pause in force ends: a shorter pause does not shorten a longer one.
      const until = pauseEnd(policies);
      events.emit("pause", reason === undefined ? { ms, until } : { ms, until, reason });
    }
  }

  // --- stats and events (see stats.ts, events.ts) ---

  /**
   * A snapshot of this limiter's counters: callers queued, tasks in flight, grants, refusals and
   * aborts since creation, the pause in force, the current limit. Counts the requests made on this
   * limiter object (a combination counts its own, not its members').
   * @example
   * ```ts
   * const { queued, granted, refused } = limiter.stats();
   * ```
   */
  stats(): LimiterStats {
    return snapshot(this.#queue, this.#root().now());
  }

  /**
   * Events of this limiter (`grant`, `refuse`, `abort`, `pause`, `ratechange`), as `CustomEvent`s
   * whose `detail` says what happened; nothing is made while a type has no listener.
   * @example
   * ```ts
   * limiter.events.addEventListener("refuse", (e) => console.warn((e as CustomEvent).detail.reason));
   * ```
   */
  get events(): LimiterEvents {
    return eventsOf(this.#queue, () => this.#root().now());
  }

  /**
   * True when nothing is queued or in flight (no task running, no reservation open) and the limiter's
   * state is indistinguishable from a fresh one's, so forgetting it (e.g. evicting an idle key) cannot
   * let more through than the limit allows, nor lose a settle or an `inFlight` count.
   */
  isIdle(): boolean {
    if (this.#queue.size > 0 || this.#queue.inFlight > 0) return false;
    const now = this.#root().now();
    return this[INTERNALS].policies.every((p) => p.isAtRest(now));
  }

  // ── Reservations and concurrency slots (issues 12 and 13; see reservation.ts, concurrency.ts) ──

  /**
   * Waits like {@link GatedLimiter.acquire} and resolves to a {@link Reservation}: settle it when the
   * real cost is known (`settle(actual)` refunds or records debt, `cancel()` gives everything back,
   * `release()` keeps the cost as reserved and frees concurrency slots); never settled, it counts in
   * full. `permits` is a number, or on a combination with named dimensions a record of them
   * (`{ requests: 1, tokens: 1500 }`; a dimension left out asks 0). Reservations count from their
   * grant (also on a `WindowLimiter` with `countFrom: "completion"`).
   * @throws {RangeError | TypeError} when `permits` or an option is invalid, or asks more of a
   * dimension than it can ever grant (naming it)
   *
   * @example
   * ```ts
   * const r = await limiter.reserve(10); // the most this job may use
   * r.settle(await runJob()); // what it used: the rest comes back, or the excess is debt
   * ```
   */
  reserve(permits: Permits = 1, options?: ReserveOptions): Promise<Reservation> {
    const parts = this[INTERNALS];
    return reserveOn({
      queue: parts.queue,
      gate: parts.gate,
      maxWait: this.#maxWait,
      maxQueue: this.#maxQueue,
      maxPermits: this.#maxPermitsNow(),
      dimensions: this.dimensions(),
    }, permits, options);
  }

  /** @internal a combination's named dimensions (see `combine`), or null. */
  protected dimensions(): Dimensions | null {
    return null;
  }

  /** A grant that holds concurrency slots needs something to end it: `acquire` has nothing. */
  #noSlots(method: string): void {
    if (this.#slots) {
      throw new TypeError(
        `\`${method}()\` cannot be used on a limiter that holds concurrency slots (nothing would free them): use \`schedule(task)\` or \`reserve()\` and its \`release()\``,
      );
    }
  }

  // ── end of reservations and concurrency slots ──

  #checkPermits(permits: unknown): asserts permits is number {
    checkPermits(permits, this.#maxPermitsNow());
  }

  /** The largest request this limiter can ever grant, read live: `setLimit` may change it. */
  #maxPermitsNow(): number {
    const policies = this[INTERNALS].policies;
    let max = Infinity;
    for (let i = 0; i < policies.length; i++) max = Math.min(max, policies[i]!.maxPermits);
    return max;
  }
}
