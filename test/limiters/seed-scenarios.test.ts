import { describe, expect, test } from "vitest";
import { combine, ManualClock, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import { GrantLog } from "../helpers.ts";

describe("seed scenarios, as tables of steps in virtual time", () => {
  test("10 per second strict: ten at t=0 go at once, the eleventh waits exactly until t=1000", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 10, interval: 1000, clock });
    const log = new GrantLog(clock);
    for (let i = 1; i <= 11; i++) log.add(`r${i}`, limiter.acquire());
    await clock.advance(0);
    expect(log.times).toEqual(Array(10).fill(0));
    await clock.advance(999);
    expect(log.entries).toHaveLength(10);
    await clock.advance(1);
    expect(log.entries.at(-1)).toEqual({ label: "r11", at: 1000 });
  });

  test("SmoothLimiter at 2 per second: 10 permits at t=0 are granted at once and the next single permit at t=5000", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 2, interval: 1000, clock });
    const log = new GrantLog(clock);
    log.add("ten", limiter.acquire(10));
    log.add("one", limiter.acquire(1));
    await clock.advance(4999);
    expect(log.entries).toEqual([{ label: "ten", at: 0 }]);
    await clock.advance(1);
    expect(log.entries).toEqual([
      { label: "ten", at: 0 },
      { label: "one", at: 5000 },
    ]);
  });

  test("overall 2/s with channels of 3/s and 1/s: seven tasks at t=0 run in submission order at the exact times allowed", async () => {
    const clock = new ManualClock();
    const overall = new WindowLimiter({ limit: 2, interval: 1000, clock });
    const channels = {
      A: combine(overall, new WindowLimiter({ limit: 3, interval: 1000, clock })),
      B: combine(overall, new WindowLimiter({ limit: 1, interval: 1000, clock })),
    };
    const log = new GrantLog(clock);
    const plan = ["A", "B", "A", "A", "B", "A", "B"] as const;
    plan.forEach((channel, i) => log.add(`${channel}${i + 1}`, channels[channel].schedule(() => clock.now())));
    await clock.advance(5000);
    // t=0: A1, B2 fill the overall window. t=1000: A3, A4 (A allows 3/s; B5 would be the third
    // overall grant). t=2000: B5 (B's first grant left its window) and A6. t=3000: B7.
    expect(log.entries).toEqual([
      { label: "A1", at: 0 },
      { label: "B2", at: 0 },
      { label: "A3", at: 1000 },
      { label: "A4", at: 1000 },
      { label: "B5", at: 2000 },
      { label: "A6", at: 2000 },
      { label: "B7", at: 3000 },
    ]);
    expect(clock.pendingTimers).toBe(0);
  });
});
