/** SmoothLimiter: evenly spaced permits with future debt. */
import { ManualClock, SmoothLimiter } from "../../src/index.ts";
import { expect, track } from "./expect.ts";
import { describe, test } from "./harness.ts";
import { grantedAt } from "./util.ts";

describe("SmoothLimiter", () => {
  test("2 per second: acquire(10) at t=0 is granted at once, the next single permit at t=5000", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 2, interval: 1000, clock });
    const big = track(grantedAt(clock, limiter.acquire(10)));
    const next = track(grantedAt(clock, limiter.acquire()));
    await clock.advance(0);
    expect(big.state).toBe("fulfilled");
    expect(big.value).toBe(0);
    await clock.advance(4999);
    expect(next.state).toBe("pending");
    await clock.advance(1);
    expect(next.value).toBe(5000);
  });

  test("4 per second: five requests at t=0 are granted 250 ms apart", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 4, interval: 1000, clock });
    const times = Array.from({ length: 5 }, () => grantedAt(clock, limiter.acquire()));
    await clock.advance(1000);
    expect(await Promise.all(times)).toEqual([0, 250, 500, 750, 1000]);
  });

  test("idle time is stored as up to `burst` permits, spent back to back on top of the one due", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 1, interval: 1000, burst: 3, initialPermits: 0, clock });
    await limiter.acquire(); // t=0: no stored permits yet
    await clock.advance(60_000); // long idle: only `burst` permits are kept
    const times = Array.from({ length: 6 }, () => grantedAt(clock, limiter.acquire()));
    await clock.advance(2000);
    expect(await Promise.all(times)).toEqual([60_000, 60_000, 60_000, 60_000, 61_000, 62_000]);
  });

  test("a fractional rate works exactly: 0.5 per second grants every 2000 ms, with no drift", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 0.5, interval: 1000, clock });
    const times = Array.from({ length: 4 }, () => grantedAt(clock, limiter.acquire()));
    await clock.advance(6000);
    expect(await Promise.all(times)).toEqual([0, 2000, 4000, 6000]);
  });
});
