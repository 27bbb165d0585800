/**
 * Counting what a limiter does, for `limiter.stats()` and `limiter.events` (see `events.ts`). The
 * counters are plain numbers on the limiter's queue, bumped where the gate and the limiter decide;
 * events are made only while their type has a listener.
 *
 * `waited` needs each waiter's arrival time, which a waiter does not carry (it would cost every
 * waiter a field): while a `grant` or `abort` listener exists, the queue keeps a side table of the
 * arrival times of its waiters (those already queued when the first such listener came count from
 * then), dropped again with the last listener.
 *
 * @module
 */
import { LimiterEvents } from "./events.ts";
import type { Policy } from "./policy.ts";
import type { Waiter, WaitQueue } from "./waiter.ts";

/**
 * A snapshot of a limiter's counters (see README "Stats and events").
 *
 * @example
 * ```ts
 * const { queued, inFlight, granted } = limiter.stats();
 * ```
 */
export interface LimiterStats {
  /** Callers waiting now. */
  readonly queued: number;
  /** Granted and not yet finished: scheduled tasks running, reservations not yet settled (not plain `acquire` grants). */
  readonly inFlight: number;
  /** Grants since creation (`acquire`, `schedule`, `tryAcquire`, reservations). */
  readonly granted: number;
  /** `maxWait` and `maxQueue` refusals since creation. */
  readonly refused: number;
  /** Waiters aborted while queued, since creation. */
  readonly aborted: number;
  /** Clock time (ms) until which it grants nothing, if paused now. */
  readonly pausedUntil: number | undefined;
  /** The current limit, for a limiter with one (not a combination, not a `ConcurrencyLimiter`). */
  readonly rate?: Rate;
}

/**
 * A limit: `limit` permits per `interval` ms.
 *
 * @example
 * ```ts
 * const rate: Rate = { limit: 10, interval: 1000 };
 * ```
 */
export interface Rate {
  /** Permits per interval. */
  readonly limit: number;
  /** The interval, in ms. */
  readonly interval: number;
}

/** Pause deadlines per policy (a pause of a member also pauses the combinations that include it). */
const pauses = new WeakMap<Policy, number>();

/**
 * Records that `policies` grant nothing before `until`.
 *
 * @example
 * ```ts
 * notePause(queue.policies, now + 5000);
 * ```
 */
export function notePause(policies: readonly Policy[], until: number): void {
  for (const policy of policies) if (!((pauses.get(policy) ?? -Infinity) >= until)) pauses.set(policy, until);
}

/**
 * When the pause in force on `policies` ends (`-Infinity`: none was ever recorded): a shorter pause
 * never shortens a longer one, so this is what a `pause` event reports as its `until`.
 *
 * @example
 * ```ts
 * pauseEnd(queue.policies); // 5000 after pause(5000) then pause(1000) at 0
 * ```
 */
export function pauseEnd(policies: readonly Policy[]): number {
  let until = -Infinity;
  for (const policy of policies) until = Math.max(until, pauses.get(policy) ?? -Infinity);
  return until;
}

/**
 * The snapshot of `queue`'s counters at gate time `now`.
 *
 * @example
 * ```ts
 * const stats = snapshot(queue, gate.now());
 * ```
 */
export function snapshot(queue: WaitQueue, now: number): LimiterStats {
  const until = pauseEnd(queue.policies);
  const pausedUntil = until > now ? until : undefined;
  const { size: queued, inFlight, granted, refused, aborted, rateLimit } = queue;
  if (rateLimit === undefined) return { queued, inFlight, granted, refused, aborted, pausedUntil };
  const rate = { limit: rateLimit, interval: queue.rateInterval };
  return { queued, inFlight, granted, refused, aborted, pausedUntil, rate };
}

/**
 * The events of `queue`'s limiter, made on first use; `now` reads gate time when a listener starts.
 *
 * @example
 * ```ts
 * const events = eventsOf(queue, () => gate.now());
 * ```
 */
