/**
 * Predicting a wait: the grant rule run forward in time on copies of the policies, over the real
 * waiters (walked without copying) plus a probe request.
 *
 * @module
 */
import type { Gate } from "./gate.ts";
import type { Policy } from "./policy.ts";
import { ranksBefore } from "./priority.ts";
import { amountAt, newEpoch, type ScanQueue, scanQueues } from "./scan.ts";
import { Waiter, type WaitQueue } from "./waiter.ts";

/** A queue seen by a prediction: walks the real waiters without copying, then a probe request. */
export class ProbeQueue implements ScanQueue {
  readonly policies: readonly Policy[];
  cursor: Waiter | null;
  probe: number;
  readonly probeAmounts: readonly number[] | null;

  constructor(policies: readonly Policy[], first: Waiter | null, probe: number, probeAmounts: readonly number[] | null = null) {
    this.policies = policies;
    this.cursor = first;
    this.probe = probe;
    this.probeAmounts = probeAmounts;
  }
  isEmpty(): boolean {
    return this.cursor === null && this.probe === 0;
  }
  headSeq(): number {
    return this.cursor === null ? Infinity : this.cursor.seq;
  }
  headPermits(): number {
    return this.cursor === null ? this.probe : this.cursor.permits;
  }
  headAmounts(): readonly number[] | null {
    return this.cursor === null ? this.probeAmounts : this.cursor.amounts();
  }
  headHolds(): boolean {
    return false; // a prediction assumes work completes at once: a lower bound
  }
}

/** One priority level of a {@link LevelledProbe}: its real waiters, then maybe the probe. */
interface ProbeLevel {
  readonly priority: number;
  cursor: Waiter | null;
  probe: number;
  since: number;
}

/**
 * A queue with priorities seen by a prediction: each level walks its real waiters without copying
 * (the probe at the end of its own level), and the front is chosen by rank as the real queue does
 * (see `priority.ts`), with each level's `since` moved to the simulated grant time.
 *
 * @example
 * ```ts
 * const probe = new LevelledProbe(copies, queue, 1, 5, now); // 1 permit at priority 5, asked now
 * ```
 */
export class LevelledProbe implements ScanQueue {
  readonly policies: readonly Policy[];
  readonly #aging: number;
  readonly #levels: ProbeLevel[] = [];
  readonly #probeAmounts: readonly number[] | null;
  /** Set by the simulation before each pass: the time a grant happens at. */
  now: number;

  constructor(
    policies: readonly Policy[],
    queue: WaitQueue,
    probe: number,
    priority: number,
    now: number,
    probeAmounts: readonly number[] | null = null,
  ) {
    this.policies = policies;
    this.#probeAmounts = probeAmounts;
    this.#aging = queue.aging;
    this.now = now;
    const levels = this.#levels;
    levels.push({ priority: 0, cursor: queue.head, probe: 0, since: queue.since });
    for (const level of queue.levels ?? []) levels.push({ priority: level.priority, cursor: level.head, probe: 0, since: level.since });
    if (probe > 0) {
      let level = levels.find((l) => l.priority === priority);
      if (level === undefined) levels.push((level = { priority, cursor: null, probe: 0, since: now }));
      else if (level.cursor === null) level.since = now;
      level.probe = probe;
    }
  }

  #front(): ProbeLevel | undefined {
    let best: ProbeLevel | undefined;
    for (const level of this.#levels) {
      if (level.cursor === null && level.probe === 0) continue;
      if (best === undefined || ranksBefore(level.since, level.priority, seqOf(level), best.since, best.priority, seqOf(best), this.#aging)) {
        best = level;
      }
    }
    return best;
  }

  isEmpty(): boolean {
    return this.#front() === undefined;
  }
  /** The front's arrival, as the live queue orders itself (the probe arrives last: `Infinity`). */
  headSeq(): number {
    const level = this.#front();
    return level === undefined ? Infinity : seqOf(level);
  }
  headPermits(): number {
    const level = this.#front()!;
    return level.cursor === null ? level.probe : level.cursor.permits;
  }
  headAmounts(): readonly number[] | null {
    const level = this.#front()!;
    return level.cursor === null ? this.#probeAmounts : level.cursor.amounts();
  }
  headHolds(): boolean {
    return false;
  }

