/** FixedWindowLimiter and SlidingCounterLimiter: the O(1) window approximations. */
import { FixedWindowLimiter, ManualClock, SlidingCounterLimiter } from "../../src/index.ts";
import { expect } from "./expect.ts";
import { describe, test } from "./harness.ts";
import { grantedAt } from "./util.ts";

describe("FixedWindowLimiter", () => {
  test("3 per 1000 ms: the fourth request waits for the next window, at t=1000", async () => {
    const clock = new ManualClock();
    const limiter = new FixedWindowLimiter({ limit: 3, interval: 1000, clock });
    const times = Array.from({ length: 4 }, () => grantedAt(clock, limiter.acquire()));
    await clock.advance(1000);
    expect(await Promise.all(times)).toEqual([0, 0, 0, 1000]);
  });

  test("lets up to 2 × limit through across a window edge (the documented trade-off)", async () => {
    const clock = new ManualClock();
    const limiter = new FixedWindowLimiter({ limit: 3, interval: 1000, clock });
    await clock.advanceTo(999);
    const times = Array.from({ length: 6 }, () => grantedAt(clock, limiter.acquire()));
    await clock.advance(1);
    expect(await Promise.all(times)).toEqual([999, 999, 999, 1000, 1000, 1000]);
  });
});

describe("SlidingCounterLimiter", () => {
  test("10 per 1000 ms: ten at t=0, the eleventh once 10% of the previous window has slid out (t=1100)", async () => {
    const clock = new ManualClock();
    const limiter = new SlidingCounterLimiter({ limit: 10, interval: 1000, clock });
    const times = Array.from({ length: 11 }, () => grantedAt(clock, limiter.acquire()));
    await clock.advance(1100);
    expect(await Promise.all(times)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1100]);
  });
});
