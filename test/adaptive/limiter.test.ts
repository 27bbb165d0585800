import { describe, expect, test } from "vitest";
import fc from "fast-check";
import { AdaptiveLimiter, ManualClock, type RateChange, sendAdaptive } from "../../src/index.ts";
import { track } from "../helpers.ts";
import { Reach } from "../reach.ts";
import { FORGET_CUT_AFTER_MS, FORGET_CUT_AFTER_STEPS } from "../../src/adaptive/limiter.ts";

const grantTimes = async (clock: ManualClock, limiter: AdaptiveLimiter, n: number) => {
  const outcomes = Array.from({ length: n }, () => track(clock, limiter.acquire()));
  return outcomes;
};

describe("AdaptiveLimiter", () => {
  test("no blind burst: with nothing known, 50 callers arriving at once go one per second", async () => {
    const clock = new ManualClock();
    const limiter = new AdaptiveLimiter({ clock });
    const outcomes = await grantTimes(clock, limiter, 50);
    await clock.advanceTo(4500);
    expect(outcomes.filter((o) => o.settled).map((o) => o.at)).toEqual([0, 1000, 2000, 3000, 4000]);
  });

  test("told a limit, it starts there, spaced (no burst)", async () => {
    const clock = new ManualClock();
    const limiter = new AdaptiveLimiter({ clock, maxRate: 20 });
    const outcomes = await grantTimes(clock, limiter, 5);
    await clock.runAll();
    expect(outcomes.map((o) => o.at)).toEqual([0, 50, 100, 150, 200]);
  });

  test("a cut re-times the callers already queued, emits the change, and the pause the server asked for ends spaced", async () => {
    const clock = new ManualClock();
    const changes: RateChange[] = [];
    const limiter = new AdaptiveLimiter({ clock, maxRate: 10, onChange: (c) => changes.push(c) });
    const first = limiter.onSent(false);
    await limiter.acquire(); // granted at 0; next due at 100
    const outcomes = await grantTimes(clock, limiter, 4);
    await clock.advanceTo(50);
    const advice = limiter.onResponse(first, new Response(null, { status: 429, headers: { "Retry-After": "2" } }));
    expect(advice.pauseMs).toBe(2000);
    expect(changes).toHaveLength(1);
    expect(changes[0]).toMatchObject({ reason: "throttled", previous: 10, at: 50, epoch: 1 });
    expect(limiter.lastChange).toBe(changes[0]);
    const rate = limiter.rate;
    expect(rate).toBeLessThan(10);
    await clock.runAll();
    // Paused until 2050, then spaced at the new rate: no burst of the four queued callers.
    const spacing = 1000 / rate;
    outcomes.forEach((o, i) => expect(o.at).toBeCloseTo(2050 + i * spacing, 6));
  });

  test("setLimit changes the told limit live: queued callers are re-timed at once", async () => {
    const clock = new ManualClock();
    const limiter = new AdaptiveLimiter({ clock, maxRate: 1 });
    const outcomes = await grantTimes(clock, limiter, 4);
    await clock.advanceTo(0);
    limiter.setLimit({ limit: 600, interval: 60_000 }); // 10 per second
    expect(limiter.lastChange).toMatchObject({ reason: "set-limit", rate: 10, previous: 1 });
    await clock.runAll();
    expect(outcomes.map((o) => o.at)).toEqual([0, 100, 200, 300]); // the grant at 0 re-priced at the new rate
    expect(() => limiter.setLimit({ limit: 0 })).toThrow(new RangeError("`limit` must be a positive finite number, got 0"));
  });

  test("sendAdaptive feeds the answer back, and a failed send only leaves the in-flight count", async () => {
    const clock = new ManualClock();
    const limiter = new AdaptiveLimiter({ clock, maxRate: 5 });
    const response = await sendAdaptive(limiter, async () => new Response("ok"));
    expect(response.status).toBe(200);
    expect(limiter.controller.inFlight).toBe(0);
    const failed = expect(sendAdaptive(limiter, () => Promise.reject(new Error("network")))).rejects.toThrow("network");
    await clock.runAll();
    await failed;
    expect(limiter.controller.inFlight).toBe(0);
    expect(limiter.rate).toBe(5);
  });

  test("options are validated", () => {
    expect(() => new AdaptiveLimiter({ onChange: 3 as never })).toThrow(TypeError);
    expect(() => new AdaptiveLimiter({ minRate: -1 })).toThrow(/`minRate`/);
    expect(() => new AdaptiveLimiter({ maxQueue: -1 })).toThrow(/`maxQueue`/);
  });
});

