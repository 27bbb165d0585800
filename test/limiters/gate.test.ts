import { describe, expect, test } from "vitest";
import {
  combine,
  ManualClock,
  MAX_TIMER_DELAY,
  MaxWaitExceededError,
  QueueFullError,
  SmoothLimiter,
  WindowLimiter,
} from "../../src/index.ts";
import { GrantLog, track } from "../helpers.ts";

describe("order", () => {
  test("waiters are served first come, first served, even when a later small request would fit sooner", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 3, interval: 1000, clock });
    const log = new GrantLog(clock);
    log.add("a:2", limiter.acquire(2));
    log.add("b:3", limiter.acquire(3)); // needs the whole window: waits until t=1000
    log.add("c:1", limiter.acquire(1)); // would fit at t=0, but must not overtake b
    await clock.advance(3000);
    expect(log.entries).toEqual([
      { label: "a:2", at: 0 },
      { label: "b:3", at: 1000 },
      { label: "c:1", at: 2000 },
    ]);
  });

  test("1,000 waiters use one timer and finish in submission order", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 100, interval: 1000, clock });
    const log = new GrantLog(clock);
    for (let i = 0; i < 1000; i++) log.add(String(i), limiter.acquire());
    await clock.advance(0);
    expect(clock.pendingTimers).toBe(1);
    expect(limiter.queued).toBe(999);
    await clock.advance(5000);
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(5000);
    expect(log.labels).toEqual(Array.from({ length: 1000 }, (_, i) => String(i)));
    expect(log.times).toEqual(Array.from({ length: 1000 }, (_, i) => i * 10));
    expect(clock.pendingTimers).toBe(0);
  });

  test("an idle limiter holds no timer, before and after use", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    expect(clock.pendingTimers).toBe(0);
    await limiter.acquire();
    expect(clock.pendingTimers).toBe(0); // granted at once: nothing to wait for
    const next = limiter.acquire();
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(1000);
    await next;
    expect(clock.pendingTimers).toBe(0);
  });

  test("requests granted at the same instant resolve in submission order", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 3, interval: 1000, clock });
    await limiter.acquire(3);
    const log = new GrantLog(clock);
    for (const label of ["x", "y", "z"]) log.add(label, limiter.acquire());
    await clock.advance(1000);
    expect(log.entries).toEqual([
      { label: "x", at: 1000 },
      { label: "y", at: 1000 },
      { label: "z", at: 1000 },
    ]);
  });
});

describe("abort", () => {
  test("an aborted waiter rejects with signal.reason and gives its place back exactly", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    await limiter.acquire();
    const controller = new AbortController();
    const aborted = track(clock, limiter.acquire(1, { signal: controller.signal }));
    const next = track(clock, limiter.acquire());
    const reason = new Error("caller gave up");
    controller.abort(reason);
    await clock.advance(0);
    expect(aborted.error).toBe(reason);
    await clock.advance(1000);
    // The aborted request took nothing: the next one gets the slot it would have had.
    expect(next.at).toBe(1000);
    expect(limiter.tryAcquire()).toBe(1000);
  });

  test("aborting the head of the queue lets the requests behind it go at once when they fit", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 4, interval: 1000, clock });
    await limiter.acquire(2);
    const controller = new AbortController();
    const big = track(clock, limiter.acquire(4, { signal: controller.signal })); // head: waits for t=1000
    const small = track(clock, limiter.acquire(2)); // fits now but queued behind `big` (FIFO)
    await clock.advance(10);
    expect(small.settled).toBe(false);
    controller.abort();
    await clock.advance(0);
    expect((big.error as DOMException).name).toBe("AbortError");
    expect(small.at).toBe(10);
  });

  test("an already aborted signal rejects at once and takes nothing", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const reason = new Error("already");
    await expect(limiter.acquire(1, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(limiter.tryAcquire()).toBe(0);
  });

  test("aborting after the grant changes nothing and raises nothing", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const controller = new AbortController();
    await limiter.acquire(1, { signal: controller.signal });
    controller.abort();
    expect(limiter.tryAcquire()).toBe(1000);
  });

  test("a signal aborted by a task that acquire() itself starts (an overdue grant) rejects at once and leaves no trace", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    await limiter.acquire();
    const controller = new AbortController();
    void limiter.schedule(() => controller.abort(new Error("stop"))); // granted at t=1000
    clock.jumpTo(1000); // the gate's timer is overdue: the next call serves that task first
    const caller = track(clock, limiter.acquire(1, { signal: controller.signal }));
    await clock.advance(0);
    expect(caller.error).toEqual(new Error("stop"));
    expect(limiter.queued).toBe(0);
    await clock.advance(5000);
    expect(limiter.tryAcquire()).toBe(0); // nothing was taken for it
  });

  test("aborting every one of 10,000 waiters leaves no timer and an untouched limiter", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 1, interval: 1000, clock });
    await limiter.acquire();
    const controller = new AbortController();
    const outcomes = Array.from({ length: 10_000 }, () => track(clock, limiter.acquire(1, { signal: controller.signal })));
    controller.abort();
    await clock.advance(0);
    expect(outcomes.every((o) => o.settled && o.error !== undefined)).toBe(true);
    expect(limiter.queued).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    expect(limiter.tryAcquire()).toBe(1000);
  });
});

