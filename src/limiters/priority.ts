/**
 * Priorities inside one limiter's queue. A request's `priority` (default 0, higher first) puts it in
 * a *level*: a FIFO of the waiters with that priority. Priority 0 is the queue's own list (no extra
 * object, no extra field per waiter: the default path stays as it was); other priorities get a
 * {@link Level} each, made when first used and dropped when empty.
 *
 * Which level goes next — aging, so that no priority starves: each level's front waiter has a
 * *rank*, `since − priority × aging`, where `since` is the time it reached the front of its level
 * (it arrived to an empty level, or the one before it left) and `aging` the
 * limiter's `priorityAging` (ms per level). The lowest rank goes first; a tie goes to the higher
 * priority, then to the older waiter. A rank is fixed once a waiter is at the front, so the order is exact in virtual time and
 * predictions can replay it. In words: a waiter at the front of its level is passed only by higher
 * priorities that reach the front of theirs less than `(their priority − its priority) × aging` ms
 * after it; once that long has passed, it goes first. Under a saturating stream of priority-1
 * requests, priority 0 still gets one grant per `aging` ms. With `aging = Infinity` priorities are
 * strict (the highest non-empty level always goes first; lower ones can starve).
 *
 * The one thing an abort changes: the waiter behind an aborted front of its level reaches the front
 * at the abort, so its aging starts then (knowing when it would have started without the aborted
 * waiter takes its arrival time, a field every waiter would pay for). Capacity is untouched, and
 * without priorities in play (`levels === null`) `since` is never read, so FIFO is exactly as before.
 * Inheriting the aborted waiter's `since` instead would let a caller that queues and aborts at a
 * high priority keep the level's rank old and jump later requests ahead of long-waiting ones.
 *
 * Ranks cost nothing per waiter: `since` is kept per level (one number), and a level's waiters need
 * no priority field since the level knows it. Between limiters of a domain (`combine`), a queue keeps
 * the place of its OLDEST waiter in the domain's arrival order, whichever of its waiters goes first:
 * priority reorders the callers of one limiter, never one limiter against another (see `gate.ts`).
 *
 * @module
 */
import { describeValue, expectNumber } from "../validate.ts";
import type { Waiter } from "./waiter.ts";

/**
 * The waiters of one non-default priority, in arrival order.
 *
 * @example
 * ```ts
 * const level: Level = { priority: 5, head: null, tail: null, since: now };
 * ```
 */
export interface Level {
  readonly priority: number;
  head: Waiter | null;
  tail: Waiter | null;
  /** When the current head reached the front of this level. */
  since: number;
}

/**
 * True when a level whose front has `(since, priority, seq)` goes before one with `(since2, …)`.
 *
 * @example
 * ```ts
 * ranksBefore(0, 1, 7, 500, 0, 3, 1000); // true: priority 1 at t=0 beats priority 0 at t=500
 * ```
 */
export function ranksBefore(
  since: number,
  priority: number,
  seq: number,
  since2: number,
  priority2: number,
  seq2: number,
  aging: number,
): boolean {
  if (aging !== Infinity) {
    const rank = since - priority * aging;
    const rank2 = since2 - priority2 * aging;
    if (rank !== rank2) return rank < rank2;
  }
  // Equal ranks (or strict priorities): the higher priority, then the older waiter — so that with
  // `priorityAging: 0` a priority breaks ties of arrival, as documented.
  if (priority !== priority2) return priority > priority2;
  return seq < seq2;
}

/**
 * Checks a `priority` option: a finite number.
 * @throws {TypeError | RangeError} naming `priority` and the value
 * @example
 * ```ts
 * checkPriority(2); // 2
 * ```
 */
export function checkPriority(value: unknown): number {
  expectNumber("priority", value);
  if (!Number.isFinite(value)) throw new RangeError(`\`priority\` must be a finite number, got ${describeValue(value)}`);
  return value;
}
