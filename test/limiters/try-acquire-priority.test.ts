/**
 * `tryAcquire()` answers 0 only when it took the permits. With waiters queued at a lower priority, a
 * newcomer at the default priority ranks ahead of them: when it fits now, `acquire()` grants it at
 * once, and `tryAcquire()` must take it the same way — it used to answer 0 and take nothing
 * (red-team, 2026-11-27: 50 of 50 answered 0 against a window of 10 with 5 left).
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import {
  combine, FixedWindowLimiter, KeyedLimiter, ManualClock, MaxWaitExceededError, SlidingCounterLimiter, SmoothLimiter, WindowLimiter,
} from "../../src/index.ts";
import { track } from "../helpers.ts";
import { Reach } from "../reach.ts";

describe("tryAcquire with lower-priority waiters queued", () => {
  test.each([
    ["WindowLimiter", (clock: ManualClock) => new WindowLimiter({ limit: 10, interval: 1000, clock })],
    ["FixedWindowLimiter", (clock: ManualClock) => new FixedWindowLimiter({ limit: 10, interval: 1000, clock })],
    ["SlidingCounterLimiter", (clock: ManualClock) => new SlidingCounterLimiter({ limit: 10, interval: 1000, clock })],
  ])("%s: of 50 tries with 5 of 10 left, 5 answer 0 and each took its permit", async (_name, make) => {
    const clock = new ManualClock();
    const limiter = make(clock);
    const grants: number[] = [];
    limiter.events.addEventListener("grant", (e) => grants.push((e as CustomEvent<{ permits: number }>).detail.permits));
    await limiter.acquire(5);
    const low = track(clock, limiter.acquire(8, { priority: -1 })); // waits: only 5 are left
    const answers = Array.from({ length: 50 }, () => limiter.tryAcquire(1));
    expect(answers.filter((a) => a === 0)).toHaveLength(5);
    expect(answers.slice(5).every((a) => a > 0)).toBe(true);
    expect(limiter.stats().granted).toBe(6);
    await clock.advance(0);
    expect(grants).toEqual([5, 1, 1, 1, 1, 1]);
    await clock.advance(5000);
    expect(low.error).toBeUndefined();
  });

  test("a combination and a KeyedLimiter alike", async () => {
    const clock = new ManualClock();
    const window = new WindowLimiter({ limit: 10, interval: 1000, clock });
    const both = combine(new SmoothLimiter({ limit: 1000, burst: 1000, clock }), window);
    await both.acquire(5);
    void both.acquire(8, { priority: -1 });
    expect(Array.from({ length: 20 }, () => both.tryAcquire(1)).filter((a) => a === 0)).toHaveLength(5);
    expect(both.stats().granted).toBe(6);

    const keyed = new KeyedLimiter({ create: () => new WindowLimiter({ limit: 10, interval: 1000, clock }), clock });
    await keyed.acquire("k", 5);
    void keyed.acquire("k", 8, { priority: -1 });
    expect(Array.from({ length: 20 }, () => keyed.tryAcquire("k", 1)).filter((a) => a === 0)).toHaveLength(5);
  });

  test("property: tryAcquire(n) decides as acquire(n, { maxWait: 0 }) does on a twin — the same grants, the same hint", async () => {
    const reach = new Reach("tryAcquire with priorities");
    const op = fc.record({
      kind: fc.constantFrom("wait", "wait", "try", "try", "try"),
      permits: fc.constantFrom(1, 1, 2, 3, 8, 10),
      priority: fc.constantFrom(-2, -1, -1, -1, 0, 1),
      after: fc.constantFrom(0, 0, 0, 10, 100, 400),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("window", "fixed", "sliding", "smooth", "combined"),
        fc.constantFrom(0, 300, Infinity),
        // Some of the window taken, then a whole-window ask at a low priority that waits: the state
        // where a small newcomer at 0 ranks ahead and fits now.
        fc.tuple(fc.integer({ min: 1, max: 9 }), fc.constantFrom(-2, -1)).map(([taken, low]) => [
          { kind: "wait", permits: taken, priority: 0, after: 0 },
          { kind: "wait", permits: 10, priority: low, after: 0 },
        ]),
        fc.array(op, { minLength: 2, maxLength: 25 }),
        async (kind, priorityAging, opening, rest) => {
          const ops = [...opening, ...rest];
          reach.runs++;
          const clock = new ManualClock();
          const make = () => {
            const base = { limit: 10, interval: 1000, clock, priorityAging };
            if (kind === "window") return new WindowLimiter(base);
            if (kind === "fixed") return new FixedWindowLimiter(base);
            if (kind === "sliding") return new SlidingCounterLimiter(base);
            if (kind === "smooth") return new SmoothLimiter({ ...base, burst: 9 });
            return combine(new SmoothLimiter({ ...base, limit: 20, burst: 19 }), new WindowLimiter(base));
          };
          const mine = make();
          const twin = make();
          const waits: [ReturnType<typeof track>, ReturnType<typeof track>][] = [];
          for (const o of ops) {
            await clock.advance(o.after);
            if (o.kind === "wait") {
              waits.push([track(clock, mine.acquire(o.permits, { priority: o.priority })), track(clock, twin.acquire(o.permits, { priority: o.priority }))]);
              await clock.advance(0);
              continue;
            }
            const queued = mine.stats().queued;
            const answer = mine.tryAcquire(o.permits);
            let hint: number | undefined;
            const theirs = twin.acquire(o.permits, { maxWait: 0 }).then(() => 0, (e: unknown) => (hint = (e as MaxWaitExceededError).retryAfter));
            await clock.advance(0);
            await theirs;
            if (answer === 0) {
              reach.hit("granted now with waiters queued", queued > 0);
              expect(hint).toBeUndefined();
            } else {
              reach.hit("refused with waiters queued", queued > 0);
              expect(answer).toBe(hint);
            }
            expect(mine.stats().granted).toBe(twin.stats().granted);
          }
          await clock.advance(60_000);
          for (const [a, b] of waits) {
            expect(a.error).toBeUndefined();
            expect(a.at).toBe(b.at);
          }
        },
      ),
      { numRuns: 300 },
    );
    reach.atLeast({ "granted now with waiters queued": 100, "refused with waiters queued": 200 });
  });
});