  /** Grants the front at `this.now`; true when it was the probe. */
  grant(): boolean {
    const level = this.#front()!;
    level.since = this.now;
    if (level.cursor !== null) {
      level.cursor = level.cursor.next;
      return false;
    }
    level.probe = 0;
    return true;
  }
}

function seqOf(level: ProbeLevel): number {
  return level.cursor === null ? Infinity : level.cursor.seq;
}

/**
 * A prediction cache for a domain with one queue: the state of copies of its policies after the
 * simulated grants of every waiter up to `last`, and the time of the last one. With one queue the
 * rule is plain FIFO, and every policy, once it allows a request, keeps allowing it while nothing is
 * taken; so a waiter is granted at the latest `earliest` of its policies, at or after its predecessor.
 * A request appended at the tail is then predicted in O(1) (plus the waiters queued since the last
 * prediction, each simulated once), instead of re-simulating the whole queue: n callers with
 * `maxWait` cost O(n), not O(n²). The gate drops the cache on anything else that changes the domain.
 *
 * @example
 * ```ts
 * const tail = new TailCache(queue, now);
 * const wait = tail.predict(1, now); // ms until 1 permit asked now would be granted
 * ```
 */
export class TailCache {
  readonly queue: WaitQueue;
  readonly #copies: Policy[];
  #last: Waiter | null = null;
  #t: number;
  /** When the copies were made, if work was in flight then (the copies assume it ended at that time). */
  readonly #heldAt: number;

  constructor(queue: WaitQueue, now: number) {
    this.queue = queue;
    this.#copies = queue.policies.map((p) => p.clone(now));
    this.#t = now;
    this.#heldAt = queue.policies.some((p) => p.holding === true) ? now : Infinity;
  }

  /**
   * How much a prediction made at `now` may fall short of a fresh one: the copies assume the work
   * in flight when they were made ended then, not at `now` as a fresh copy would, and every grant
   * after it moves by at most that difference. 0 when nothing was in flight.
   */
  staleBy(now: number): number {
    return now > this.#heldAt ? now - this.#heldAt : 0;
  }

