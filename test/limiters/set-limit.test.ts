import { describe, expect, test } from "vitest";
import fc from "fast-check";
import {
  combine,
  FixedWindowLimiter,
  ManualClock,
  SlidingCounterLimiter,
  SmoothLimiter,
  WindowLimiter,
} from "../../src/index.ts";
import { track } from "../helpers.ts";
import { Reach } from "../reach.ts";

/** A step: at `at`, either `tryAcquire(permits)` must return `wait`, or the limit changes. */
type Step = [at: number, permits: number, wait: number] | [at: number, "set", { limit: number; interval?: number }];

interface Settable {
  tryAcquire(permits?: number): number;
  setLimit(options: { limit: number; interval?: number }): void;
}

async function runSteps(make: (clock: ManualClock) => Settable, steps: Step[]): Promise<void> {
  const clock = new ManualClock();
  const limiter = make(clock);
  for (const step of steps) {
    await clock.advanceTo(step[0]);
    if (step[1] === "set") limiter.setLimit(step[2] as { limit: number; interval?: number });
    else expect({ at: step[0], permits: step[1], wait: limiter.tryAcquire(step[1]) }).toEqual({ at: step[0], permits: step[1], wait: step[2] });
  }
}

describe("SmoothLimiter.setLimit()", () => {
  test("re-prices the grant still being paid for at the new rate, and spaces the ones after it so", () =>
    runSteps((clock) => new SmoothLimiter({ limit: 10, interval: 1000, clock }), [
      [0, 1, 0], // next free at 100
      [50, "set", { limit: 2 }],
      [50, 1, 450], // the grant at 0 now costs 500 ms: next at 500, as a server at 2/s expects
      [500, 1, 0],
      [500, 4, 500],
      [1000, 4, 0], // 4 permits at once: next at 3000
      [1500, "set", { limit: 20 }],
      [1500, 1, 0], // re-priced: 4 × 50 ms after 1000 = 1200, already past: due now
      [1500, 1, 50],
      [1520, "set", { limit: 20, interval: 1000 }], // the same numbers: nothing moves
      [1520, 1, 30],
    ]));

  test("a pause is not shortened by a change", () =>
    runSteps((clock) => {
      const l = new SmoothLimiter({ limit: 10, interval: 1000, clock });
      l.pause(2000);
      return l;
    }, [
      [0, "set", { limit: 100 }],
      [0, 1, 2000],
      [2000, 1, 0],
      [2000, 1, 10],
    ]));

  test("a pause is not shortened by a change that re-prices debt reaching past it (red-team, 2026-11-27)", () =>
    runSteps((clock) => {
      const l = new SmoothLimiter({ limit: 2, interval: 1000, clock });
      l.tryAcquire(10); // granted at 0: the next is due at 5000
      l.pause(3000); // within the debt: the anchor stays, the pause is remembered
      return l;
    }, [
      [0, "set", { limit: 10 }], // re-priced: 10 × 100 ms, due at 1000, but the pause lasts until 3000
      [0, 1, 3000],
      [1000, 1, 2000],
      [3000, 1, 0],
      [3000, 1, 100],
    ]));

  test("a pause longer than the debt at the old rate does not write the debt off at a slower new rate (red-team, 2026-11-27)", async () => {
    // 8 permits at 10/s are due to be paid at 800; at 1/s they cost 8 s. A pause to 700 or to 1000
    // changes nothing at 1/s: the next caller goes at 8000 either way (it went at 1000 after the
    // longer pause, 7 s early).
    for (const pause of [0, 700, 1000]) {
      const clock = new ManualClock();
      const l = new SmoothLimiter({ limit: 10, interval: 1000, clock });
      await l.acquire(8);
      if (pause > 0) l.pause(pause);
      await clock.advanceTo(500);
      l.setLimit({ limit: 1 });
      expect({ pause, wait: l.tryAcquire() }).toEqual({ pause, wait: 7500 });
    }
  });

  test("but a grant already paid off before the pause is not re-priced: a pause then a cut resume as a cut then a pause (review, 2026-11-27)", async () => {
    const at: Record<string, number> = {};
    for (const order of ["pause, then setLimit", "setLimit, then pause", "setLimit only"]) {
      const clock = new ManualClock();
      const l = new SmoothLimiter({ limit: 10, interval: 1000, burst: 1, clock });
      await l.acquire(8); // paid off by 700 ms (one stored permit)
      await clock.advanceTo(5000);
      if (order === "pause, then setLimit") {
        l.pause(1000);
        l.setLimit({ limit: 1 });
      } else {
        l.setLimit({ limit: 1 });
        if (order === "setLimit, then pause") l.pause(1000);
      }
      at[order] = 5000 + l.tryAcquire();
    }
    expect(at).toEqual({ "pause, then setLimit": 6000, "setLimit, then pause": 6000, "setLimit only": 5000 });
  });

  test("nor does a refund the pause clamped: the grant settled to 8 costs 8 s at 1/s", async () => {
    for (const pause of [0, 900]) {
      const clock = new ManualClock();
      const l = new SmoothLimiter({ limit: 10, interval: 1000, clock });
      const r = await l.reserve(10);
      if (pause > 0) l.pause(pause);
      r.settle(8);
      await clock.advanceTo(200);
      l.setLimit({ limit: 1 });
      expect({ pause, wait: l.tryAcquire() }).toEqual({ pause, wait: 7800 });
    }
  });

  test("a new interval changes the spacing; stored permits stay a number of permits", () =>
    runSteps((clock) => new SmoothLimiter({ limit: 10, interval: 1000, burst: 4, clock }), [
      [0, 1, 0],
      [0, 1, 0], // 2 of the 4 stored permits spent
      [0, "set", { limit: 10, interval: 2000 }], // one per 200 ms; 2 permits still stored
      [0, 1, 0],
      [0, 1, 0],
      [0, 1, 0], // with nothing owed, a request goes at once (as before the change)
      [0, 1, 200], // then spaced at 200 ms
    ]));

  test("is validated like the constructor", () => {
    const limiter = new SmoothLimiter({ limit: 10, clock: new ManualClock() });
    expect(() => limiter.setLimit({ limit: -3 })).toThrow(new RangeError("`limit` must be a positive finite number, got -3"));
    expect(() => limiter.setLimit({ limit: 1, interval: 0 })).toThrow(RangeError);
    expect(() => limiter.setLimit({ limit: 1e9, interval: 1 })).toThrow(/at most 1000 per ms/);
    expect(() => limiter.setLimit(null as never)).toThrow(TypeError);
    expect(() => limiter.setLimit({ limit: "5" as never })).toThrow(new TypeError('`limit` must be a number, got "5"'));
    expect(limiter.limit).toBe(10);
  });

  test("re-times callers already queued: lowering the rate moves them later, raising it earlier", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 10, interval: 1000, clock });
    const outcomes = Array.from({ length: 4 }, () => track(clock, limiter.acquire()));
    await clock.advanceTo(0);
    expect(limiter.queued).toBe(3); // the first went at once; the others at 100, 200, 300
    limiter.setLimit({ limit: 1 }); // the grant at 0 re-priced: next at 1000, then one per second
    await clock.runAll();
    expect(outcomes.map((o) => o.at)).toEqual([0, 1000, 2000, 3000]);

    const more = Array.from({ length: 3 }, () => track(clock, limiter.acquire()));
    await clock.advanceTo(3200);
    limiter.setLimit({ limit: 100 }); // the grant at 3000 re-priced: 10 ms, long paid: now, then 10 ms apart
    await clock.runAll();
    expect(more.map((o) => o.at)).toEqual([3200, 3210, 3220]);
  });

  test("a prediction made before a change is not reused after it (maxWait decides on the new rate)", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 10, interval: 1000, clock });
    for (let i = 0; i < 5; i++) void limiter.acquire();
    expect(limiter.tryAcquire()).toBe(500); // primes the prediction cache
    limiter.setLimit({ limit: 1 });
    expect(limiter.tryAcquire()).toBe(5 * 1000);
    await expect(limiter.acquire(1, { maxWait: 4000 })).rejects.toMatchObject({ retryAfter: 5000 });
  });
});

