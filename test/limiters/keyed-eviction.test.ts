/**
 * KeyedLimiter eviction, property-tested: whatever the algorithm and whenever a key is evicted (only
 * when it is at rest), the grants of the evicted limiter plus those of the one re-created for its key
 * are a history the original limiter alone would have granted.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import {
  FixedWindowLimiter,
  type GatedLimiter,
  KeyedLimiter,
  LIMITER_DEFAULTS,
  ManualClock,
  SlidingCounterLimiter,
  SmoothLimiter,
  WindowLimiter,
} from "../../src/index.ts";

type Spec =
  | { kind: "smooth"; limit: number; interval: number; burst: number; initialPermits: number }
  | { kind: "window" | "fixed" | "sliding"; limit: number; interval: number };

const spec: fc.Arbitrary<Spec> = fc.oneof(
  fc
    .record({
      kind: fc.constant("smooth" as const),
      limit: fc.constantFrom(1, 2, 3, 5, 10),
      interval: fc.constantFrom(100, 300, 1000),
      burst: fc.integer({ min: 0, max: 4 }),
      initialSeed: fc.integer({ min: 0, max: 4 }),
    })
    .map(({ initialSeed, ...s }) => ({ ...s, initialPermits: initialSeed % (s.burst + 1) })),
  fc.record({
    kind: fc.constantFrom("window" as const, "fixed" as const, "sliding" as const),
    limit: fc.integer({ min: 1, max: 5 }),
    interval: fc.constantFrom(100, 250, 1000),
  }),
);

/** A step at time `at`: try to take permits, sweep idle keys, or pause the key. */
type Step = { at: number; op: "take"; permits: number } | { at: number; op: "sweep" } | { at: number; op: "pause"; ms: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ at: fc.integer({ min: 0, max: 6000 }), op: fc.constant("take" as const), permits: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 3, arbitrary: fc.record({ at: fc.integer({ min: 0, max: 6000 }), op: fc.constant("sweep" as const) }) },
  { weight: 1, arbitrary: fc.record({ at: fc.integer({ min: 0, max: 6000 }), op: fc.constant("pause" as const), ms: fc.integer({ min: 1, max: 1500 }) }) },
);

function make(s: Spec, clock: ManualClock): GatedLimiter {
  switch (s.kind) {
    case "smooth":
      return new SmoothLimiter({ limit: s.limit, interval: s.interval, burst: s.burst, initialPermits: s.initialPermits, clock });
    case "window":
      return new WindowLimiter({ limit: s.limit, interval: s.interval, clock });
    case "fixed":
      return new FixedWindowLimiter({ limit: s.limit, interval: s.interval, clock });
    case "sliding":
      return new SlidingCounterLimiter({ limit: s.limit, interval: s.interval, clock });
  }
}

describe("KeyedLimiter eviction (property)", () => {
  test("for every algorithm, a limiter's grants plus those of a fresh one made when it was idle never exceed what the original alone allows", () => {
    let runsWithEviction = 0;
    let evictions = 0;
    let grantsAfterEviction = 0;
    const evictedByKind = new Map<string, number>();
    fc.assert(
      fc.property(spec, fc.integer({ min: 0, max: 10_000 }), fc.array(step, { minLength: 1, maxLength: 40 }), (s, start, steps) => {
        steps.sort((a, b) => a.at - b.at);
        const cap = s.kind === "smooth" ? Infinity : s.limit;
        const clock = new ManualClock(start);
        // What a KeyedLimiter does with an idle key whose old limiter nobody holds any more: it
        // forgets it, and the key's next use makes a fresh one.
        let current = make(s, clock);
        // Created at `start` too, and never replaced. It has a clock of its own: the replay goes back in
        // time, and gate time on one clock never goes back (it carries on through an offset).
        const referenceClock = new ManualClock(start);
        const reference = make(s, referenceClock);
        let replaced = 0;
        const history: Array<{ at: number; op: "take"; permits: number } | { at: number; op: "pause"; ms: number }> = [];
        for (const st of steps) {
          clock.jumpTo(start + st.at);
          if (st.op === "sweep") {
            if (current.isIdle()) {
              current = make(s, clock);
              replaced++;
            }
          } else if (st.op === "pause") {
            current.pause(st.ms);
            history.push(st);
          } else {
            const permits = Math.min(st.permits, cap);
            if (current.tryAcquire(permits) === 0) {
              history.push({ ...st, permits });
              if (replaced > 0) grantsAfterEviction++;
            }
          }
        }
        evictions += replaced;
        if (replaced > 0) {
          runsWithEviction++;
          const kind = s.kind === "smooth" && s.burst > 0 ? "smooth with burst" : s.kind;
          evictedByKind.set(kind, (evictedByKind.get(kind) ?? 0) + 1);
        }
        // Replay the combined history on the limiter that was never replaced: it must grant all of it.
        for (const h of history) {
          referenceClock.jumpTo(start + h.at);
          if (h.op === "pause") reference.pause(h.ms);
          else expect({ ...h, wait: reference.tryAcquire(h.permits) }).toEqual({ ...h, wait: 0 });
        }
      }),
      { numRuns: 1000 },
    );
    // The interesting branch is reached often: limiters were replaced and their successors granted.
    expect(runsWithEviction).toBeGreaterThan(300);
    expect(evictions).toBeGreaterThan(500);
    expect(grantsAfterEviction).toBeGreaterThan(500);
    for (const kind of ["smooth", "smooth with burst", "window", "fixed", "sliding"]) {
      expect({ kind, runs: evictedByKind.get(kind) ?? 0 }).toEqual({ kind, runs: expect.toSatisfy((n: number) => n >= 20) });
    }
  });

  test("a KeyedLimiter evicts a key exactly when its limiter says it is idle", () => {
    let evicted = 0;
    let kept = 0;
    fc.assert(
      fc.property(spec, fc.integer({ min: 0, max: 10_000 }), fc.array(step, { minLength: 1, maxLength: 40 }), (s, start, steps) => {
        steps.sort((a, b) => a.at - b.at);
        const cap = s.kind === "smooth" ? Infinity : s.limit;
        const clock = new ManualClock(start);
        const keyed = new KeyedLimiter({ clock, idleTimeout: 0, create: () => make(s, clock) });
        for (const st of steps) {
          clock.jumpTo(start + st.at);
          if (st.op === "sweep") {
            const idle = keyed.get("k").isIdle();
            keyed.get("other"); // sweeps "k", now the least recently used
            expect(keyed.has("k")).toBe(!idle);
            if (idle) evicted++;
            else kept++;
          } else if (st.op === "pause") keyed.get("k").pause(st.ms);
          else keyed.tryAcquire("k", Math.min(st.permits, cap));
        }
      }),
      { numRuns: 300 },
    );
    expect(evicted).toBeGreaterThan(100);
    expect(kept).toBeGreaterThan(100);
  });
});

test("eviction tells how a KeyedLimiter forgets keys, so a companion map (the fetch's maxConcurrent slots per key) forgets alike", () => {
  const clock = new ManualClock();
  const keyed = new KeyedLimiter({ create: () => new SmoothLimiter({ limit: 1, clock }), maxKeys: 7, idleTimeout: 50, clock });
  expect(keyed.eviction).toEqual({ maxKeys: 7, idleTimeout: 50, clock });
  const defaults = new KeyedLimiter({ create: () => new SmoothLimiter({ limit: 1 }) }).eviction;
  expect(defaults).toMatchObject({ maxKeys: LIMITER_DEFAULTS.maxKeys, idleTimeout: LIMITER_DEFAULTS.idleTimeout });
});
