/** WindowLimiter: the strict rolling window. */
import { ManualClock, WindowLimiter } from "../../src/index.ts";
import { expect, track } from "./expect.ts";
import { describe, test } from "./harness.ts";
import { grantedAt, mostInAnyWindow } from "./util.ts";

describe("WindowLimiter", () => {
  test("10 per second: ten go at t=0, the eleventh at t=1000", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 10, interval: 1000, clock });
    const first = Array.from({ length: 10 }, () => grantedAt(clock, limiter.acquire()));
    const eleventh = track(grantedAt(clock, limiter.acquire()));
    expect(await Promise.all(first)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    await clock.advance(999);
    expect(eleventh.state).toBe("pending");
    await clock.advance(1);
    expect(eleventh.state).toBe("fulfilled");
    expect(eleventh.value).toBe(1000);
  });

  test("never grants more than `limit` in any window, however the requests arrive", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 5, interval: 1000, clock });
    const grants: Promise<number>[] = [];
    const arrive = (n: number) => {
      for (let i = 0; i < n; i++) grants.push(grantedAt(clock, limiter.acquire()));
    };
    arrive(3);
    await clock.advanceTo(400);
    arrive(3);
    await clock.advanceTo(800);
    arrive(4);
    await clock.advanceTo(2000);
    const times = await Promise.all(grants);
    expect(times).toEqual([0, 0, 0, 400, 400, 1000, 1000, 1000, 1400, 1400]);
    expect(mostInAnyWindow(times, 1000)).toBe(5);
  });

  test("tryAcquire() takes nothing when it would have to wait, and says how long", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 2, interval: 1000, clock });
    expect(limiter.tryAcquire()).toBe(0);
    expect(limiter.tryAcquire()).toBe(0);
    await clock.advance(250);
    expect(limiter.tryAcquire()).toBe(750);
    expect(limiter.tryAcquire()).toBe(750); // the refusal took nothing
    await clock.advance(750);
    expect(limiter.tryAcquire(2)).toBe(0);
    expect(limiter.tryAcquire()).toBe(1000);
  });

  test("a request for more permits than `limit` throws a RangeError: it could never be granted", () => {
    const limiter = new WindowLimiter({ limit: 3, interval: 1000, clock: new ManualClock() });
    expect(() => limiter.acquire(4)).toThrow(RangeError, /`permits` must be at most 3/);
    expect(() => limiter.tryAcquire(4)).toThrow(RangeError);
  });

  test("a clock that steps backwards mints no permits", async () => {
    const clock = new ManualClock(5000);
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    await limiter.acquire();
    clock.jumpTo(0);
    expect(limiter.tryAcquire()).toBeGreaterThan(0);
    clock.jumpTo(6000);
    expect(limiter.tryAcquire()).toBe(0);
  });
});
