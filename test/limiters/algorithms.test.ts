import { describe, expect, test } from "vitest";
import fc from "fast-check";
import { WindowPolicy } from "../../src/limiters/window.ts";
import {
  FixedWindowLimiter,
  type Limiter,
  ManualClock,
  SlidingCounterLimiter,
  SmoothLimiter,
  WindowLimiter,
} from "../../src/index.ts";

/**
 * A step: at virtual time `at`, `tryAcquire(permits)` must return `wait` (0 = granted and taken).
 * Steps read as the limiter's specification.
 */
type Step = [at: number, permits: number, wait: number];

async function runSteps(make: (clock: ManualClock) => Limiter, steps: Step[]): Promise<void> {
  const clock = new ManualClock();
  const limiter = make(clock);
  for (const [at, permits, wait] of steps) {
    await clock.advanceTo(at);
    expect({ at, permits, wait: limiter.tryAcquire(permits) }).toEqual({ at, permits, wait });
  }
}

describe("SmoothLimiter", () => {
  test("spaces permits evenly: 4 per second is one every 250 ms", () =>
    runSteps((clock) => new SmoothLimiter({ limit: 4, interval: 1000, clock }), [
      [0, 1, 0],
      [0, 1, 250],
      [250, 1, 0],
      [300, 1, 200],
      [500, 1, 0],
    ]));

  test("lets a large request go at once when no debt is pending, and makes the next caller pay", () =>
    runSteps((clock) => new SmoothLimiter({ limit: 2, interval: 1000, clock }), [
      [0, 10, 0], // 10 permits, more than `limit`: granted, next free at 5000
      [1000, 1, 4000],
      [5000, 3, 0], // debt paid: another large request goes at once
      [5000, 1, 1500],
      [6500, 1, 0],
    ]));

  test("stores idle time as up to `burst` permits, then spaces again", () =>
    runSteps((clock) => new SmoothLimiter({ limit: 10, interval: 1000, burst: 3, clock }), [
      [0, 1, 0],
      [0, 1, 0],
      [0, 1, 0], // the burst of 3 (starts full)
      [0, 1, 0], // a fourth goes too: it creates debt of 100 ms (future debt, not refused)
      [0, 1, 100],
      [100, 1, 0],
      [10_000, 5, 0], // long idle: only 3 stored, so 5 permits leave 200 ms of debt
      [10_000, 1, 200],
      [10_200, 1, 0],
    ]));

  test("can start empty: initialPermits 0 spaces from the first request", () =>
    runSteps((clock) => new SmoothLimiter({ limit: 10, interval: 1000, burst: 5, initialPermits: 0, clock }), [
      [0, 1, 0],
      [0, 1, 100],
      [300, 1, 0], // 200 ms idle stored 2 permits (100 ms of the 300 was debt)
      [300, 1, 0],
      [300, 1, 0],
      [300, 1, 100],
    ]));

  test("loses no fractional permit to rounding: 3 per second for 3,000 grants takes exactly 1000 s", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 3, interval: 1000, clock });
    let last = 0;
    for (let i = 0; i < 3000; i++) {
      const wait = limiter.tryAcquire();
      if (wait > 0) {
        await clock.advance(wait);
        expect(limiter.tryAcquire()).toBe(0);
      }
      last = clock.now();
    }
    expect(last).toBeCloseTo(2999 * (1000 / 3), 6);
    await clock.advanceTo(1_000_000);
    expect(limiter.tryAcquire()).toBe(0);
  });

  test("accepts fractional rates: 0.5 per second is one every 2 s", () =>
    runSteps((clock) => new SmoothLimiter({ limit: 0.5, clock }), [
      [0, 1, 0],
      [0, 1, 2000],
      [2000, 1, 0],
    ]));
});