test("property: a rate change re-times queued callers — after it, grants are spaced at the new rate from the next one due", async () => {
  const reach = new Reach("adaptive re-timing");
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 50 }),
      fc.integer({ min: 2, max: 30 }),
      fc.integer({ min: 0, max: 3000 }).map((t) => t + 0.5),
      fc.boolean(),
      async (told, n, changeAt, cut) => {
        reach.run();
        const clock = new ManualClock();
        const limiter = new AdaptiveLimiter({ clock, maxRate: told });
        const tag = limiter.onSent(true);
        const outcomes = await grantTimes(clock, limiter, n);
        await clock.advanceTo(changeAt);
        const before = outcomes.filter((o) => o.settled).length;
        const oldSpacing = 1000 / told;
        if (cut) limiter.onOutcome(tag, { throttled: true });
        else limiter.setLimit({ limit: told * 2 });
        const spacing = 1000 / limiter.rate;
        await clock.runAll();
        const after = outcomes.slice(before).map((o) => o.at!);
        if (reach.hit("several queued at the change", after.length >= 2)) {
          // The last grant is re-priced at the new rate: the next is due the new spacing after it (or
          // at the change, when that is already past); the rest at the new spacing.
          expect(after[0]).toBeCloseTo(Math.max(changeAt, (before - 1) * oldSpacing + spacing), 6);
          after.forEach((t, i) => expect(t).toBeCloseTo(after[0]! + i * spacing, 6));
          reach.hit(cut ? "lowered" : "raised");
        }
      },
    ),
    { numRuns: 200 },
  );
  reach.atLeast({ "several queued at the change": 60, lowered: 25, raised: 25 });
});

describe("AdaptiveLimiter.isIdle (KeyedLimiter eviction)", () => {
  const ok = new Response(null, { status: 200 });
  const refused = new Response(null, { status: 429 });

  test("a request in flight keeps it (its answer must reach the learned state)", async () => {
    const clock = new ManualClock();
    const limiter = new AdaptiveLimiter({ clock });
    await limiter.acquire();
    const tag = limiter.onSent(false);
    await clock.advance(10_000);
    expect(limiter.isIdle()).toBe(false);
    limiter.onResponse(tag, ok);
    expect(limiter.isIdle()).toBe(true);
  });

  /** A limiter told 10/s whose first request was refused with `response`: its rate is cut below the start. */
  async function cutOnce(response: Response) {
    const clock = new ManualClock();
    const limiter = new AdaptiveLimiter({ clock, maxRate: 10 });
    await limiter.acquire();
    // A fetch with `maxRetryAfter: 300_000` would honour a delay of minutes (the default, 60 s, would not).
    limiter.onResponse(limiter.onSent(false), response, { maxDelay: 300_000 });
    expect(limiter.rate).toBeLessThan(10);
    return { clock, limiter };
  }

  test("a rate cut below where a fresh limiter starts is kept while the cut is news (10 min, or 10 probe steps), then forgotten", async () => {
    const { clock, limiter } = await cutOnce(refused);
    await clock.advance(FORGET_CUT_AFTER_MS - 1);
    expect(limiter.isIdle()).toBe(false); // forgetting it now would send faster than the server allows
    await clock.advance(1);
    // Else every host that ever refused one request would stay in memory for good.
    expect(limiter.isIdle()).toBe(true);
  });

  test("behind a long window (a Retry-After of minutes), a cut is kept for 10 of its windows", async () => {
    const { clock, limiter } = await cutOnce(new Response(null, { status: 429, headers: { "retry-after": "120" } }));
    const step = limiter.controller.step;
    expect(step).toBeGreaterThanOrEqual(120_000); // the window the delay implies
    await clock.advance(FORGET_CUT_AFTER_STEPS * step - 1);
    expect(limiter.isIdle()).toBe(false);
    await clock.advance(1);
    expect(limiter.isIdle()).toBe(true);
  });

  test("a learned rate above the start may be forgotten (a fresh limiter is slower, never faster)", async () => {
    const clock = new ManualClock();
    const limiter = new AdaptiveLimiter({ clock });
    for (let i = 0; i < 3; i++) {
      const waited = limiter.queued > 0 || limiter.tryAcquire() > 0;
      if (waited) await Promise.all([limiter.acquire(), clock.advance(1000)]);
      const tag = limiter.onSent(true);
      await clock.advance(1000);
      limiter.onResponse(tag, ok);
    }
    expect(limiter.rate).toBeGreaterThan(1);
    await clock.advance(10_000);
    expect(limiter.isIdle()).toBe(true);
  });
});