describe("maxWait", () => {
  test("rejects up front with the predicted wait as retryAfter, taking nothing", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 1, interval: 1000, clock });
    await limiter.acquire();
    const error = await limiter.acquire(1, { maxWait: 999 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MaxWaitExceededError);
    expect((error as MaxWaitExceededError).retryAfter).toBe(1000);
    expect((error as MaxWaitExceededError).maxWait).toBe(999);
    expect(limiter.queued).toBe(0);
    // Nothing was taken: the next caller is not pushed back.
    expect(limiter.tryAcquire()).toBe(1000);
    const ok = track(clock, limiter.acquire(1, { maxWait: 1000 }));
    await clock.advance(1000);
    expect(ok.at).toBe(1000);
  });

  test("the prediction counts every waiter already queued", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 2, interval: 1000, clock });
    for (let i = 0; i < 5; i++) void limiter.acquire(); // t=0,0,1000,1000,2000
    const error = await limiter.acquire(1, { maxWait: 1500 }).catch((e: unknown) => e);
    expect((error as MaxWaitExceededError).retryAfter).toBe(2000);
    await clock.runAll();
  });

  test("maxWait 0 means only if granted now", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    await limiter.acquire(1, { maxWait: 0 });
    await expect(limiter.acquire(1, { maxWait: 0 })).rejects.toBeInstanceOf(MaxWaitExceededError);
  });

  test("a limiter-wide maxWait applies to every call unless the call overrides it", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 1, interval: 1000, clock, maxWait: 500 });
    await limiter.acquire();
    await expect(limiter.acquire()).rejects.toBeInstanceOf(MaxWaitExceededError);
    const ok = track(clock, limiter.acquire(1, { maxWait: Infinity }));
    await clock.advance(1000);
    expect(ok.at).toBe(1000);
  });
});

describe("maxQueue", () => {
  test("rejects with QueueFullError once maxQueue callers wait, and takes nothing", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock, maxQueue: 2 });
    await limiter.acquire();
    const a = track(clock, limiter.acquire());
    const b = track(clock, limiter.acquire());
    const error = await limiter.acquire().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QueueFullError);
    expect((error as QueueFullError).maxQueue).toBe(2);
    await clock.advance(2000);
    expect([a.at, b.at]).toEqual([1000, 2000]);
  });

  test("maxQueue 0 never queues: grant now or reject", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock, maxQueue: 0 });
    await limiter.acquire();
    await expect(limiter.acquire()).rejects.toBeInstanceOf(QueueFullError);
  });
});

describe("tryAcquire", () => {
  test("returns 0 and takes when free; otherwise takes nothing and returns the wait", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 4, interval: 1000, clock });
    expect(limiter.tryAcquire()).toBe(0);
    expect(limiter.tryAcquire()).toBe(250);
    expect(limiter.tryAcquire(3)).toBe(250); // debt model: size does not change when it could go
    await clock.advance(100);
    expect(limiter.tryAcquire()).toBe(150);
    await clock.advance(150);
    expect(limiter.tryAcquire()).toBe(0);
  });

  test("counts the callers already queued and never jumps the queue", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 2, interval: 1000, clock });
    await limiter.acquire(2);
    void limiter.acquire(2); // queued for t=1000
    await clock.advance(500);
    expect(limiter.tryAcquire()).toBe(1500);
    await clock.advance(500);
    expect(limiter.tryAcquire()).toBe(1000);
  });
});

describe("schedule", () => {
  test("runs the task once granted and resolves with its result", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const first = track(clock, limiter.schedule(() => `ran at ${clock.now()}`));
    const second = track(clock, limiter.schedule(async () => `ran at ${clock.now()}`));
    await clock.advance(1000);
    expect(first.value).toBe("ran at 0");
    expect(second.value).toBe("ran at 1000");
  });

  test("a task that throws or rejects affects only its own promise", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 10, interval: 1000, clock });
    const boom = new Error("boom");
    const results = await Promise.allSettled([
      limiter.schedule(() => {
        throw boom;
      }),
      limiter.schedule(() => Promise.reject(boom)),
      limiter.schedule(() => "fine"),
    ]);
    expect(results).toEqual([
      { status: "rejected", reason: boom },
      { status: "rejected", reason: boom },
      { status: "fulfilled", value: "fine" },
    ]);
    expect(limiter.tryAcquire(7)).toBe(0);
  });

  test("a task granted at once starts synchronously, at its grant, before schedule() returns", () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const started: string[] = [];
    void limiter.schedule(() => started.push("task"));
    started.push("after schedule()");
    expect(started).toEqual(["task", "after schedule()"]);
  });

  test("queued tasks start in grant order, and a task that schedules another does not jump its batch", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 3, interval: 1000, clock });
    await limiter.acquire(3);
    const started: string[] = [];
    void limiter.schedule(() => {
      started.push(`a@${clock.now()}`);
      // Granted at once (the window has room at 1000 for c too)? It still starts after b.
      void limiter.schedule(() => started.push(`nested@${clock.now()}`));
    });
    void limiter.schedule(() => started.push(`b@${clock.now()}`));
    await clock.advance(1000);
    expect(started).toEqual(["a@1000", "b@1000", "nested@1000"]);
  });

  test("permits, signal and maxWait pass through", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 1, interval: 1000, clock });
    await limiter.schedule(() => undefined, { permits: 3 });
    expect(limiter.tryAcquire()).toBe(3000);
    await expect(limiter.schedule(() => 1, { maxWait: 10 })).rejects.toBeInstanceOf(MaxWaitExceededError);
  });
});

