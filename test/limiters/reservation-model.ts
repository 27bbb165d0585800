/**
 * A naive reference model of reservations that settle, over the policies of `reference-model.ts`
 * (whose `allowed`/`earliestAllowed` it reuses): per-policy amounts (named dimensions, 0 = not
 * asked), the grant rule with backfilling replayed from the full logs, and settling as the README
 * states it — a refund lowers the grant's own log entry (as if the grant had been smaller), debt is a
 * new entry at the settle time. Written from the README, not from `src/`.
 *
 * Order at one instant t: aborts; grants of requests that arrived before t; settles due at t (each
 * followed by a grant pass); then a pass that includes the arrivals at t.
 */
import { allowed, changeTimes, earliestAllowed, type Grant, type PolicySpec } from "./reference-model.ts";

export interface ReserveSpec {
  arrival: number;
  queue: number;
  /** Per policy of its queue (aligned with `queues[queue]`); 0 = that dimension is not asked. */
  amounts: number[];
  abortAt?: number;
  /** Settle this long after the grant with these actual amounts (per policy), or cancel; never if absent. */
  settle?: { after: number; actual: number[] | "cancel" };
}

export interface ReserveOutcome {
  grantedAt?: number;
  aborted?: boolean;
}

export function simulateReservations(
  policies: PolicySpec[],
  queues: number[][],
  requests: ReserveSpec[],
  horizon: number,
): ReserveOutcome[] {
  const logs: Grant[][] = policies.map(() => []);
  const outcomes: ReserveOutcome[] = requests.map(() => ({}));
  const entries: Grant[][] = requests.map(() => []);
  const settled = requests.map(() => false);
  const order = requests.map((_, i) => i).sort((a, b) => requests[a]!.arrival - requests[b]!.arrival || a - b);
  const settleAt = (i: number) => outcomes[i]!.grantedAt! + requests[i]!.settle!.after;

  const pass = (t: number, includeArrivalsAtT: boolean): void => {
    for (;;) {
      let grantedAny = false;
      const reservations: Array<{ amount: Map<number, number>; by: number }> = [];
      const queueBusy = new Set<number>();
      for (const i of order) {
        const r = requests[i]!;
        const o = outcomes[i]!;
        if (r.arrival > t || (!includeArrivalsAtT && r.arrival === t) || o.grantedAt !== undefined || o.aborted) continue;
        if (queueBusy.has(r.queue)) continue;
        queueBusy.add(r.queue);
        const asked = new Map<number, number>();
        queues[r.queue]!.forEach((p, k) => {
          if (r.amounts[k]! > 0) asked.set(p, r.amounts[k]!);
        });
        const allowedNow = [...asked].every(([p, n]) => allowed(policies[p]!, logs[p]!, n, t));
        const delayed = reservations.filter((res) =>
          [...asked].some(([p, n]) =>
            res.amount.has(p) &&
            earliestAllowed(policies[p]!, [...logs[p]!, { at: t, permits: n }], res.amount.get(p)!, t) > Math.max(res.by, t)
          )
        );
        if (allowedNow && delayed.length === 0) {
          for (const p of queues[r.queue]!) {
            const n = asked.get(p) ?? 0;
            const entry = { at: t, permits: n };
            if (n > 0) logs[p]!.push(entry);
            entries[i]!.push(entry);
          }
          o.grantedAt = t;
          grantedAny = true;
          break;
        }
        const own = Math.max(t, ...[...asked].map(([p, n]) => earliestAllowed(policies[p]!, logs[p]!, n, t)));
        reservations.push({ amount: asked, by: allowedNow ? Math.max(own, ...delayed.map((d) => d.by)) : own });
      }
      if (!grantedAny) return;
    }
  };

  let t = 0;
  while (t <= horizon) {
    for (const [i, r] of requests.entries()) {
      const o = outcomes[i]!;
      if (r.abortAt === t && o.grantedAt === undefined && !o.aborted && r.arrival <= t) o.aborted = true;
    }
    pass(t, false);
    const due = order.filter((i) => outcomes[i]!.grantedAt !== undefined && !settled[i] && requests[i]!.settle !== undefined && settleAt(i) === t);
    for (const i of due) {
      settled[i] = true;
      const r = requests[i]!;
      queues[r.queue]!.forEach((p, k) => {
        const reserved = r.amounts[k]!;
        const actual = r.settle!.actual === "cancel" ? 0 : r.settle!.actual[k]!;
        if (actual < reserved) entries[i]![k]!.permits -= reserved - actual;
        else if (actual > reserved) logs[p]!.push({ at: t, permits: actual - reserved });
      });
      pass(t, false);
    }
    pass(t, true);
    const candidates: number[] = [];
    for (const [i, r] of requests.entries()) {
      const o = outcomes[i]!;
      if (o.aborted) continue;
      if (o.grantedAt === undefined) {
        if (r.arrival > t) candidates.push(r.arrival);
        if (r.abortAt !== undefined) candidates.push(r.abortAt);
      } else if (!settled[i] && r.settle !== undefined) candidates.push(settleAt(i));
    }
    policies.forEach((spec, p) => candidates.push(...changeTimes(spec, logs[p]!, t)));
    const next = Math.min(...candidates.filter((x) => x > t));
    if (!Number.isFinite(next)) break;
    t = next;
  }
  return outcomes;
}