describe("WindowLimiter.setLimit()", () => {
  test("grants still in the window count against a lower limit until they leave", () =>
    runSteps((clock) => new WindowLimiter({ limit: 5, interval: 1000, clock }), [
      [0, 3, 0],
      [500, 1, 0],
      [600, "set", { limit: 2 }], // 4 in the window, limit 2: wait until 2 are left
      [600, 1, 400], // at 1000 the 3 from t=0 leave, 1 stays: room for 1
      [1000, 1, 0],
      [1000, 1, 500],
      [1500, "set", { limit: 4 }],
      [1500, 3, 0], // the grant at 500 left at 1500; 1 (t=1000) + 3 = 4
    ]));

  test("a new interval applies to the grants still in the window; those that left stay gone", () =>
    runSteps((clock) => new WindowLimiter({ limit: 2, interval: 1000, clock }), [
      [0, 2, 0],
      [1000, 1, 0], // the two from t=0 left at 1000
      [1000, "set", { limit: 2, interval: 3000 }],
      [1000, 1, 0],
      [1000, 1, 3000], // the grants at 1000 now leave at 4000
    ]));

  test("refuses a limit below a queued request's permits, changing nothing", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 5, interval: 1000, clock });
    await limiter.acquire(5);
    const queued = track(clock, limiter.acquire(4));
    expect(() => limiter.setLimit({ limit: 3 })).toThrow(
      new RangeError("`limit` must be at least the largest queued request (4 permits), got 3"),
    );
    expect(limiter.limit).toBe(5);
    await clock.runAll();
    expect(queued.at).toBe(1000);
    // A request larger than the new limit is refused up front, as by a limiter created with it.
    limiter.setLimit({ limit: 2 });
    expect(() => limiter.tryAcquire(3)).toThrow(RangeError);
  });

  test("in a combination with named dimensions, compares the new limit with what each waiter asks of this limiter, not of another (red-team, 2026-11-27)", async () => {
    const clock = new ManualClock();
    const requests = new WindowLimiter({ limit: 2, interval: 1000, clock });
    const tokens = new WindowLimiter({ limit: 10, interval: 1000, clock });
    const llm = combine({ requests, tokens });
    await llm.reserve({ requests: 1, tokens: 10 });
    const queued = llm.reserve({ requests: 1, tokens: 5 }); // waits for tokens
    requests.setLimit({ limit: 1 }); // it asks 1 request: no conflict (was: "largest queued request (5 permits)")
    expect(requests.limit).toBe(1);
    expect(() => tokens.setLimit({ limit: 4 })).toThrow(
      new RangeError("`limit` must be at least the largest queued request (5 permits), got 4"),
    );
    await clock.runAll();
    expect((await queued).grantedAt).toBe(1000);
  });
});

