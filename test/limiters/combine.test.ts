import { describe, expect, test } from "vitest";
import { combine, CombinedLimiter, ManualClock, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import { GrantLog, track } from "../helpers.ts";

describe("combine", () => {
  test("a request on one channel never waits for another channel's limit", async () => {
    const clock = new ManualClock();
    const overall = new WindowLimiter({ limit: 10, interval: 1000, clock });
    const slow = combine(overall, new WindowLimiter({ limit: 1, interval: 1000, clock }));
    const fast = combine(overall, new WindowLimiter({ limit: 5, interval: 1000, clock }));
    const log = new GrantLog(clock);
    log.add("slow1", slow.acquire());
    log.add("slow2", slow.acquire()); // waits for the slow channel only
    log.add("fast1", fast.acquire()); // submitted later, but must not queue behind slow2
    await clock.advance(1000);
    expect(log.entries).toEqual([
      { label: "slow1", at: 0 },
      { label: "fast1", at: 0 },
      { label: "slow2", at: 1000 },
    ]);
  });

  test("takes atomically: nothing is charged while another member makes the request wait", async () => {
    const clock = new ManualClock();
    const overall = new WindowLimiter({ limit: 2, interval: 1000, clock });
    const channel = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const both = combine(overall, channel);
    await channel.acquire(); // the channel is full until t=1000
    const waiting = track(clock, both.acquire());
    await clock.advance(10);
    // The waiting combined request holds nothing on `overall`: both of its permits are still free.
    expect(overall.tryAcquire(2)).toBe(0);
    await clock.advance(990);
    // At t=1000 the channel frees, but `overall` is full (taken at t=10) until t=1010.
    expect(waiting.settled).toBe(false);
    await clock.advance(10);
    expect(waiting.at).toBe(1010);
  });

  test("charges every member exactly once per grant, even when a limiter is listed twice", async () => {
    const clock = new ManualClock();
    const a = new SmoothLimiter({ limit: 10, interval: 1000, clock });
    const both = combine(a, a, combine(a));
    await both.acquire();
    expect(a.tryAcquire()).toBe(100);
  });

  test("several windows at once: 2 per second and 3 per 10 seconds", async () => {
    const clock = new ManualClock();
    const limiter = combine(
      new WindowLimiter({ limit: 2, interval: 1000, clock }),
      new WindowLimiter({ limit: 3, interval: 10_000, clock }),
    );
    const log = new GrantLog(clock);
    for (let i = 0; i < 5; i++) log.add(String(i), limiter.acquire());
    await clock.advance(20_000);
    expect(log.times).toEqual([0, 0, 1000, 10_000, 10_000]);
  });

  test("direct users of a member and users of the combination share one order", async () => {
    const clock = new ManualClock();
    const overall = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const channel = combine(overall, new WindowLimiter({ limit: 5, interval: 1000, clock }));
    const log = new GrantLog(clock);
    log.add("direct1", overall.acquire());
    log.add("channel1", channel.acquire());
    log.add("direct2", overall.acquire());
    log.add("channel2", channel.acquire());
    await clock.advance(5000);
    expect(log.entries).toEqual([
      { label: "direct1", at: 0 },
      { label: "channel1", at: 1000 },
      { label: "direct2", at: 2000 },
      { label: "channel2", at: 3000 },
    ]);
  });

  test("combining limiters that already have waiters keeps their order and one timer", async () => {
    const clock = new ManualClock();
    const a = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const b = new WindowLimiter({ limit: 1, interval: 500, clock });
    const log = new GrantLog(clock);
    for (let i = 0; i < 3; i++) log.add(`a${i}`, a.acquire());
    for (let i = 0; i < 3; i++) log.add(`b${i}`, b.acquire());
    expect(clock.pendingTimers).toBe(2);
    const ab = combine(a, b);
    expect(clock.pendingTimers).toBe(1);
    log.add("ab", ab.acquire());
    await clock.advance(5000);
    expect(log.entries).toEqual([
      { label: "a0", at: 0 },
      { label: "b0", at: 0 },
      { label: "b1", at: 500 },
      { label: "a1", at: 1000 },
      { label: "b2", at: 1000 },
      { label: "a2", at: 2000 },
      { label: "ab", at: 3000 },
    ]);
  });

  test("maxQueue applies to the combination's own queue", async () => {
    const clock = new ManualClock();
    const member = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const limited = new CombinedLimiter([member], { maxQueue: 1 });
    await limited.acquire();
    const queued = track(clock, limited.acquire());
    await expect(limited.acquire()).rejects.toThrow(/maxQueue 1/);
    await clock.advance(1000);
    expect(queued.at).toBe(1000);
  });

  test("rejects limiters on different clocks, and anything that is not a sluice limiter", () => {
    const a = new WindowLimiter({ limit: 1, interval: 1000, clock: new ManualClock() });
    const b = new WindowLimiter({ limit: 1, interval: 1000, clock: new ManualClock() });
    expect(() => combine(a, b)).toThrow(/share one clock/);
    expect(() => combine()).toThrow(RangeError);
    expect(() => combine(a, { acquire() {} } as never)).toThrow(/`limiters\[1\]` must be a sluice limiter/);
  });

  test("a request larger than any member allows is refused at once", () => {
    const clock = new ManualClock();
    const both = combine(
      new SmoothLimiter({ limit: 1, clock }),
      new WindowLimiter({ limit: 3, interval: 1000, clock }),
    );
    expect(() => both.tryAcquire(4)).toThrow(/at most 3/);
  });
});
