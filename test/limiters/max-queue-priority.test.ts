/**
 * `maxQueue` bounds the callers that WAIT. A newcomer whose priority puts it ahead of the waiters,
 * and that the limiter can grant at once, never waits: a full queue must not refuse it.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { CombinedLimiter, ConcurrencyLimiter, FixedWindowLimiter, ManualClock, QueueFullError, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import { track } from "../helpers.ts";
import { Reach } from "../reach.ts";

describe("maxQueue with priorities", () => {
  test("a higher-priority newcomer that fits now is granted though the queue is full", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 4, interval: 1000, clock, maxQueue: 1 });
    await limiter.acquire(1);
    const big = track(clock, limiter.acquire(4)); // needs the whole window: waits until 1000
    const urgent = track(clock, limiter.acquire(1, { priority: 5 }));
    await clock.advance(0);
    expect(urgent.error).toBeUndefined();
    expect(urgent.at).toBe(0);
    expect(limiter.stats().queued).toBe(1);
    // One that must wait is still refused, whatever its priority.
    await expect(limiter.acquire(3, { priority: 5 })).rejects.toBeInstanceOf(QueueFullError);
    // A newcomer at the default priority goes behind the waiter: refused as before.
    await expect(limiter.acquire(1)).rejects.toBeInstanceOf(QueueFullError);
    await clock.advance(2000);
    expect(big.at).toBe(1000); // when the two permits taken at 0 leave the window
  });

  test("reserve() lets such a newcomer in too", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 4, interval: 1000, clock, maxQueue: 1 });
    await limiter.acquire(1);
    void limiter.acquire(4);
    const reservation = await limiter.reserve(1, { priority: 1 });
    expect(clock.now()).toBe(0);
    reservation.settle(1);
    await expect(limiter.reserve(1)).rejects.toBeInstanceOf(QueueFullError);
  });

  test("a ConcurrencyLimiter's maxQueue holds with priorities in play: only a newcomer a free slot takes now goes past it", async () => {
    // Red-team (2026-11-27): with every slot busy, priorities [0, 1, 1, 1] all queued past maxQueue 1
    // (the prediction, a lower bound, assumes work in flight ends at once and answered "now").
    for (const limiter of [
      new ConcurrencyLimiter({ limit: 1, maxQueue: 1 }),
      new CombinedLimiter([new WindowLimiter({ limit: 100, interval: 1000 }), new ConcurrencyLimiter({ limit: 1 })], { maxQueue: 1 }),
    ]) {
      const held = await limiter.reserve(1);
      const outcomes = [0, 1, 1, 1].map((priority) => limiter.reserve(1, { priority }).then(() => "granted", (e: unknown) => (e as Error).name));
      await new Promise((resolve) => setImmediate(resolve));
      held.release();
      expect(await Promise.all(outcomes.slice(1))).toEqual(["QueueFullError", "QueueFullError", "QueueFullError"]);
      expect(await outcomes[0]).toBe("granted");
    }
    // A slot free, a bigger ask waiting for two: a higher-priority newcomer for one fits now and goes.
    const limiter = new ConcurrencyLimiter({ limit: 2, maxQueue: 1 });
    const first = await limiter.reserve(1);
    const big = limiter.reserve(2);
    const urgent = await limiter.reserve(1, { priority: 1 });
    expect(limiter.stats()).toMatchObject({ inFlight: 2, queued: 1 });
    // No slot left: it would wait, and the queue is full.
    await expect(limiter.reserve(1, { priority: 1 })).rejects.toBeInstanceOf(QueueFullError);
    first.release();
    urgent.release();
    (await big).release();
  });

  test("property: refuses only callers that would wait, and admits the rest exactly as an unbounded twin grants them", async () => {
    const reach = new Reach("maxQueue with priorities");
    const call = fc.record({
      // Whole-window asks that wait, and small ones that fit beside them.
      permits: fc.constantFrom(1, 1, 2, 8, 10),
      priority: fc.constantFrom(-1, 0, 0, 1, 3, 3),
      after: fc.constantFrom(0, 0, 0, 0, 50, 250, 700),
    });
    // Some of the window taken, then a whole-window ask that waits: the state where a small
    // higher-priority newcomer fits now although the queue is full (a smooth limiter never has it:
    // while one waits, its debt stops everyone).
    const opening = fc.tuple(fc.integer({ min: 1, max: 9 }), fc.constantFrom(-1, 0)).map(([taken, low]) => [
      { permits: taken, priority: 0, after: 0 },
      { permits: 10, priority: low, after: 0 },
    ]);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("window", "fixed", "smooth"),
        fc.constantFrom(0, 1, 1, 2, 3),
        fc.constantFrom(0, 200, Infinity),
        opening,
        fc.array(call, { minLength: 1, maxLength: 20 }),
        async (kind, maxQueue, priorityAging, first, rest) => {
          reach.runs++;
          const clock = new ManualClock();
          const make = (bound: number) => {
            const base = { limit: 10, interval: 1000, clock, maxQueue: bound, priorityAging };
            if (kind === "window") return new WindowLimiter(base);
            if (kind === "fixed") return new FixedWindowLimiter(base);
            return new SmoothLimiter({ ...base, burst: 9 });
          };
          const bounded = make(maxQueue);
          const twin = make(Infinity);
          const grants: [ReturnType<typeof track>, ReturnType<typeof track>][] = [];
          for (const c of [...first, ...rest]) {
            await clock.advance(c.after);
            const queued = bounded.stats().queued;
            const full = queued > 0 && queued >= maxQueue; // waiters there: only its priority can let it in
            const mine = bounded.acquire(c.permits, { priority: c.priority });
            let refused = false;
            mine.catch((e: unknown) => (refused = e instanceof QueueFullError));
            await new Promise((resolve) => setImmediate(resolve)); // a refusal is a rejected promise: settled by now
            if (refused) {
              reach.hit("refused while full");
              // The twin must make it wait; it then leaves at once (an abort takes no capacity), so both stay alike.
              const controller = new AbortController();
              const theirs = track(clock, twin.acquire(c.permits, { priority: c.priority, signal: controller.signal }));
              await clock.advance(0);
              expect(theirs.at).toBeUndefined();
              controller.abort();
              await clock.advance(0);
              continue;
            }
            reach.hit("admitted with the queue full", full);
            grants.push([track(clock, mine), track(clock, twin.acquire(c.permits, { priority: c.priority }))]);
            await clock.advance(0);
            expect(bounded.stats().queued).toBeLessThanOrEqual(maxQueue);
          }
          await clock.advance(60_000);
          for (const [mine, theirs] of grants) {
            expect(mine.error).toBeUndefined();
            expect(mine.at).toBe(theirs.at);
          }
        },
      ),
      { numRuns: 300 },
    );
    reach.atLeast({ "refused while full": 600, "admitted with the queue full": 40 });
  });
});
