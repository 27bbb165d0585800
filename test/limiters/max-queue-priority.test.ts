/**
 * `maxQueue` bounds the callers that WAIT. A newcomer whose priority puts it ahead of the waiters,
 * and that the limiter can grant at once, never waits: a full queue must not refuse it.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { ManualClock, QueueFullError, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
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

  test("property: refuses only callers that would wait, and admits the rest exactly as an unbounded twin grants them", async () => {
    const reach = new Reach("maxQueue with priorities");
    const call = fc.record({
      permits: fc.integer({ min: 1, max: 4 }),
      priority: fc.constantFrom(-1, 0, 0, 1, 3),
      after: fc.constantFrom(0, 0, 0, 50, 250, 700),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("window", "smooth"),
        fc.integer({ min: 0, max: 3 }),
        fc.constantFrom(0, 200, Infinity),
        fc.array(call, { minLength: 1, maxLength: 24 }),
        async (kind, maxQueue, priorityAging, calls) => {
          reach.runs++;
          const clock = new ManualClock();
          const make = (bound: number) =>
            kind === "window"
              ? new WindowLimiter({ limit: 4, interval: 1000, clock, maxQueue: bound, priorityAging })
              : new SmoothLimiter({ limit: 4, interval: 1000, burst: 3, clock, maxQueue: bound, priorityAging });
          const bounded = make(maxQueue);
          const twin = make(Infinity);
          const grants: [ReturnType<typeof track>, ReturnType<typeof track>][] = [];
          for (const c of calls) {
            await clock.advance(c.after);
            const full = bounded.stats().queued >= maxQueue;
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
    reach.atLeast({ "refused while full": 150, "admitted with the queue full": 30 });
  });
});
