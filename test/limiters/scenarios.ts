/**
 * Random scenarios for the property tests against the reference model: policies, limiter objects
 * (queues) combining them, and requests; and a runner that replays one on the real limiters in
 * virtual time.
 */
import fc from "fast-check";
import { expect } from "vitest";
import {
  CombinedLimiter,
  FixedWindowLimiter,
  type GatedLimiter,
  ManualClock,
  SmoothLimiter,
  WindowLimiter,
} from "../../src/index.ts";
import type { Outcome, PolicySpec, RequestSpec } from "./reference-model.ts";

/** A domain: policies, and limiter objects (queues) each combining some of them. */
export interface Scenario {
  policies: PolicySpec[];
  queues: number[][];
  requests: RequestSpec[];
}

export const HORIZON = 60_000;

/** Intervals and limits chosen so smooth spacing is a whole number of ms (exact comparisons). */
export const policySpec: fc.Arbitrary<PolicySpec> = fc.oneof(
  fc.record({ kind: fc.constant("window" as const), limit: fc.integer({ min: 1, max: 6 }), interval: fc.constantFrom(100, 250, 1000) }),
  fc.record({
    kind: fc.constant("smooth" as const),
    limit: fc.constantFrom(1, 2, 4, 5, 10),
    interval: fc.constantFrom(100, 1000),
    burst: fc.integer({ min: 0, max: 3 }),
  }),
  fc.record({ kind: fc.constant("fixed" as const), limit: fc.integer({ min: 1, max: 6 }), interval: fc.constantFrom(100, 1000) }),
);

export function maxPermits(spec: PolicySpec): number {
  return spec.kind === "smooth" ? 4 : spec.limit;
}

/**
 * Layouts: one limiter; or an overall policy 0 plus channels that each combine it with their own
 * policy; or channels without an overall limit, some sharing policies; or the starvation layouts —
 * a combination of two policies beside queues on each alone ("overlap"), and per-user × per-org
 * combinations (user 0 and 1, org 2 and 3: [0,2] beside [0,3] and [1,2]) — where callers loop on the
 * other queues (a request every `period` ms) while the combination waits.
 */
export const scenario: fc.Arbitrary<Scenario> = fc
  .tuple(
    fc.array(policySpec, { minLength: 1, maxLength: 4 }),
    fc.constantFrom("single", "overall", "mixed", "overlap", "userorg", "userorg"),
  )
  .chain(([policies, layout]) => {
    let queues: number[][];
    if (layout === "single" || policies.length === 1) queues = [[0]];
    else if (layout === "overall") queues = policies.slice(1).map((_, i) => [0, i + 1]);
    else if (layout === "overlap" || (layout === "userorg" && policies.length < 4)) queues = [[0, 1], [0], [1]];
    else if (layout === "userorg") queues = [[0, 2], [0, 3], [1, 2]];
    else queues = [[0], ...policies.slice(1).map((_, i) => [i + 1]), [0, policies.length - 1]];
    const capOf = (queue: number) => Math.min(...queues[queue]!.map((p) => maxPermits(policies[p]!)));
    const request = fc
      .record({
        arrival: fc.integer({ min: 0, max: 3000 }),
        queue: fc.integer({ min: 0, max: queues.length - 1 }),
        permitsSeed: fc.integer({ min: 1, max: 100 }),
        abortAfter: fc.option(fc.integer({ min: 0, max: 3000 }), { freq: 3 }),
      })
      .map(({ arrival, queue, permitsSeed, abortAfter }): RequestSpec => ({
        arrival,
        queue,
        permits: 1 + (permitsSeed % capOf(queue)),
        abortAt: abortAfter === null ? undefined : arrival + abortAfter + 0.5,
      }));
    // Loops on the queues other than the first: one request every `period` ms from `start`.
    const loop = fc
      .record({
        queue: fc.integer({ min: 1, max: Math.max(1, queues.length - 1) }),
        start: fc.integer({ min: 0, max: 1000 }),
        period: fc.constantFrom(100, 250, 500, 1000),
        count: fc.integer({ min: 2, max: 8 }),
      })
      .map(({ queue, start, period, count }): RequestSpec[] =>
        queue >= queues.length ? [] : Array.from({ length: count }, (_, k) => ({ arrival: start + k * period, queue, permits: 1 }))
      );
    const loops = queues.length > 1 && (layout === "overlap" || layout === "userorg")
      ? fc.array(loop, { minLength: 1, maxLength: 2 }).map((ls) => ls.flat())
      : fc.constant([] as RequestSpec[]);
    return fc.record({
      policies: fc.constant(policies),
      queues: fc.constant(queues),
      // Each request's abort its own instant, a 1/1024 ms multiple past the half (exact in binary):
      // an abort lets the waiter behind through at once, and a grant at an abort time times the next
      // change from there, so an equal abort time elsewhere would race a grant — which wins is timer
      // order, not anything the README promises.
      requests: fc.tuple(fc.array(request, { minLength: 1, maxLength: 25 }), loops).map(([rs, ls]) => [
        ...rs.map((r, i) => (r.abortAt === undefined ? r : { ...r, abortAt: r.abortAt + (i + 1) / 1024 })),
        ...ls,
      ]),
    });
  });

