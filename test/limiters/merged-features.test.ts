/**
 * Where priorities, stats/events, reservations, ConcurrencyLimiter and setLimit meet (they were built
 * on parallel branches): a reservation's priority and per-policy amounts, `stats().inFlight` over
 * open reservations, running tasks and concurrency slots (each counted once), and `ratechange` from
 * `setLimit` and from `AdaptiveLimiter`.
 */
import { describe, expect, test } from "vitest";
import {
  AdaptiveLimiter,
  combine,
  ConcurrencyLimiter,
  FixedWindowLimiter,
  KeyedLimiter,
  ManualClock,
  MaxWaitExceededError,
  SlidingCounterLimiter,
  SmoothLimiter,
  WindowLimiter,
} from "../../src/index.ts";
import { track } from "../helpers.ts";

type Detail = Record<string, unknown>;

function listen(target: EventTarget, type: string): Detail[] {
  const seen: Detail[] = [];
  target.addEventListener(type, (e) => seen.push((e as CustomEvent<Detail>).detail));
  return seen;
}

describe("reservations with priority", () => {
  test("a reservation with a higher priority goes before earlier default-priority callers", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    await limiter.acquire();
    const plain = track(clock, limiter.acquire());
    const reserved = track(clock, limiter.reserve(1, { priority: 5 }));
    await clock.advance(1000);
    expect(reserved.at).toBe(1000);
    expect(plain.settled).toBe(false);
    await clock.advance(1000);
    expect(plain.at).toBe(2000);
  });

  test("the front waiter's own amounts decide, and maxWait predicts with the priority", async () => {
    const clock = new ManualClock();
    const api = combine({
      requests: new WindowLimiter({ limit: 10, interval: 1000, clock }),
      tokens: new WindowLimiter({ limit: 100, interval: 1000, clock }),
    });
    (await api.reserve({ requests: 1, tokens: 100 })).settle();
    const small = track(clock, api.reserve({ tokens: 30 }));
    // Ahead of `small` by priority: granted at 1000 (80 of the 100 tokens), `small` then waits a window.
    // Predicted without the priority (behind `small`), it would wait 2000 ms and be refused.
    const big = track(clock, api.reserve({ requests: 1, tokens: 80 }, { priority: 1, maxWait: 1000 }));
    await clock.advance(1000);
    expect(big.at).toBe(1000);
    expect(small.settled).toBe(false);
    await clock.advance(1000);
    expect(small.at).toBe(2000);
    // Behind a default-priority one instead, the same request is refused up front.
    await clock.advance(1000);
    (await api.reserve({ tokens: 100 })).settle();
    const first = track(clock, api.reserve({ tokens: 30 }));
    await expect(api.reserve({ requests: 1, tokens: 80 }, { maxWait: 1000 })).rejects.toBeInstanceOf(MaxWaitExceededError);
    await clock.advance(1000);
    expect(first.at).toBe(4000);
  });
});

describe("stats().inFlight: running tasks, open reservations and concurrency slots, each once", () => {
  test("ConcurrencyLimiter: a running task and an open reservation hold a slot each, and count once each", async () => {
    const clock = new ManualClock();
    const slots = new ConcurrencyLimiter({ limit: 3, clock });
    let finish!: () => void;
    const task = slots.schedule(() => new Promise<void>((resolve) => (finish = resolve)));
    const r = await slots.reserve();
    expect(slots.stats()).toMatchObject({ inFlight: 2, granted: 2, queued: 0 });
    // A third held through the queue (granted in a scan, not at once) counts once too.
    const r2 = await slots.reserve();
    let finishQueued!: () => void;
    const queuedTask = slots.schedule(() => new Promise<void>((resolve) => (finishQueued = resolve)));
    expect(slots.stats()).toMatchObject({ inFlight: 3, queued: 1 });
    r2.release();
    await clock.advance(0);
    expect(slots.stats()).toMatchObject({ inFlight: 3, queued: 0, granted: 4 });
    r.settle();
    expect(slots.stats().inFlight).toBe(2);
    finish();
    await task;
    expect(slots.stats().inFlight).toBe(1);
    finishQueued();
    await queuedTask;
    expect(slots.stats()).toMatchObject({ inFlight: 0, queued: 0, granted: 4 });
  });

  test("a ConcurrencyLimiter has no rate in its stats (its limit is slots, not permits per interval)", () => {
    const slots = new ConcurrencyLimiter({ limit: 4, clock: new ManualClock() });
    expect(slots.stats()).not.toHaveProperty("rate");
    expect(slots.stats()).toMatchObject({ queued: 0, inFlight: 0 });
  });

  test("a rate limiter: open reservations count until settled, cancelled or released (once, whichever comes first)", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 10, burst: 3, clock });
    const a = await limiter.reserve();
    const b = await limiter.reserve(2);
    expect(limiter.stats().inFlight).toBe(2);
    a.cancel();
    a.settle();
    expect(limiter.stats().inFlight).toBe(1);
    b.settle(1);
    b.release();
    expect(limiter.stats().inFlight).toBe(0);
  });

  test("a combination with a ConcurrencyLimiter counts on the combination; KeyedLimiter sums its keys and keeps a key with an open reservation", async () => {
    const clock = new ManualClock();
    const keyed = new KeyedLimiter({
      create: () => combine(new ConcurrencyLimiter({ limit: 2, clock }), new WindowLimiter({ limit: 10, interval: 1000, clock })),
      clock,
      idleTimeout: 1000,
    });
    const r = await keyed.reserve("a");
    let finish!: () => void;
    const task = keyed.schedule("b", () => new Promise<void>((resolve) => (finish = resolve)));
    expect(keyed.stats()).toMatchObject({ inFlight: 2, granted: 2 });
    expect(keyed.stats("a").inFlight).toBe(1);
    await clock.advance(5000);
    keyed.get("c"); // sweeps idle keys: "a" and "b" still have work in flight
    expect(keyed.stats("a").inFlight).toBe(1);
    expect(keyed.stats("b").inFlight).toBe(1);
    r.settle();
    finish();
    await task;
    expect(keyed.stats()).toMatchObject({ inFlight: 0, granted: 2 });
  });

  test("KeyedLimiter keeps a key while its task runs, so stats().inFlight keeps counting it (no eviction mid-task)", async () => {
    const clock = new ManualClock();
    const keyed = new KeyedLimiter({ create: () => new WindowLimiter({ limit: 10, interval: 1000, clock }), clock, idleTimeout: 1000 });
    let finish!: () => void;
    const task = keyed.schedule("b", () => new Promise<void>((resolve) => (finish = resolve)));
    await clock.advance(5000); // the window is at rest: only the running task keeps "b"
    keyed.get("c"); // sweeps idle keys
    expect(keyed.stats()).toMatchObject({ inFlight: 1, granted: 1 });
    expect(keyed.stats("b").inFlight).toBe(1);
    finish();
    await task;
    expect(keyed.stats()).toMatchObject({ inFlight: 0, granted: 1 });
    await clock.advance(5000);
    keyed.get("c");
    expect(keyed.size).toBe(1); // then "b" is evicted (its totals kept)
    expect(keyed.stats()).toMatchObject({ inFlight: 0, granted: 1 });
  });
});

