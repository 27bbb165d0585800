import { describe, expect, test } from "vitest";
import { ManualClock, systemClock } from "../src/index.ts";
import { ManualClock as FromTesting } from "../src/testing.ts";

describe("ManualClock", () => {
  test("fires due timers in time order, ties in the order they were set, with now() at each timer's time", async () => {
    const clock = new ManualClock(100);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push(`b@${clock.now()}`), 50);
    clock.setTimeout(() => fired.push(`a@${clock.now()}`), 10);
    clock.setTimeout(() => fired.push(`c@${clock.now()}`), 50);
    clock.setTimeout(() => fired.push(`late@${clock.now()}`), 500);
    await clock.advance(100);
    expect(fired).toEqual(["a@110", "b@150", "c@150"]);
    expect(clock.now()).toBe(200);
    expect(clock.pendingTimers).toBe(1);
  });

  test("lets promise continuations run between timers, and fires timers they set within the span", async () => {
    const clock = new ManualClock();
    const seen: number[] = [];
    const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimeout(resolve, ms));
    const task = (async () => {
      for (let i = 0; i < 3; i++) {
        await sleep(100);
        seen.push(clock.now());
      }
    })();
    await clock.advance(1000);
    await task;
    expect(seen).toEqual([100, 200, 300]);
  });

  test("clearTimeout cancels, runAll drains, jumpTo moves time without firing", async () => {
    const clock = new ManualClock();
    let fired = 0;
    const handle = clock.setTimeout(() => fired++, 10);
    clock.clearTimeout(handle);
    clock.setTimeout(() => fired++, 20);
    clock.jumpTo(1000);
    expect(fired).toBe(0);
    expect(await clock.runAll()).toBe(1);
    expect(fired).toBe(1);
    expect(clock.now()).toBe(1000); // a timer due in the past does not move time backwards
  });

  test("rejects nonsense", async () => {
    const clock = new ManualClock();
    await expect(clock.advance(-1)).rejects.toThrow("`ms` must be a non-negative finite number, got -1");
    expect(() => new ManualClock(NaN)).toThrow(RangeError);
  });

  test("is exported from sluice/testing too", () => {
    expect(FromTesting).toBe(ManualClock);
  });
});

describe("systemClock", () => {
  test("is monotonic and its timers fire", async () => {
    const a = systemClock.now();
    await new Promise<void>((resolve) => systemClock.setTimeout(resolve, 5));
    expect(systemClock.now()).toBeGreaterThan(a);
  });
});