/**
 * Scenarios aimed at conflicted waiters — a front its own policies allow now but that would delay an
 * earlier reservation — and at the takes that change their reservations: two strict windows, a
 * combination of both beside a queue on each, multi-permit requests early on, and dense loops of
 * 1-permit requests on the members (sometimes two at one instant, so a grant at once is followed by
 * another decision at the same instant).
 */
export const conflictScenario: fc.Arbitrary<Scenario> = fc
  .tuple(
    fc.tuple(fc.integer({ min: 3, max: 6 }), fc.constantFrom(250, 500, 1000)),
    fc.tuple(fc.integer({ min: 3, max: 6 }), fc.constantFrom(100, 250)),
  )
  .chain(([[l0, i0], [l1, i1]]) => {
    const policies: PolicySpec[] = [{ kind: "window", limit: l0, interval: i0 }, { kind: "window", limit: l1, interval: i1 }];
    const queues = [[0, 1], [0], [1]];
    const caps = [Math.min(l0, l1), l0, l1];
    const request = fc
      .record({ arrival: fc.integer({ min: 0, max: 400 }), queue: fc.integer({ min: 0, max: 2 }), permitsSeed: fc.nat() })
      .map(({ arrival, queue, permitsSeed }): RequestSpec => ({ arrival, queue, permits: 1 + (permitsSeed % caps[queue]!) }));
    const loop = fc
      .record({
        queue: fc.integer({ min: 1, max: 2 }),
        start: fc.integer({ min: 0, max: 800 }),
        period: fc.constantFrom(10, 50, 100),
        count: fc.integer({ min: 5, max: 30 }),
        twice: fc.boolean(),
      })
      .map(({ queue, start, period, count, twice }): RequestSpec[] =>
        Array.from({ length: count * (twice ? 2 : 1) }, (_, k) => ({ arrival: start + Math.floor(k / (twice ? 2 : 1)) * period, queue, permits: 1 }))
      );
    return fc.record({
      policies: fc.constant(policies),
      queues: fc.constant(queues),
      requests: fc.tuple(fc.array(request, { minLength: 2, maxLength: 10 }), fc.array(loop, { minLength: 1, maxLength: 2 }))
        .map(([rs, ls]) => [...rs, ...ls.flat()]),
    });
  });

/**
 * True when a later request on an overlapping queue was granted while an earlier request on a
 * combination of several policies still waited: the layout in which a combination could starve.
 */
export function overtaken(s: Scenario, outcomes: Outcome[]): boolean {
  return s.requests.some((r, i) => {
    const at = outcomes[i]!.grantedAt;
    if (s.queues[r.queue]!.length < 2 || at === undefined || at === r.arrival) return false;
    return s.requests.some((l, j) => {
      const lat = outcomes[j]!.grantedAt;
      return l.queue !== r.queue && l.arrival > r.arrival && lat !== undefined && lat < at &&
        s.queues[l.queue]!.some((p) => s.queues[r.queue]!.includes(p));
    });
  });
}

export function makeLimiter(spec: PolicySpec, clock: ManualClock, priorityAging?: number): GatedLimiter {
  switch (spec.kind) {
    case "window":
      return new WindowLimiter({ limit: spec.limit, interval: spec.interval, clock, priorityAging });
    case "smooth":
      return new SmoothLimiter({ limit: spec.limit, interval: spec.interval, burst: spec.burst, clock, priorityAging });
    case "fixed":
      return new FixedWindowLimiter({ limit: spec.limit, interval: spec.interval, clock, priorityAging });
  }
}

/** The limiter objects of a scenario (a member itself, or a combination), with `priorityAging`. */
export function makeQueues(s: Scenario, clock: ManualClock, priorityAging?: number): GatedLimiter[] {
  const ps = s.policies.map((spec) => makeLimiter(spec, clock, priorityAging));
  return s.queues.map((q) => (q.length === 1 ? ps[q[0]!]! : new CombinedLimiter(q.map((p) => ps[p]!), { priorityAging })));
}

/** Runs a scenario on the real limiters in virtual time; returns each request's outcome. */
export async function runReal(s: Scenario, priorityAging?: number): Promise<Outcome[]> {
  const clock = new ManualClock();
  const queueLimiters = makeQueues(s, clock, priorityAging);
  const outcomes: Outcome[] = s.requests.map(() => ({}));
  const order = s.requests.map((_, i) => i).sort((a, b) => s.requests[a]!.arrival - s.requests[b]!.arrival || a - b);
  const settled: Promise<void>[] = [];
  for (const i of order) {
    const r = s.requests[i]!;
    await clock.advanceTo(r.arrival);
    const controller = new AbortController();
    if (r.abortAt !== undefined) clock.setTimeout(() => controller.abort(), r.abortAt - r.arrival);
    settled.push(
      queueLimiters[r.queue]!.acquire(r.permits, { signal: controller.signal, priority: r.priority }).then(
        () => void (outcomes[i]!.grantedAt = clock.now()),
        () => void (outcomes[i]!.aborted = true),
      ),
    );
  }
  await clock.advanceTo(HORIZON);
  expect(clock.pendingTimers).toBe(0); // everything settled: no timer left behind
  // Every request settled by the horizon (a stuck waiter would leave its outcome empty).
  expect(outcomes.filter((o) => o.grantedAt === undefined && o.aborted === undefined)).toEqual([]);
  await Promise.all(settled);
  return outcomes;
}