describe("ratechange from setLimit and AdaptiveLimiter", () => {
  const cases = [
    ["SmoothLimiter", (clock: ManualClock) => new SmoothLimiter({ limit: 10, interval: 1000, clock })],
    ["WindowLimiter", (clock: ManualClock) => new WindowLimiter({ limit: 10, interval: 1000, clock })],
    ["FixedWindowLimiter", (clock: ManualClock) => new FixedWindowLimiter({ limit: 10, interval: 1000, clock })],
    ["SlidingCounterLimiter", (clock: ManualClock) => new SlidingCounterLimiter({ limit: 10, interval: 1000, clock })],
  ] as const;
  for (const [name, make] of cases) {
    test(`${name}.setLimit fires ratechange and stats().rate follows the live limit`, () => {
      const limiter = make(new ManualClock());
      const seen = listen(limiter.events, "ratechange");
      expect(limiter.stats().rate).toEqual({ limit: 10, interval: 1000 });
      limiter.setLimit({ limit: 4, interval: 500 });
      expect(seen).toEqual([{ limit: 4, interval: 500, previous: { limit: 10, interval: 1000 }, reason: "setLimit" }]);
      expect(limiter.stats().rate).toEqual({ limit: 4, interval: 500 });
      limiter.setLimit({ limit: 6 }); // the interval stays
      expect(seen[1]).toEqual({ limit: 6, interval: 500, previous: { limit: 4, interval: 500 }, reason: "setLimit" });
    });
  }

  test("a refused setLimit (a queued request larger than the new limit) fires nothing and keeps the rate", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 10, interval: 1000, clock });
    await limiter.acquire(10);
    const big = limiter.acquire(8);
    const seen = listen(limiter.events, "ratechange");
    expect(() => limiter.setLimit({ limit: 5 })).toThrow(RangeError);
    expect(seen).toEqual([]);
    expect(limiter.stats().rate).toEqual({ limit: 10, interval: 1000 });
    await clock.advance(1000);
    await big;
  });

  test("AdaptiveLimiter: each change of the learned rate fires ratechange with the controller's reason", () => {
    const clock = new ManualClock();
    const limiter = new AdaptiveLimiter({ clock, maxRate: 20 });
    const seen = listen(limiter.events, "ratechange");
    const start = limiter.rate;
    expect(limiter.stats().rate).toEqual({ limit: start, interval: 1000 });
    const tag = limiter.onSent(true);
    limiter.onOutcome(tag, { throttled: true });
    expect(limiter.lastChange?.reason).toBe("throttled");
    expect(seen).toEqual([{ limit: limiter.rate, interval: 1000, previous: { limit: start, interval: 1000 }, reason: "throttled" }]);
    expect(limiter.stats().rate).toEqual({ limit: limiter.rate, interval: 1000 });
    limiter.setLimit({ limit: 5 });
    expect(seen.at(-1)).toMatchObject({ limit: limiter.rate, interval: 1000, reason: "set-limit" });
    expect(seen.length).toBe(2);
  });
});
