/** combine(): an overall limit and per-channel limits, taken atomically. */
import { combine, ManualClock, WindowLimiter } from "../../src/index.ts";
import { expect, track } from "./expect.ts";
import { describe, test } from "./harness.ts";
import { grantedAt } from "./util.ts";

describe("combine", () => {
  test("overall 2/s with channels A 3/s and B 1/s: tasks A,B,A,A,B,A,B run in submission order at 0,0,1000,1000,2000,2000,3000", async () => {
    const clock = new ManualClock();
    const overall = new WindowLimiter({ limit: 2, interval: 1000, clock });
    const channels = {
      A: combine(overall, new WindowLimiter({ limit: 3, interval: 1000, clock })),
      B: combine(overall, new WindowLimiter({ limit: 1, interval: 1000, clock })),
    };
    const ran: [string, number][] = [];
    const tasks = (["A", "B", "A", "A", "B", "A", "B"] as const).map((name) =>
      channels[name].schedule(() => ran.push([name, clock.now()]))
    );
    await clock.advance(3000);
    await Promise.all(tasks);
    expect(ran).toEqual([["A", 0], ["B", 0], ["A", 1000], ["A", 1000], ["B", 2000], ["A", 2000], ["B", 3000]]);
  });

  test("a request waiting only for its own channel holds no place on the overall limit", async () => {
    const clock = new ManualClock();
    const overall = new WindowLimiter({ limit: 2, interval: 1000, clock });
    const slow = combine(overall, new WindowLimiter({ limit: 1, interval: 1000, clock }));
    const fast = combine(overall, new WindowLimiter({ limit: 10, interval: 1000, clock }));
    await slow.acquire(); // t=0: overall 1 of 2, slow channel full
    const waitingOnSlow = track(grantedAt(clock, slow.acquire()));
    const onFast = track(grantedAt(clock, fast.acquire()));
    await clock.advance(0);
    expect(onFast.state).toBe("fulfilled"); // took the overall slot the slow request did not hold
    expect(onFast.value).toBe(0);
    expect(waitingOnSlow.state).toBe("pending");
    await clock.advance(1000);
    expect(waitingOnSlow.value).toBe(1000);
  });

  test("two windows at once (2 per second and 3 per 10 seconds): grants at 0, 0, 1000, then 10000", async () => {
    const clock = new ManualClock();
    const limiter = combine(
      new WindowLimiter({ limit: 2, interval: 1000, clock }),
      new WindowLimiter({ limit: 3, interval: 10_000, clock }),
    );
    const times = Array.from({ length: 4 }, () => grantedAt(clock, limiter.acquire()));
    await clock.advance(10_000);
    expect(await Promise.all(times)).toEqual([0, 0, 1000, 10_000]);
  });

  test("nothing is charged twice: the overall limit counts each combined grant once", async () => {
    const clock = new ManualClock();
    const overall = new WindowLimiter({ limit: 4, interval: 1000, clock });
    const a = combine(overall, new WindowLimiter({ limit: 4, interval: 1000, clock }));
    const b = combine(overall, new WindowLimiter({ limit: 4, interval: 1000, clock }));
    expect([a.tryAcquire(), b.tryAcquire(), a.tryAcquire(), b.tryAcquire()]).toEqual([0, 0, 0, 0]);
    expect(overall.tryAcquire()).toBe(1000); // exactly four were counted
  });
});