describe("FixedWindowLimiter.setLimit()", () => {
  test("the current window's count stays; a limit below it grants nothing until the next window", () =>
    runSteps((clock) => new FixedWindowLimiter({ limit: 10, interval: 1000, clock }), [
      [100, 6, 0],
      [200, "set", { limit: 5 }],
      [200, 1, 800],
      [1000, 5, 0],
      [1000, 1, 1000],
      [1500, "set", { limit: 7 }],
      [1500, 2, 0],
    ]));

  test("a new interval moves the count to the new window that contains now", () =>
    runSteps((clock) => new FixedWindowLimiter({ limit: 3, interval: 1000, clock }), [
      [1500, 3, 0], // window [1000, 2000) full
      [1500, "set", { limit: 3, interval: 4000 }], // window [0, 4000) holds those 3
      [1500, 1, 2500],
      [4000, 3, 0],
    ]));
});

describe("SlidingCounterLimiter.setLimit()", () => {
  test("the estimate at the change is weighed against the new limit", () =>
    runSteps((clock) => new SlidingCounterLimiter({ limit: 10, interval: 1000, clock }), [
      [0, 8, 0],
      [500, "set", { limit: 4 }],
      [500, 1, 1125], // current 8 > 4: wait for the next window, where 8·(1−f) + 1 ≤ 4 at f = 5/8
      [1625, 1, 0],
      [1625, "set", { limit: 20 }],
      [1625, 10, 0],
    ]));

  test("a new interval carries both counts to the new grid", () =>
    runSteps((clock) => new SlidingCounterLimiter({ limit: 4, interval: 1000, clock }), [
      [1200, 4, 0], // window [1000, 2000): current 4
      [1200, "set", { limit: 4, interval: 2000 }], // window [0, 2000): current 4
      [1200, 1, 2000 - 1200 + 500], // next window [2000, 4000): 4·(1−f) + 1 ≤ 4 at f = 1/4
    ]));
});

// ---- property: after a change, grants follow a fresh model of the new numbers ----

type Kind = "smooth" | "window" | "fixed";
interface Scenario {
  kind: Kind;
  before: number;
  after: number;
  interval: number;
  /** The change's time: never a grant instant (grants land on whole or third/seventh… ms, this on .25). */
  change: number;
  requests: { arrival: number; permits: number }[];
}

