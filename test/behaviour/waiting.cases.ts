/** The shared gate: FIFO order, abort, maxWait, maxQueue, pause, one timer — the same for every limiter. */
import {
  isSluiceError,
  ManualClock,
  MaxWaitExceededError,
  QueueFullError,
  SmoothLimiter,
  WindowLimiter,
} from "../../src/index.ts";
import { expect, track } from "./expect.ts";
import { describe, test } from "./harness.ts";
import { grantedAt } from "./util.ts";

describe("waiting", () => {
  test("abort gives capacity back: the next waiter takes the aborted one's slot", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    await limiter.acquire(); // t=0
    const controller = new AbortController();
    const aborted = track(limiter.acquire(1, { signal: controller.signal }));
    const next = track(grantedAt(clock, limiter.acquire()));
    await clock.advance(500);
    const reason = new Error("caller gave up");
    controller.abort(reason);
    await clock.advance(0);
    expect(aborted.state).toBe("rejected");
    expect(aborted.reason).toBe(reason); // rejects with signal.reason itself
    await clock.advance(500);
    expect(next.value).toBe(1000); // not 2000: the aborted request took nothing
    expect(limiter.tryAcquire()).toBe(1000);
  });

  test("an already-aborted signal rejects at once and takes nothing", async () => {
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock: new ManualClock() });
    const controller = new AbortController();
    controller.abort("stop");
    await expect(limiter.acquire(1, { signal: controller.signal })).rejects.toBe("stop");
    expect(limiter.tryAcquire()).toBe(0);
  });

  test("maxWait rejects up front with retryAfter, without waiting and without taking anything", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 1, interval: 1000, clock });
    await limiter.acquire(); // t=0; the next permit is due at t=1000
    const refused = track(limiter.acquire(1, { maxWait: 500 }));
    await Promise.resolve();
    expect(refused.state).toBe("rejected"); // at t=0, before any time passed
    expect(refused.reason).toBeInstanceOf(MaxWaitExceededError);
    expect(refused.reason).toMatchObject({ name: "MaxWaitExceededError", retryAfter: 1000, maxWait: 500 });
    expect(isSluiceError(refused.reason)).toBe(true);
    const next = grantedAt(clock, limiter.acquire());
    await clock.advance(1000);
    expect(await next).toBe(1000);
  });

  test("maxWait counts the callers already queued ahead", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    await limiter.acquire(); // t=0
    const queued = limiter.acquire(); // due at t=1000
    await expect(limiter.acquire(1, { maxWait: 1500 })).rejects.toMatchObject({ retryAfter: 2000 });
    await clock.advance(1000);
    await queued;
  });

  test("maxWait: 0 grants only what is available now", async () => {
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock: new ManualClock() });
    await limiter.acquire(1, { maxWait: 0 });
    await expect(limiter.acquire(1, { maxWait: 0 })).rejects.toBeInstanceOf(MaxWaitExceededError);
  });

  test("maxQueue: a caller beyond the bound gets QueueFullError; those queued are still served", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, maxQueue: 2, clock });
    await limiter.acquire();
    const queued = [grantedAt(clock, limiter.acquire()), grantedAt(clock, limiter.acquire())];
    const error = await limiter.acquire().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QueueFullError);
    expect(error).toMatchObject({ name: "QueueFullError", maxQueue: 2 });
    await clock.advance(2000);
    expect(await Promise.all(queued)).toEqual([1000, 2000]);
  });

  test("FIFO: a small request queues behind a larger one that arrived first", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 5, interval: 1000, clock });
    await limiter.acquire(3); // t=0: 2 of 5 left
    const large = grantedAt(clock, limiter.acquire(5));
    const small = grantedAt(clock, limiter.acquire(1)); // would fit now, but must not overtake
    await clock.advance(2000);
    expect([await large, await small]).toEqual([1000, 2000]);
  });

  test("pause(ms) grants nothing for ms; queued callers keep their places", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 10, interval: 1000, clock });
    await limiter.acquire();
    limiter.pause(3000); // a server said "back off for 3 s"
    const order: string[] = [];
    const first = limiter.acquire().then(() => order.push(`first@${clock.now()}`));
    const second = limiter.acquire().then(() => order.push(`second@${clock.now()}`));
    await clock.advance(2999);
    expect(order).toEqual([]);
    await clock.advance(1);
    await Promise.all([first, second]);
    expect(order).toEqual(["first@3000", "second@3000"]);
  });

  test("an idle limiter has no pending timer; a busy one has exactly one, however many wait", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 10, interval: 1000, clock });
    expect(clock.pendingTimers).toBe(0);
    const waiting = Array.from({ length: 50 }, () => limiter.acquire());
    expect(clock.pendingTimers).toBe(1);
    await clock.runAll();
    await Promise.all(waiting);
    expect(clock.pendingTimers).toBe(0);
    const controller = new AbortController();
    const abandoned = limiter.acquire(1, { signal: controller.signal }).catch(() => "aborted");
    expect(clock.pendingTimers).toBe(1);
    controller.abort();
    expect(await abandoned).toBe("aborted");
    expect(clock.pendingTimers).toBe(0);
  });

  test("schedule() runs the task once granted, returns its result and passes on its failure", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 3, interval: 1000, clock });
    expect(await limiter.schedule(() => "done")).toBe("done");
    await expect(limiter.schedule(() => Promise.reject(new TypeError("task failed")))).rejects.toThrow(TypeError, "task failed");
    const costly = track(limiter.schedule(() => clock.now(), { permits: 2 }));
    await clock.advance(999);
    expect(costly.state).toBe("pending");
    await clock.advance(1);
    expect(costly.value).toBe(1000);
  });
});