export function eventsOf(queue: WaitQueue, now: () => number): LimiterEvents {
  if (queue.events !== null) return queue.events;
  const events = new LimiterEvents();
  events.onListening = (type) => {
    if (type !== "grant" && type !== "abort") return;
    const timed = events.listens("grant") || events.listens("abort");
    if (timed && queue.arrivals === null) {
      const arrivals = new Map<Waiter, number>();
      const t = now();
      for (const waiter of queue.waiters()) arrivals.set(waiter, t);
      queue.arrivals = arrivals;
    } else if (!timed) queue.arrivals = null;
  };
  return (queue.events = events);
}

/**
 * Counts a grant made at once (nobody queued, allowed now) and tells the listeners.
 *
 * @example
 * ```ts
 * grantedAtOnce(queue, 1);
 * ```
 */
export function grantedAtOnce(queue: WaitQueue, permits: number): void {
  queue.granted++;
  if (queue.events !== null && queue.events.listens("grant")) queue.events.emit("grant", { permits, waited: 0 });
}

/**
 * Counts a queued waiter's grant at `now` (during a scan); its event goes out when it settles.
 *
 * @example
 * ```ts
 * grantedInScan(queue, waiter, now);
 * ```
 */
export function grantedInScan(queue: WaitQueue, waiter: Waiter, now: number): void {
  queue.granted++;
  const arrivals = queue.arrivals;
  if (arrivals !== null) {
    const from = arrivals.get(waiter);
    if (from !== undefined) arrivals.set(waiter, now - from); // from now on: how long it waited
  }
}

/**
 * Tells the listeners of a grant when the waiter settles (in grant order, outside the scan).
 *
 * @example
 * ```ts
 * announceGrant(waiter);
 * ```
 */
export function announceGrant(waiter: Waiter): void {
  const queue = waiter.queue;
  const arrivals = queue.arrivals;
  if (arrivals === null) return;
  const waited = arrivals.get(waiter);
  arrivals.delete(waiter);
  if (waited !== undefined && queue.events!.listens("grant")) queue.events!.emit("grant", { permits: waiter.permits, waited });
}

/**
 * Counts an abort of a queued waiter at `now`; returns the event to dispatch once the gate is
 * consistent again, if anyone listens.
 *
 * @example
 * ```ts
 * const announce = abortedAt(queue, waiter, now);
 * ```
 */
export function abortedAt(queue: WaitQueue, waiter: Waiter, now: number): (() => void) | undefined {
  queue.aborted++;
  const arrivals = queue.arrivals;
  if (arrivals === null) return undefined;
  const from = arrivals.get(waiter);
  arrivals.delete(waiter);
  if (from === undefined || !queue.events!.listens("abort")) return undefined;
  const events = queue.events!;
  return () => events.emit("abort", { permits: waiter.permits, waited: now - from });
}

/**
 * Counts a refusal and tells the listeners.
 *
 * @example
 * ```ts
 * refused(queue, 1, "maxWait", 250);
 * ```
 */
export function refused(queue: WaitQueue, permits: number, reason: "maxWait" | "maxQueue", retryAfter?: number): void {
  queue.refused++;
  if (queue.events !== null && queue.events.listens("refuse")) {
    queue.events.emit("refuse", retryAfter === undefined ? { permits, reason } : { permits, reason, retryAfter });
  }
}

/**
 * Counts work granted and not yet finished (a running task; a reservation not yet settled): +1 when
 * it starts, −1 when it ends.
 *
 * @example
 * ```ts
 * addInFlight(queue, +1); // … then addInFlight(queue, -1) when it settles
 * ```
 */
export function addInFlight(queue: WaitQueue, delta: number): void {
  queue.inFlight += delta;
}

/**
 * Records a new current limit and tells the `ratechange` listeners (for live and adaptive limits).
 *
 * @example
 * ```ts
 * noteRate(queue, { limit: 5, interval: 1000 }, "setLimit");
 * ```
 */
export function noteRate(queue: WaitQueue, rate: Rate, reason: string): void {
  const previous = queue.rateLimit === undefined ? undefined : { limit: queue.rateLimit, interval: queue.rateInterval };
  queue.rateLimit = rate.limit;
  queue.rateInterval = rate.interval;
  if (queue.events !== null && queue.events.listens("ratechange")) {
    const { limit, interval } = rate;
    queue.events.emit("ratechange", previous === undefined ? { limit, interval, reason } : { limit, interval, previous, reason });
  }
}