const scenario: fc.Arbitrary<Scenario> = fc
  .record({
    kind: fc.constantFrom<Kind>("smooth", "window", "fixed"),
    before: fc.integer({ min: 1, max: 6 }),
    after: fc.integer({ min: 1, max: 6 }),
    interval: fc.constantFrom(100, 300, 1000),
    change: fc.integer({ min: 0, max: 1500 }).map((t) => t + 0.25),
    requests: fc.array(fc.record({ arrival: fc.integer({ min: 0, max: 2000 }), permits: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 25 }),
  })
  .map((s) => {
    const cap = Math.min(s.before, s.after);
    return {
      ...s,
      requests: s.requests
        .map((r) => ({ ...r, permits: Math.min(r.permits, cap) }))
        .sort((a, b) => a.arrival - b.arrival),
    };
  });

/** A fresh, naive model: FIFO, each request at the first candidate instant its rule allows, numbers by instant. */
function reference(s: Scenario): number[] {
  const limitAt = (t: number) => (t < s.change ? s.before : s.after);
  const grants: { at: number; permits: number }[] = [];
  const out: number[] = [];
  let prev = -Infinity;
  let next = 0; // smooth: the next free instant
  let last = { at: -Infinity, permits: 0 };
  let changed = false;
  for (const r of s.requests) {
    if (s.kind === "smooth" && !changed && Math.max(r.arrival, prev, next) > s.change) {
      // The change happens before this grant: the last grant, if still being paid for, is re-priced.
      changed = true;
      if (next > s.change) next = Math.max(s.change, last.at + (last.permits * s.interval) / s.after);
    }
    const t0 = Math.max(r.arrival, prev);
    let at: number;
    if (s.kind === "smooth") {
      at = Math.max(t0, next);
      next = at + (r.permits * s.interval) / limitAt(at);
      last = { at, permits: r.permits };
    } else {
      const count = (t: number) =>
        grants
          .filter((g) => (s.kind === "window" ? g.at + s.interval > t : Math.floor(g.at / s.interval) === Math.floor(t / s.interval)))
          .reduce((n, g) => n + g.permits, 0);
      const candidates = [t0, s.change, ...grants.map((g) => g.at + s.interval)];
      for (let k = Math.floor(t0 / s.interval) + 1; k <= Math.floor(t0 / s.interval) + 50; k++) candidates.push(k * s.interval);
      at = candidates.filter((c) => c >= t0).sort((a, b) => a - b).find((c) => count(c) + r.permits <= limitAt(c))!;
    }
    grants.push({ at, permits: r.permits });
    out.push(at);
    prev = at;
  }
  return out;
}

async function real(s: Scenario, reach: Reach): Promise<number[]> {
  const clock = new ManualClock();
  const options = { limit: s.before, interval: s.interval, clock };
  const limiter = s.kind === "smooth" ? new SmoothLimiter(options) : s.kind === "window" ? new WindowLimiter(options) : new FixedWindowLimiter(options);
  const outcomes: ReturnType<typeof track<void>>[] = [];
  let changed = false;
  for (const r of s.requests) {
    if (!changed && s.change < r.arrival) {
      await clock.advanceTo(s.change);
      reach.hit("waiters queued at the change", limiter.queued > 0);
      limiter.setLimit({ limit: s.after });
      changed = true;
    }
    await clock.advanceTo(r.arrival);
    outcomes.push(track(clock, limiter.acquire(r.permits)));
  }
  if (!changed) {
    await clock.advanceTo(s.change);
    reach.hit("waiters queued at the change", limiter.queued > 0);
    limiter.setLimit({ limit: s.after });
  }
  await clock.runAll();
  return outcomes.map((o) => o.at!);
}

test("after setLimit, grant times equal a fresh model's of the new numbers from the change on (queued callers re-timed)", async () => {
  const reach = new Reach("setLimit re-times");
  await fc.assert(
    fc.asyncProperty(scenario, async (s) => {
      reach.run();
      const got = await real(s, reach);
      const want = reference(s);
      reach.hit(`${s.kind}: lowered with grants after the change`, s.after < s.before && want.some((t) => t > s.change));
      reach.hit(`${s.kind}: raised with grants after the change`, s.after > s.before && want.some((t) => t > s.change));
      expect(got.length).toBe(want.length);
      got.forEach((t, i) => expect(t).toBeCloseTo(want[i]!, 6));
    }),
    { numRuns: 300 },
  );
  reach.atLeast({
    "waiters queued at the change": 20,
    "smooth: lowered with grants after the change": 10,
    "smooth: raised with grants after the change": 10,
    "window: lowered with grants after the change": 10,
    "window: raised with grants after the change": 10,
    "fixed: lowered with grants after the change": 10,
    "fixed: raised with grants after the change": 10,
  });
});

test("a combination sees a member's new limit at once: its queued callers are re-timed", async () => {
  const { combine } = await import("../../src/index.ts");
  const clock = new ManualClock();
  const overall = new SmoothLimiter({ limit: 10, interval: 1000, clock });
  const perKey = new WindowLimiter({ limit: 100, interval: 1000, clock });
  const both = combine(overall, perKey);
  const outcomes = Array.from({ length: 4 }, () => track(clock, both.acquire()));
  await clock.advanceTo(0);
  overall.setLimit({ limit: 1 });
  await clock.runAll();
  expect(outcomes.map((o) => o.at)).toEqual([0, 1000, 2000, 3000]); // the grant at 0 re-priced too
});
