/**
 * The server's view of one budget, as its rate-limit headers last described it: a token bucket whose
 * level is set from `remaining` (minus our own requests the server had not counted yet), refilling
 * until full at the reported reset, and drawn down by every grant until the next response says more.
 *
 * Why it exists beside the local window: a profile settles its window down to `usage`, which assumes
 * the server gives back what a request did not use. OpenAI counts `max(max_tokens, estimate)` up front
 * and does not document a refund; a server that keeps that charge refuses what the settled window
 * admits. The headers say what the server really holds, whichever it does, so the grant needs both:
 * the window (our own limits, refunds applied) and this mirror (what the server has left).
 *
 * Before the first response with headers the level is unknown and this grants everything: the window
 * alone decides. Refunds of a settle are ignored here (only the next headers can say whether the
 * server gave anything back); debt is taken at once.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { GatedLimiter, INTERNALS } from "../limiters/limiter.ts";
import type { Policy } from "../limiters/policy.ts";

/** Tolerance of level comparisons: float refills must not leave a grant 1e-12 tokens short. */
const EPSILON = 1e-9;

/**
 * @internal the mirror's policy: a token bucket whose state the headers overwrite.
 *
 * @example
 * ```ts
 * const policy = new ServerBudgetPolicy();
 * policy.sync(100, 1000, 1 / 60, 0); // 100 left at t = 0, 1000 a minute
 * policy.earliest(160, 0);           // 3600: 60 more tokens at 1/60 per ms
 * ```
 */
export class ServerBudgetPolicy implements Policy {
  heldEpoch = 0;
  /** Any size: a request larger than the server's limit is the local window's to refuse. */
  readonly maxPermits = Infinity;
  /** Permits taken ever (every grant, also those the headers later accounted for). */
  taken = 0;
  /** Called before each take with the permits and the time, to note a grant's place. */
  onTake: ((permits: number, at: number) => void) | undefined = undefined;
  #level = Infinity;
  #at = 0;
  #rate = 0;
  #capacity = Infinity;
  #pausedUntil = -Infinity;

  /** The level at `now` (Infinity while unknown), refilled from the last change and capped. */
  levelAt(now: number): number {
    if (this.#level === Infinity) return Infinity;
    return Math.min(this.#capacity, this.#level + Math.max(0, now - this.#at) * this.#rate);
  }

  earliest(permits: number, now: number): number {
    const at = this.#pausedUntil > now ? this.#pausedUntil : now;
    const level = this.levelAt(at);
    // More than a full bucket: wait until it is full, then go into debt (a refusal is the window's).
    const need = Math.min(permits, this.#capacity);
    if (level >= need - EPSILON) return at;
    if (!(this.#rate > 0)) return Infinity;
    // Rounded up to a whole ms: never earlier than the refill allows, and no float dust in the timers.
    return Math.ceil(at + (need - level) / this.#rate);
  }

  take(permits: number, at: number): void {
    this.onTake?.(permits, at);
    this.taken += permits;
    if (this.#level === Infinity) return;
    this.#level = this.levelAt(at) - permits;
    this.#at = Math.max(this.#at, at);
  }

  /** A refund says nothing about the server (the next headers will); debt is taken now. */
  adjust(delta: number, _grantedAt: number, _mark: number, now: number): void {
    if (delta > 0) this.take(delta, now);
  }

  /** Sets the state: `level` now, refilling at `rate` per ms up to `capacity`. */
  sync(level: number, capacity: number, rate: number, now: number): void {
    this.#level = Math.min(level, capacity);
    this.#capacity = capacity;
    this.#rate = rate;
    this.#at = now;
  }

  pause(until: number): void {
    if (until > this.#pausedUntil) this.#pausedUntil = until;
  }

  isAtRest(now: number): boolean {
    return this.#pausedUntil <= now && this.levelAt(now) >= this.#capacity - EPSILON;
  }

  clone(now: number): ServerBudgetPolicy {
    const copy = new ServerBudgetPolicy();
    copy.taken = this.taken;
    copy.#level = this.levelAt(now);
    copy.#at = now;
    copy.#rate = this.#rate;
    copy.#capacity = this.#capacity;
    copy.#pausedUntil = this.#pausedUntil;
    return copy;
  }
}

/**
 * A limiter holding a {@link ServerBudgetPolicy}: combined beside a budget's window, it grants only
 * what the server's last headers leave. @internal
 *
 * @example
 * ```ts
 * const mirror = new ServerBudget(clock);
 * const tokens = combine(new WindowLimiter({ limit: 30_000, interval: 60_000, clock }), mirror);
 * mirror.sync({ level: 1200, capacity: 30_000, rate: 0.5 }); // re-times the waiters
 * ```
 */
export class ServerBudget extends GatedLimiter {
  readonly policy: ServerBudgetPolicy;

  constructor(clock: Clock | undefined) {
    const policy = new ServerBudgetPolicy();
    super([policy], clock === undefined ? {} : { clock });
    this.policy = policy;
  }

  /** Overwrites the state now and re-times the queued callers (as `setLimit` does). */
  sync(state: { readonly level: number; readonly capacity: number; readonly rate: number }): void {
    const gate = this[INTERNALS].gate();
    const now = gate.now();
    gate.serveOverdue(now);
    this.policy.sync(state.level, state.capacity, state.rate, now);
    gate.scan(now);
  }
}