  /** The wait in ms for `permits` asked now at the tail of the queue. */
  predict(permits: number, now: number, amounts: readonly number[] | null = null): number {
    const copies = this.#copies;
    for (let w = this.#last === null ? this.queue.head : this.#last.next; w !== null; w = w.next) {
      const own = w.amounts();
      const at = latest(copies, w.permits, this.#t, own);
      if (at === Infinity) return Infinity;
      for (let i = 0; i < copies.length; i++) {
        const n = amountAt(own, i, w.permits);
        if (n !== 0) copies[i]!.take(n, at, false);
      }
      this.#t = at;
      this.#last = w;
    }
    const start = Math.max(this.#t, now);
    return latest(copies, permits, start, amounts) - now;
  }
}

/** The latest of the policies' `earliest` times for `permits` from `t`: when all of them allow it. */
function latest(policies: readonly Policy[], permits: number, t: number, amounts: readonly number[] | null): number {
  let at = t;
  for (let i = 0; i < policies.length; i++) {
    const n = amountAt(amounts, i, permits);
    if (n === 0) continue;
    const e = policies[i]!.earliest(n, t);
    if (e > at) at = e;
  }
  return at;
}

/**
 * The wait in ms before `permits` asked of `queue` now would be granted: the grant rule run forward
 * in time on copies of the policies, over every waiter of the domain (`active`) and the request.
 *
 * @example
 * ```ts
 * const wait = simulate(gate.active, queue, 1, now);
 * ```
 */
export function simulate(
  active: ReadonlySet<WaitQueue>,
  queue: WaitQueue,
  permits: number,
  now: number,
  amounts: readonly number[] | null = null,
  priority = 0,
): number {
  const policies = queue.policies;
  const copies = new Map<Policy, Policy>();
  // Whether the request predicted asks the policy copied (see `Policy.clone`).
  const copy = (p: Policy): Policy => {
    let c = copies.get(p);
    if (c === undefined) copies.set(p, (c = p.clone(now, policies.includes(p))));
    return c;
  };
  const queues: Array<ProbeQueue | LevelledProbe> = [];
  const levelled: LevelledProbe[] = [];
  let target: ProbeQueue | LevelledProbe | undefined;
  const probeOf = (q: WaitQueue, probe: number): ProbeQueue | LevelledProbe => {
    const own = probe === 0 ? null : amounts;
    if (q.levels === null && (probe === 0 || priority === 0)) return new ProbeQueue(q.policies.map(copy), q.head, probe, own);
    const p = new LevelledProbe(q.policies.map(copy), q, probe, priority, now, own);
    levelled.push(p);
    return p;
  };
  for (const q of active) {
    const probe = probeOf(q, q === queue ? permits : 0);
    if (q === queue) target = probe;
    queues.push(probe);
  }
  if (target === undefined) queues.push((target = probeOf(queue, permits)));
  let t = now;
  let granted = false;
  const onGrant = (q: ScanQueue): void => {
    if (q instanceof LevelledProbe) {
      if (q.grant()) granted = q === target;
      return;
    }
    const p = q as ProbeQueue;
    if (p.cursor !== null) p.cursor = p.cursor.next;
    else {
      p.probe = 0;
      granted = p === target;
    }
  };
  // Each step grants at least the first stopped waiter (nothing ahead of it changes), so this ends.
  for (;;) {
    for (const p of levelled) p.now = t;
    const wake = scanQueues(queues, t, newEpoch(), onGrant, new Map());
    if (granted) return t - now;
    if (wake === Infinity) return Infinity;
    t = wake;
  }
}

/**
 * Whether a newcomer at `priority` would be granted at once although `queue` has waiters: only one
 * whose rank puts it ahead of them can be. Such a caller never waits, so a full `maxQueue` does not
 * refuse it (enqueued, it is granted by the scan its arrival triggers).
 *
 * @example
 * ```ts
 * if (queue.size >= maxQueue && !grantsOnArrival(gate, queue, permits, now, null, priority)) refuse();
 * ```
 */
export function grantsOnArrival(
  gate: Gate,
  queue: WaitQueue,
  permits: number,
  now: number,
  amounts: readonly number[] | null,
  priority: number,
): boolean {
  // Without priorities in play a newcomer at 0 or below goes last, behind a front that waits.
  if (priority <= 0 && queue.levels === null) return false;
  // Whatever its rank, it goes now only if every policy allows it now. (The prediction alone is a
  // lower bound: it assumes slots in flight end at once, and answered 0 with every slot busy —
  // a ConcurrencyLimiter's `maxQueue` let any number queue once priorities were in play.)
  const policies = queue.policies;
  for (let i = 0; i < policies.length; i++) {
    const n = amountAt(amounts, i, permits);
    if (n !== 0 && policies[i]!.earliest(n, now) > now) return false;
  }
  return gate.predict(queue, permits, now, amounts, priority, 0) === 0;
}

/** `tryAcquire`'s stand-in in the queue: it learns whether the scan its arrival triggered granted it. */
class AheadWaiter extends Waiter {
  done = false;
  override granted(_now: number): void {
    this.done = true;
  }
}

/**
 * `tryAcquire` with waiters queued at a lower priority: a newcomer at 0 ranks ahead of them, and
 * when it fits now `acquire()` grants it at once — so `tryAcquire` takes it the same way (queued and
 * granted by the scan its arrival triggers, counted and told as a grant that waited 0). Only after
 * {@link Gate.predict} answered 0 for it. Never leaves it queued: false, and nothing taken, if the
 * scan did not grant it.
 *
 * @example
 * ```ts
 * if (gate.predict(queue, 1, now) === 0 && grantAhead(gate, queue, 1, now)) return 0;
 * ```
 */
export function grantAhead(gate: Gate, queue: WaitQueue, permits: number, now: number): boolean {
  const waiter = new AheadWaiter(permits, queue, false);
  void gate.enqueueWaiter(waiter, now, undefined, 0);
  if (waiter.done) return true;
  gate.withdraw(waiter, now);
  return false;
}