describe("pause", () => {
  test("grants nothing for the pause and queued callers keep their places", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 2, interval: 1000, clock });
    const log = new GrantLog(clock);
    log.add("a", limiter.acquire());
    await clock.advance(0);
    limiter.pause(5000);
    log.add("b", limiter.acquire());
    log.add("c", limiter.acquire());
    await clock.advance(4999);
    expect(log.labels).toEqual(["a"]);
    await clock.advance(1);
    expect(log.entries).toEqual([
      { label: "a", at: 0 },
      { label: "b", at: 5000 },
      { label: "c", at: 5000 },
    ]);
  });

  test("a paused SmoothLimiter resumes at its rate, without a burst of stored permits", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 10, interval: 1000, burst: 5, clock });
    limiter.pause(2000);
    const log = new GrantLog(clock);
    for (let i = 0; i < 3; i++) log.add(String(i), limiter.acquire());
    await clock.advance(3000);
    expect(log.times).toEqual([2000, 2100, 2200]);
  });

  test("pausing a combination pauses every member, so other channels slow down too", async () => {
    const clock = new ManualClock();
    const overall = new WindowLimiter({ limit: 10, interval: 1000, clock });
    const a = combine(overall, new WindowLimiter({ limit: 5, interval: 1000, clock }));
    const b = combine(overall, new WindowLimiter({ limit: 5, interval: 1000, clock }));
    a.pause(3000);
    const granted = track(clock, b.acquire());
    await clock.advance(2999);
    expect(granted.settled).toBe(false);
    await clock.advance(1);
    expect(granted.at).toBe(3000);
  });
});

describe("time", () => {
  test("long waits are armed in steps no longer than the timer maximum, and still land exactly", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 1, interval: 30 * 24 * 3600 * 1000, clock }); // one a month
    await limiter.acquire();
    const next = track(clock, limiter.acquire());
    expect(clock.nextTimerAt).toBe(MAX_TIMER_DELAY);
    await clock.advance(30 * 24 * 3600 * 1000);
    expect(next.at).toBe(30 * 24 * 3600 * 1000);
  });

  test("a clock that steps backwards never mints permits", async () => {
    const clock = new ManualClock(10_000);
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    await limiter.acquire();
    clock.jumpTo(0);
    expect(limiter.tryAcquire()).toBe(1000);
    // Gate time carries on from 10,000 at the clock's pace (it does not wait for the clock to catch up).
    clock.jumpTo(999);
    expect(limiter.tryAcquire()).toBe(1);
    clock.jumpTo(1000);
    expect(limiter.tryAcquire()).toBe(0);
  });
});

describe("tasks granted together", () => {
  test("a task that aborts another task granted in the same pass cannot take it back, nor disturb the queue", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 2, interval: 1000, clock });
    await limiter.acquire(2);
    const controller = new AbortController();
    const ran: string[] = [];
    void limiter.schedule(() => {
      ran.push("a");
      controller.abort(); // b was granted with a: too late to abort it
    });
    const b = track(clock, limiter.schedule(() => ran.push("b"), { signal: controller.signal }));
    const c = track(clock, limiter.schedule(() => ran.push("c")));
    await clock.advance(1000);
    expect(ran).toEqual(["a", "b"]);
    expect(b.error).toBeUndefined();
    await clock.advance(1000);
    expect(ran).toEqual(["a", "b", "c"]);
    expect(c.at).toBe(2000);
  });

  test("queued tasks' permits count from the moment each starts, so start times keep a strict window", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 2, interval: 1000, clock });
    await limiter.acquire(2);
    const starts: number[] = [];
    // The first task's synchronous work takes 10 ms, delaying the start of the one granted with it.
    const durations = [10, 0, 0, 0];
    for (const ms of durations) {
      void limiter.schedule(() => {
        starts.push(clock.now());
        clock.jumpTo(clock.now() + ms);
      });
    }
    await clock.advance(3000);
    expect(starts.slice(0, 2)).toEqual([1000, 1010]);
    // Counted from the grant, the next two would start at 2000 and 2000: three starts in [1010, 2010).
    // Counted from each start, they wait for 2000 and 2010.
    expect(starts.slice(2)).toEqual([2000, 2010]);
    for (const s of starts) expect(starts.filter((t) => t >= s && t < s + 1000).length).toBeLessThanOrEqual(2);
  });
});