describe("WindowLimiter", () => {
  test("never more than `limit` in any window [t, t+interval): a slot frees exactly `interval` after its grant", () =>
    runSteps((clock) => new WindowLimiter({ limit: 3, interval: 1000, clock }), [
      [0, 1, 0],
      [400, 2, 0],
      [500, 1, 500], // full until the t=0 grant leaves at 1000
      [999, 1, 1],
      [1000, 1, 0],
      [1000, 1, 400], // next to leave: the two at 400
      [1400, 2, 0],
      [1400, 1, 600],
    ]));

  test("multi-permit requests wait for enough old grants to leave", () =>
    runSteps((clock) => new WindowLimiter({ limit: 5, interval: 100, clock }), [
      [0, 1, 0],
      [10, 1, 0],
      [20, 1, 0],
      [30, 1, 0],
      [40, 1, 0],
      [50, 3, 70], // needs the grants at 0, 10 and 20 gone: at 120
      [120, 3, 0],
    ]));

  test("a request for more than `limit` can never be granted: RangeError at once", () => {
    const limiter = new WindowLimiter({ limit: 5, interval: 1000, clock: new ManualClock() });
    expect(() => limiter.tryAcquire(6)).toThrow(RangeError);
    expect(() => limiter.acquire(6)).toThrow(/`permits` must be at most 5/);
  });

  test("memory grows only as far as it is used, and a large limit still decides in log time", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1_000_000, interval: 60_000, clock });
    for (let i = 0; i < 200_000; i++) {
      expect(limiter.tryAcquire(5)).toBe(0);
      await (i % 1000 === 999 ? clock.advance(1) : undefined);
    }
    // 1,000,000 permits granted between t=0 and t=199: the first slot frees at t=60,000.
    expect(clock.now()).toBe(200);
    expect(limiter.tryAcquire(1)).toBe(60_000 - 200);
  });
});

describe("FixedWindowLimiter", () => {
  test("counts per fixed window starting at creation, and resets at each edge", () =>
    runSteps((clock) => new FixedWindowLimiter({ limit: 2, interval: 1000, clock }), [
      [0, 1, 0],
      [900, 1, 0],
      [950, 1, 50],
      [1000, 2, 0], // a fresh window: 4 grants within 100 ms across the edge (the known trade-off)
      [1000, 1, 1000],
      [2500, 2, 0],
    ]));
});

describe("SlidingCounterLimiter", () => {
  test("weighs the previous window by how much of it still overlaps", () =>
    runSteps((clock) => new SlidingCounterLimiter({ limit: 10, interval: 1000, clock }), [
      [0, 10, 0],
      // The current window is full; in the next one the estimate at 1000 + f·1000 is 10·(1 − f), and
      // one more fits when 10·(1 − f) + 1 ≤ 10: f ≥ 0.1, at t=1100.
      [500, 1, 600],
      [1000, 1, 100],
      [1100, 1, 0],
      [1100, 1, 100], // 10·(1 − f) + 1 + 1 ≤ 10 → f ≥ 0.2
      [1500, 4, 0], // 5 + 1 + 4 = 10
      [1500, 1, 100],
    ]));

  test("forgets windows older than the previous one", () =>
    runSteps((clock) => new SlidingCounterLimiter({ limit: 3, interval: 1000, clock }), [
      [0, 3, 0],
      [2000, 3, 0],
    ]));
});

describe("WindowPolicy.earliestAfter", () => {
  test("answers as a copy that took the permits would, without taking", () => {
    let beyondLog = 0;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.record({ gap: fc.integer({ min: 0, max: 400 }), permits: fc.integer({ min: 1, max: 8 }) }), { maxLength: 12 }),
        fc.integer({ min: 0, max: 400 }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 8 }),
        (limit, grants, gap, takenSeed, askedSeed) => {
          const policy = new WindowPolicy(limit, 1000);
          let t = 0;
          for (const g of grants) {
            t += g.gap;
            const n = 1 + ((g.permits - 1) % limit);
            if (policy.earliest(n, t) === t) policy.take(n, t);
          }
          t += gap;
          const taken = 1 + ((takenSeed - 1) % limit);
          const asked = 1 + ((askedSeed - 1) % limit);
          if (policy.earliest(taken, t) !== t) return; // the gate only asks for takes allowed now
          const copy = policy.clone(t);
          copy.take(taken, t);
          const expected = copy.earliest(asked, t);
          if (expected === t + 1000) beyondLog++;
          expect(policy.earliestAfter(taken, asked, t)).toBe(expected);
          expect(policy.earliest(asked, t)).toBe(policy.clone(t).earliest(asked, t)); // nothing taken
        },
      ),
      { numRuns: 1000 },
    );
    expect(beyondLog).toBeGreaterThan(20); // the case where only the hypothetical grant would do
  });
});
