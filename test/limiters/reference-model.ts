/**
 * A deliberately naive reference model of the limiters and the gate's grant rule, written
 * independently of `src/`: every decision replays the full grant log, and time advances from event to
 * event. Slow and obviously right; the property tests compare the real limiters against it.
 */

export type PolicySpec =
  | { kind: "window"; limit: number; interval: number }
  | { kind: "smooth"; limit: number; interval: number; burst: number }
  | { kind: "fixed"; limit: number; interval: number };

export interface RequestSpec {
  arrival: number;
  /** Which limiter object (queue) the request is made on. */
  queue: number;
  permits: number;
  /** Abort time, or undefined: each its own instant just past a half-integer, so it never ties with an arrival, a policy change or another abort. */
  abortAt?: number;
  /** Higher first within its limiter (default 0). */
  priority?: number;
}

export interface Outcome {
  grantedAt?: number;
  aborted?: boolean;
}

export type Grant = { at: number; permits: number };

export function allowed(spec: PolicySpec, log: Grant[], permits: number, t: number): boolean {
  switch (spec.kind) {
    case "window": {
      const inWindow = log.filter((g) => g.at + spec.interval > t).reduce((s, g) => s + g.permits, 0);
      return inWindow + permits <= spec.limit;
    }
    case "fixed": {
      const k = Math.floor(t / spec.interval);
      const inWindow = log.filter((g) => Math.floor(g.at / spec.interval) === k).reduce((s, g) => s + g.permits, 0);
      return inWindow + permits <= spec.limit;
    }
    case "smooth":
      return smoothNextFree(spec, log) <= t;
  }
}

/** A smooth policy's next free instant after the grants of `log` (in time order), from full at 0. */
export function smoothNextFree(spec: Extract<PolicySpec, { kind: "smooth" }>, log: Grant[]): number {
  const T = spec.interval / spec.limit;
  let next = -spec.burst * T; // starts full at t=0
  for (const g of log) next = Math.max(next, g.at - spec.burst * T) + g.permits * T;
  return next;
}

/** Times after `t` at which a policy's answer may change. */
export function changeTimes(spec: PolicySpec, log: Grant[], t: number): number[] {
  switch (spec.kind) {
    case "window":
      return log.map((g) => g.at + spec.interval).filter((x) => x > t);
    case "fixed":
      return [(Math.floor(t / spec.interval) + 1) * spec.interval];
    case "smooth": {
      const next = smoothNextFree(spec, log);
      return next > t ? [next] : [];
    }
  }
}

/** The earliest time ≥ t at which `permits` are allowed by one policy, trying every time its answer may change. */
export function earliestAllowed(spec: PolicySpec, log: Grant[], permits: number, t: number): number {
  const candidates = [t, ...changeTimes(spec, log, t)].sort((a, b) => a - b);
  for (const c of candidates) if (allowed(spec, log, permits, c)) return c;
  return Infinity;
}

/**
 * Runs the grant rule: at each instant, visit pending requests in arrival order. A request behind an
 * earlier pending request on the same limiter waits for it and takes no part. Otherwise it is granted
 * when all its policies allow it and the grant would not delay any earlier stopped request past its
 * reservation: on every policy they share, that earlier request must still be allowed by its reserved
 * time (or now, if that is past). A stopped request reserves the time at which all its policies allow
 * it, as things stand, or — when they allow it now and only earlier reservations stop it — the latest
 * time among those it would delay (backfilling: later requests use what the earlier ones do not need
 * in time).
 *
 * Reservation refresh: reservations are never kept from one pass to the next. Every pass — at every
 * instant, and again after every grant — recomputes each stopped request's reservation from the
 * state as it is then. So a request stopped only by earlier reservations (its policies allow it now),
 * whose reservation is the latest of theirs, reserves its own capacity time instead once a take
 * leaves its policies short now, and a request checked after that take is checked against that.
 *
 * `counts`, when given, counts the reservations of requests stopped only by earlier reservations
 * ("conflicted") that the next pass recomputed to a different time while the request still waited:
 * `shrank` when its policies no longer allowed it then (it reserved its own capacity time), `grew`
 * otherwise — the cases in which a kept (stale) reservation would differ from a fresh one.
 */
