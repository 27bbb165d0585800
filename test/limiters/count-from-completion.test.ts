import { describe, expect, test } from "vitest";
import { combine, ManualClock, MaxWaitExceededError, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import { GrantLog, track } from "../helpers.ts";

/** A task that takes `ms` of virtual time. */
function work(clock: ManualClock, ms: number, log?: string[], label?: string): () => Promise<string> {
  return () =>
    new Promise((resolve) => {
      log?.push(`${label}@${clock.now()}`);
      clock.setTimeout(() => resolve(label ?? "done"), ms);
    });
}

describe('WindowLimiter countFrom: "completion"', () => {
  test("a slot is reused `interval` after the task settles, not after the grant", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 2, interval: 1000, countFrom: "completion", clock });
    const starts: string[] = [];
    const tasks = ["a", "b", "c", "d"].map((label) => track(clock, limiter.schedule(work(clock, 300, starts, label))));
    await clock.advance(5000);
    // a and b start at 0 and finish at 300; their slots free at 1300; c and d start then.
    expect(starts).toEqual(["a@0", "b@0", "c@1300", "d@1300"]);
    expect(tasks.map((t) => t.value)).toEqual(["a", "b", "c", "d"]);
    expect(clock.pendingTimers).toBe(0);
  });

  test("a task that fails releases its slot too", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, countFrom: "completion", clock });
    const failed = track(clock, limiter.schedule(() => new Promise((_, reject) => clock.setTimeout(() => reject(new Error("x")), 100))));
    const next = track(clock, limiter.schedule(() => clock.now()));
    await clock.advance(2000);
    expect((failed.error as Error).message).toBe("x");
    expect(next.value).toBe(1100);
  });

  test("acquire() has no completion to wait for: it counts from the grant", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, countFrom: "completion", clock });
    await limiter.acquire();
    expect(limiter.tryAcquire()).toBe(1000);
  });

  test("while only in-flight work blocks, no timer is armed; the release wakes the queue", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 100, countFrom: "completion", clock });
    let finish!: () => void;
    void limiter.schedule(() => new Promise<void>((resolve) => (finish = resolve)));
    const log = new GrantLog(clock);
    log.add("next", limiter.acquire());
    await clock.advance(0);
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(10_000); // the task runs long: nothing may be granted
    expect(log.entries).toEqual([]);
    finish();
    await clock.advance(100);
    expect(log.entries).toEqual([{ label: "next", at: 10_100 }]);
  });

  test("predictions assume in-flight work completes now (a lower bound), and abort still gives back", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, countFrom: "completion", clock });
    let finish!: () => void;
    void limiter.schedule(() => new Promise<void>((resolve) => (finish = resolve)));
    await clock.advance(0);
    expect(limiter.tryAcquire()).toBe(1000);
    await expect(limiter.acquire(1, { maxWait: 500 })).rejects.toBeInstanceOf(MaxWaitExceededError);
    const controller = new AbortController();
    const aborted = track(clock, limiter.acquire(1, { signal: controller.signal }));
    controller.abort();
    await clock.advance(0);
    expect(aborted.error).toBeDefined();
    finish();
    await clock.advance(1000);
    expect(limiter.tryAcquire()).toBe(0);
  });

  test("in a combination, the other members count from the grant as usual", async () => {
    const clock = new ManualClock();
    const strict = new WindowLimiter({ limit: 5, interval: 1000, countFrom: "completion", clock });
    const smooth = new SmoothLimiter({ limit: 10, interval: 1000, clock });
    const both = combine(strict, smooth);
    const starts: string[] = [];
    for (const label of ["a", "b", "c"]) void both.schedule(work(clock, 500, starts, label));
    await clock.advance(3000);
    expect(starts).toEqual(["a@0", "b@100", "c@200"]);
    expect(clock.pendingTimers).toBe(0);
  });

  test("rejects an unknown countFrom", () => {
    expect(() => new WindowLimiter({ limit: 1, interval: 1, countFrom: "response" as never })).toThrow(
      '`countFrom` must be "grant" or "completion", got "response"',
    );
  });
});

describe('schedule(task, { countFrom: "completion" }) on a window counted from the grant', () => {
  test("the task's slot is reused `interval` after it settles, granted at once or queued", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 2, interval: 1000, clock }); // countFrom: "grant"
    const starts: string[] = [];
    const tasks = ["a", "b", "c", "d", "e"].map((label) =>
      track(clock, limiter.schedule(work(clock, 300, starts, label), { countFrom: "completion" })));
    await clock.advance(10_000);
    // a, b at 0 (granted at once), done at 300 → free at 1300; c, d (queued) done at 1600 → 2600.
    expect(starts).toEqual(["a@0", "b@0", "c@1300", "d@1300", "e@2600"]);
    expect(tasks.map((t) => t.value)).toEqual(["a", "b", "c", "d", "e"]);
    expect(clock.pendingTimers).toBe(0);
  });

  test("other callers of the same limiter keep counting from the grant", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const starts: string[] = [];
    void limiter.schedule(work(clock, 300, starts, "plain"));
    void limiter.schedule(work(clock, 300, starts, "held"), { countFrom: "completion" });
    void limiter.schedule(work(clock, 300, starts, "after"));
    await clock.advance(10_000);
    // plain counts from its start (0) → held at 1000, done 1300 → after at 2300.
    expect(starts).toEqual(["plain@0", "held@1000", "after@2300"]);
  });

  test("a combination holding a window holds it; a smooth limiter ignores the option", async () => {
    const clock = new ManualClock();
    const window = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const both = combine(window, new SmoothLimiter({ limit: 100, interval: 1000, clock }));
    const starts: string[] = [];
    for (const l of ["x", "y"]) void both.schedule(work(clock, 500, starts, l), { countFrom: "completion" });
    const smooth = new SmoothLimiter({ limit: 1, interval: 1000, clock });
    for (const l of ["s1", "s2"]) void smooth.schedule(work(clock, 500, starts, l), { countFrom: "completion" });
    await clock.advance(10_000);
    expect(starts.filter((s) => !s.startsWith("s"))).toEqual(["x@0", "y@1500"]);
    expect(starts.filter((s) => s.startsWith("s"))).toEqual(["s1@0", "s2@1000"]);
  });

  test("an aborted queued task gives its slot back; an invalid value throws naming it", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const starts: string[] = [];
    void limiter.schedule(work(clock, 100, starts, "a"), { countFrom: "completion" });
    const abort = new AbortController();
    const aborted = track(clock, limiter.schedule(work(clock, 100, starts, "b"), { countFrom: "completion", signal: abort.signal }));
    void limiter.schedule(work(clock, 100, starts, "c"), { countFrom: "completion" });
    await clock.advance(50);
    abort.abort(new Error("stop"));
    await clock.advance(10_000);
    expect((aborted.error as Error).message).toBe("stop");
    expect(starts).toEqual(["a@0", "c@1100"]);
    expect(() => limiter.schedule(() => 1, { countFrom: "start" as never })).toThrow(
      new RangeError('`countFrom` must be "completion" or undefined, got "start"'),
    );
  });
});
