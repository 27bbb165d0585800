import { describe, expect, test } from "vitest";
import { combine, CombinedLimiter, type GatedLimiter, ManualClock, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import { INTERNALS } from "../../src/limiters/limiter.ts";
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
    // The waiting combined request has taken nothing on `overall`: both of its permits are still free,
    // and a later request may use what it does not need by its reserved time, t=1000 (one permit) ...
    expect(overall.tryAcquire(1)).toBe(0);
    // ... but not what it does: the second permit would make it wait past t=1000.
    expect(overall.tryAcquire(1)).toBe(1000);
    await clock.advance(990);
    expect(waiting.at).toBe(1000);
    expect(overall.tryAcquire(1)).toBe(10); // full until the permit taken at t=10 leaves
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

  /** Acquires from `limiter` in a loop, starting at `start`, until `stop` says so; logs each grant. */
  function loop(clock: ManualClock, limiter: GatedLimiter, start: number, grants: number[], stop: () => boolean): void {
    clock.setTimeout(async () => {
      while (!stop()) {
        await limiter.acquire();
        grants.push(clock.now());
      }
    }, start);
  }

  test("a combined request is not starved by callers looping on each member alone", async () => {
    const clock = new ManualClock();
    const o = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const a = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const onO: number[] = [];
    const onA: number[] = [];
    let done = false;
    loop(clock, o, 0, onO, () => done);
    loop(clock, a, 500, onA, () => done);
    await clock.advance(600);
    // Each loop's next request (asked at t=0 and t=500) is ahead of it: O goes to the O loop at t=1000,
    // A to the A loop at t=1500. From then on the combined request is due at t=2500, and neither
    // loop may take the limit it needs before then: the O loop's request free at t=2000 waits.
    const both = track(clock, combine(o, a).acquire());
    await clock.advance(60_000);
    done = true;
    expect(both.at).toBe(2500);
    expect(onO.slice(0, 4)).toEqual([0, 1000, 3500, 4500]);
    expect(onA.slice(0, 4)).toEqual([500, 1500, 3500, 4500]);
    await clock.advance(2000);
  });

  test("per-user × per-org limits: combine(user1, org1) is granted against combine(user1, org2) and combine(user2, org1) loops", async () => {
    const clock = new ManualClock();
    const limit = () => new WindowLimiter({ limit: 1, interval: 1000, clock });
    const [user1, user2, org1, org2] = [limit(), limit(), limit(), limit()];
    const first: number[] = [];
    const second: number[] = [];
    let done = false;
    loop(clock, combine(user1, org2), 0, first, () => done);
    loop(clock, combine(user2, org1), 500, second, () => done);
    await clock.advance(600);
    const both = track(clock, combine(user1, org1).acquire());
    await clock.advance(60_000);
    done = true;
    expect(both.at).toBe(2500);
    expect(first.slice(0, 3)).toEqual([0, 1000, 3500]);
    expect(second.slice(0, 3)).toEqual([500, 1500, 3500]);
    await clock.advance(2000);
  });

  test("combinations made and dropped per key fold into the overall's gate: no chain of gates is kept alive", async () => {
    const clock = new ManualClock();
    const overall = new WindowLimiter({ limit: 1, interval: 10, clock });
    await overall.acquire();
    const waited = overall.acquire(); // the overall's queue has been registered with its gate once
    await clock.advance(10);
    await waited;
    const domain = overall[INTERNALS].gate();
    for (let key = 0; key < 1000; key++) {
      const perKey = combine(overall, new WindowLimiter({ limit: 5, interval: 1000, clock }));
      expect(perKey[INTERNALS].gate()).toBe(domain);
      void perKey.acquire();
    }
    await clock.advance(20_000);
    // The overall never moved to a newer gate (each newer one would forward from the last), and its
    // queue, empty, points at no gate at all.
    expect(overall[INTERNALS].gate()).toBe(domain);
    expect(overall[INTERNALS].queue.gate).toBe(null);
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