export function simulate(
  policies: PolicySpec[],
  queues: number[][],
  requests: RequestSpec[],
  horizon: number,
  aging = 1000,
  counts?: { shrank: number; grew: number },
): Outcome[] {
  const logs: Grant[][] = policies.map(() => []);
  const outcomes: Outcome[] = requests.map(() => ({}));
  const order = requests.map((_, i) => i).sort((a, b) => requests[a]!.arrival - requests[b]!.arrival || a - b);
  const position = new Map(order.map((i, k) => [i, k]));
  const left: number[] = []; // per request: when it was granted or aborted
  const prio = (i: number) => requests[i]!.priority ?? 0;
  /** Per request: the reservation of a pass in which it was stopped only by earlier reservations. */
  const conflicted = new Map<number, number>();
  /**
   * Priorities: the front of a limiter is, among the first pending request of each priority, the one
   * with the lowest `since − priority × aging` (on a tie the higher priority, then the older), where `since` is when it reached the
   * front of its priority (arrived, or its predecessor of that priority left). Strict order when
   * aging = ∞.
   */
  const frontOf = (q: number, t: number): number => {
    const heads = new Map<number, number>();
    for (const i of order) {
      const r = requests[i]!;
      const o = outcomes[i]!;
      if (r.queue !== q || !visible(i, t) || o.grantedAt !== undefined || o.aborted) continue;
      if (!heads.has(prio(i))) heads.set(prio(i), i);
    }
    const sinceOf = (i: number): number => {
      const r = requests[i]!;
      let since = r.arrival;
      for (const j of order) {
        if (position.get(j)! >= position.get(i)!) break;
        if (requests[j]!.queue === q && prio(j) === prio(i)) since = Math.max(since, left[j]!);
      }
      return since;
    };
    let best = -1;
    for (const i of heads.values()) {
      if (best === -1) {
        best = i;
        continue;
      }
      const [a, b] = [i, best];
      let before: boolean;
      if (aging === Infinity) before = prio(a) !== prio(b) ? prio(a) > prio(b) : position.get(a)! < position.get(b)!;
      else {
        const ra = sinceOf(a) - prio(a) * aging;
        const rb = sinceOf(b) - prio(b) * aging;
        before = ra !== rb ? ra < rb : prio(a) !== prio(b) ? prio(a) > prio(b) : position.get(a)! < position.get(b)!;
      }
      if (before) best = i;
    }
    return best;
  };
  let t = 0;
  /**
   * Requests that have arrived by the pass: those before t, and those at t up to `limit` (in arrival
   * order). Grants due at t go before the arrivals at t, which come one by one, each with its pass —
   * as a newcomer at t is considered after the waiters already due (with priorities, the order shows).
   */
  let limit = Infinity;
  const visible = (i: number, t: number) => requests[i]!.arrival < t || (requests[i]!.arrival === t && position.get(i)! < limit);
  const pass = (): void => {
    for (;;) {
      let grantedAny = false;
      const reservations: Array<{ policies: number[]; permits: number; by: number }> = [];
      for (const next of order) {
        const q = requests[next]!;
        const qo = outcomes[next]!;
        if (!visible(next, t) || qo.grantedAt !== undefined || qo.aborted) continue;
        // FIFO within a limiter (and priority): a request behind another on the same limiter waits for
        // it. The limiter's place in the pass is its front's own arrival (the one its priorities put
        // first), never an older request's that the front passed.
        const i = frontOf(q.queue, t);
        if (i !== next) continue;
        const r = requests[i]!;
        const o = outcomes[i]!;
        const ps = queues[r.queue]!;
        const allowedNow = ps.every((p) => allowed(policies[p]!, logs[p]!, r.permits, t));
        const delayed = reservations.filter((res) =>
          ps.some((p) =>
            res.policies.includes(p) &&
            earliestAllowed(policies[p]!, [...logs[p]!, { at: t, permits: r.permits }], res.permits, t) > Math.max(res.by, t)
          )
        );
        if (allowedNow && delayed.length === 0) {
          for (const p of ps) logs[p]!.push({ at: t, permits: r.permits });
          o.grantedAt = t;
          left[i] = t;
          grantedAny = true;
          break; // restart the pass: the naive way, from the first pending request
        }
        // Its time: when all its policies allow it; if they do now, not before the earlier requests
        // it would delay are granted (at their reserved times).
        const own = Math.max(t, ...ps.map((p) => earliestAllowed(policies[p]!, logs[p]!, r.permits, t)));
        const by = allowedNow ? Math.max(own, ...delayed.map((res) => res.by)) : own;
        reservations.push({ policies: ps, permits: r.permits, by });
        const before = conflicted.get(i);
        if (counts !== undefined && before !== undefined && before !== by) {
          if (allowedNow) counts.grew++;
          else counts.shrank++;
        }
        if (allowedNow) conflicted.set(i, by);
        else conflicted.delete(i);
      }
      if (!grantedAny) break;
    }
  };
  while (t <= horizon) {
    const arriving = order.filter((i) => requests[i]!.arrival === t);
    limit = arriving.length === 0 ? Infinity : position.get(arriving[0]!)!;
    pass();
    for (const i of arriving) {
      limit = position.get(i)! + 1;
      pass();
    }
    limit = Infinity;
    // Next event: an arrival, an abort, or a policy change.
    const candidates: number[] = [];
    for (const [i, r] of requests.entries()) {
      const o = outcomes[i]!;
      if (o.grantedAt !== undefined || o.aborted) continue;
      if (r.arrival > t) candidates.push(r.arrival);
      if (r.abortAt !== undefined) candidates.push(r.abortAt);
    }
    policies.forEach((spec, p) => candidates.push(...changeTimes(spec, logs[p]!, t)));
    const next = Math.min(...candidates.filter((x) => x > t));
    if (!Number.isFinite(next)) break;
    t = next;
    for (const [i, r] of requests.entries()) {
      const o = outcomes[i]!;
      if (r.abortAt === t && o.grantedAt === undefined && r.arrival <= t) {
        o.aborted = true;
        left[i] = t;
      }
    }
  }
  return outcomes;
}
