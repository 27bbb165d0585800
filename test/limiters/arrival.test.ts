/**
 * Queueing at a kept arrival number (internal `ARRIVAL` option): a request that is a later step of an
 * earlier call — a retry — waits in that call's place, not behind everyone who arrived since.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { Reach } from "../reach.ts";
import { combine, ManualClock, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import { ARRIVAL, newArrival } from "../../src/limiters/waiter.ts";
import type { ScheduleOptions } from "../../src/limiters/limiter.ts";

const at = (place: number, more: ScheduleOptions = {}) => ({ ...more, [ARRIVAL]: place }) as ScheduleOptions;

describe("ARRIVAL: a request queued at an earlier arrival number", () => {
  test("is served in its place, ahead of the 500 that arrived after it, still taking permits", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 10, interval: 1000, clock }); // one per 100 ms
    await limiter.acquire(); // t=0: the next grant is at 100
    const place = newArrival();
    const order: string[] = [];
    const later = Array.from({ length: 500 }, (_, i) => limiter.schedule(() => order.push(`later${i}`)));
    const kept = limiter.schedule(() => order.push("kept"), at(place));
    await clock.advanceTo(100);
    expect(order).toEqual(["kept"]);
    await clock.advanceTo(200);
    expect(order).toEqual(["kept", "later0"]);
    await clock.advanceTo(50_100);
    await Promise.all([kept, ...later]);
    expect(order).toHaveLength(501);
  });

  test("lands between earlier and later waiters (FIFO by arrival), reserve() too", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 10, interval: 1000, clock });
    await limiter.acquire();
    const order: string[] = [];
    const a = limiter.schedule(() => order.push("a"));
    const place = newArrival();
    const b = limiter.schedule(() => order.push("b"));
    const c = limiter.schedule(() => order.push("c"));
    const kept = limiter.reserve(1, at(place)).then((r) => {
      order.push("kept");
      return r;
    });
    await clock.advanceTo(1000);
    await Promise.all([a, b, c, kept]);
    expect(order).toEqual(["a", "kept", "b", "c"]);
  });

  test("an aborted kept-place waiter leaves the queue as it was", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 10, interval: 1000, clock });
    await limiter.acquire();
    const place = newArrival();
    const order: string[] = [];
    const later = [0, 1].map((i) => limiter.schedule(() => order.push(`later${i}`)));
    const abort = new AbortController();
    const kept = limiter.schedule(() => order.push("kept"), at(place, { signal: abort.signal }));
    kept.catch(() => {});
    abort.abort(new Error("gone"));
    await expect(kept).rejects.toThrow("gone");
    await clock.advanceTo(100);
    expect(order).toEqual(["later0"]);
    await clock.advanceTo(200);
    await Promise.all(later);
    expect(order).toEqual(["later0", "later1"]);
    expect(clock.pendingTimers).toBe(0);
  });

  test("across a combination's domain: the kept place goes before later waiters of another channel", async () => {
    const clock = new ManualClock();
    const overall = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const a = combine(overall, new SmoothLimiter({ limit: 100, clock }));
    const b = combine(overall, new SmoothLimiter({ limit: 100, clock }));
    await a.acquire(); // the window is full until t=1000
    const place = newArrival();
    const order: string[] = [];
    const other = b.schedule(() => order.push("b"));
    const kept = a.schedule(() => order.push("kept"), at(place));
    await clock.advanceTo(1000);
    expect(order).toEqual(["kept"]);
    await clock.advanceTo(2000);
    await Promise.all([other, kept]);
    expect(order).toEqual(["kept", "b"]);
  });

  test("a number newArrival never handed out is ignored (queued last)", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 10, interval: 1000, clock });
    await limiter.acquire();
    const order: string[] = [];
    const first = limiter.schedule(() => order.push("first"));
    const bogus = limiter.schedule(() => order.push("bogus"), at(Number.MAX_SAFE_INTEGER));
    const neg = limiter.schedule(() => order.push("neg"), at(-1));
    await clock.advanceTo(300);
    await Promise.all([first, bogus, neg]);
    expect(order).toEqual(["first", "bogus", "neg"]);
  });
});

describe("ARRIVAL property: grants follow arrival numbers, whatever order the requests were queued in", () => {
  test("FIFO by arrival number with priorities 0, kept places among fresh arrivals and aborts (reference: sort by number)", async () => {
    const reach = new Reach("kept arrival");
    await fc.assert(fc.asyncProperty(
      // Each step: take a number now (queued now, or kept to queue later), queue a kept one, or abort one.
      fc.array(fc.record({ op: fc.constantFrom("take", "take", "fresh", "fresh", "kept", "kept", "abort"), pick: fc.nat() }), { minLength: 10, maxLength: 60 }),
      async (steps) => {
        reach.run();
        const clock = new ManualClock();
        const limiter = new SmoothLimiter({ limit: 100, interval: 1000, clock }); // one per 10 ms
        await limiter.acquire(); // the next grant is at 10: everything below queues
        const taken: number[] = [];
        const queued: Array<{ place: number; abort: AbortController; done: Promise<unknown> }> = [];
        const granted: number[] = [];
        for (const { op, pick } of steps) {
          if (op === "take") taken.push(newArrival());
          else if (op === "fresh") {
            const place = newArrival();
            const abort = new AbortController();
            const done = limiter.schedule(() => granted.push(place), at(place, { signal: abort.signal })).catch(() => {});
            queued.push({ place, abort, done });
          } else if (op === "kept" && taken.length > 0) {
            const place = taken.splice(pick % taken.length, 1)[0]!;
            if (queued.some((q) => q.place > place)) reach.hit("inserted before a later arrival");
            const abort = new AbortController();
            const done = limiter.schedule(() => granted.push(place), at(place, { signal: abort.signal })).catch(() => {});
            queued.push({ place, abort, done });
          } else if (op === "abort" && queued.length > 0) {
            const q = queued.splice(pick % queued.length, 1)[0]!;
            q.abort.abort(new Error("gone"));
            reach.hit("aborted");
          }
        }
        await clock.runAll();
        await Promise.all(queued.map((q) => q.done));
        expect(granted).toEqual(queued.map((q) => q.place).sort((a, b) => a - b));
        expect(clock.pendingTimers).toBe(0);
      },
    ), { numRuns: 200 });
    reach.atLeast({ "inserted before a later arrival": 240, aborted: 340 }); // measured ~330 and ~450 per 200 runs
  });
});
