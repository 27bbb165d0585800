import { describe, expect, test } from "vitest";
import { combine, ManualClock, MaxWaitExceededError, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import { SmoothPolicy } from "../../src/limiters/smooth.ts";
import { WindowPolicy } from "../../src/limiters/window.ts";
import { track } from "../helpers.ts";

describe("predictions (tryAcquire hints, maxWait) count waiters on other channels", () => {
  /** A waiter on a channel, due at t=1000 when its channel frees, will take the shared limit first. */
  async function layout() {
    const clock = new ManualClock();
    const overall = new WindowLimiter({ limit: 2, interval: 1000, clock });
    const channel = combine(overall, new WindowLimiter({ limit: 1, interval: 1000, clock }));
    await channel.acquire(); // t=0: overall 1 of 2, the channel full until t=1000
    await clock.advance(500);
    const onChannel = track(clock, channel.acquire());
    return { clock, overall, onChannel };
  }

  test("tryAcquire's hint is the real wait, even with nobody queued on the limiter asked", async () => {
    const { clock, overall, onChannel } = await layout();
    expect(overall.tryAcquire(2)).toBe(1500);
    const direct = track(clock, overall.acquire(2));
    await clock.advance(2000);
    expect(onChannel.at).toBe(1000);
    expect(direct.at).toBe(2000);
  });

  test("maxWait rejects up front when the real wait exceeds it", async () => {
    const { clock, overall } = await layout();
    const direct = track(clock, overall.acquire(2, { maxWait: 600 }));
    await clock.advance(0);
    expect(direct.error).toBeInstanceOf(MaxWaitExceededError);
    expect((direct.error as MaxWaitExceededError).retryAfter).toBe(1500);
  });
});

describe("predictions with work in flight on a window counted from completion (red-team, 2026-11-27)", () => {
  /** limit 1 per 100 ms: a 1000-ms task holds the slot from t=0, one acquire queued behind it. */
  async function inFlight() {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 100, clock, countFrom: "completion" });
    void limiter.schedule(() => new Promise<void>((resolve) => clock.setTimeout(resolve, 1000)));
    const queued = track(clock, limiter.acquire());
    return { clock, limiter, queued };
  }

  test("a hint made earlier does not turn into 'granted now' later: tryAcquire never says 0 without granting", async () => {
    const { clock, limiter, queued } = await inFlight();
    expect(limiter.tryAcquire()).toBe(200); // the task assumed to end now: the queued one at 100, this at 200
    await clock.advanceTo(500);
    // Before the fix the cached copies still had the task ending at 0, and said 0 with nothing taken.
    expect(limiter.tryAcquire()).toBe(200);
    expect(limiter.stats().granted).toBe(1);
    const strict = track(clock, limiter.acquire(1, { maxWait: 0 }));
    await clock.advanceTo(5000);
    expect(strict.error).toBeInstanceOf(MaxWaitExceededError);
    expect(queued.at).toBe(1100);
  });

  test("a maxWait the cached figure would pass but a fresh one would not is refused, with the fresh figure", async () => {
    const { clock, limiter } = await inFlight();
    expect(limiter.tryAcquire()).toBe(200);
    await clock.advanceTo(500);
    // Cached: 200 − 500 ≤ 0; fresh: 200. A maxWait of 150 is refused, one of 1000 accepted.
    const near = track(clock, limiter.acquire(1, { maxWait: 150 }));
    const far = track(clock, limiter.acquire(1, { maxWait: 1000 }));
    await clock.advanceTo(5000);
    expect(near.error).toBeInstanceOf(MaxWaitExceededError);
    expect((near.error as MaxWaitExceededError).retryAfter).toBe(200);
    expect(far.at).toBe(1200);
  });
});

/** Counts calls of a policy class's `earliest` (clones included: they share the prototype). */
function countEarliest(proto: { earliest(permits: number, now: number): number }) {
  const original = proto.earliest;
  const counter = { calls: 0, restore: () => void (proto.earliest = original) };
  proto.earliest = function (this: unknown, permits: number, now: number): number {
    counter.calls++;
    return original.call(this, permits, now);
  };
  return counter;
}

describe("the cost of predictions", () => {
  type Make = (clock: ManualClock) => SmoothLimiter | WindowLimiter;

  /** Queues n callers with maxWait; returns how many times policies were asked `earliest`. */
  async function cost(make: Make, counter: { calls: number }, n: number): Promise<number> {
    const clock = new ManualClock();
    const limiter = make(clock);
    const before = counter.calls;
    const hints: Array<{ due: number; at?: number }> = [];
    for (let i = 0; i < n; i++) {
      if (i % 97 === 0) {
        // Every so often, check that the cached prediction is the real grant time.
        const hint = limiter.tryAcquire();
        if (hint === 0) continue;
        const entry: { due: number; at?: number } = { due: clock.now() + hint };
        hints.push(entry);
        void limiter.acquire(1, { maxWait: hint }).then(() => void (entry.at = clock.now()));
      } else {
        void limiter.acquire(1, { maxWait: 1e12 });
      }
    }
    const calls = counter.calls - before;
    await clock.runAll();
    for (const h of hints) expect(h.at).toBe(h.due);
    expect(hints.length).toBeGreaterThan(n / 200);
    return calls;
  }

  test.each([
    ["SmoothLimiter", (clock: ManualClock) => new SmoothLimiter({ limit: 100, interval: 1000, clock }), SmoothPolicy.prototype],
    ["WindowLimiter", (clock: ManualClock) => new WindowLimiter({ limit: 100, interval: 1000, clock }), WindowPolicy.prototype],
  ] as const)("n callers with maxWait on a %s cost O(n) policy decisions in total, and each prediction is exact", async (_, make, proto) => {
    const counter = countEarliest(proto);
    try {
      const small = await cost(make, counter, 1000);
      const large = await cost(make, counter, 4000);
      // Linear: four times the callers, about four times the work (quadratic would be sixteen).
      expect(large).toBeLessThan(small * 5);
      expect(large).toBeLessThan(4000 * 5);
    } finally {
      counter.restore();
    }
  });
});
