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

  test("runUntil fires timers until the promise settles and hands back its outcome; a rejection while it runs is not unhandled (red-team, 2026-11-27)", async () => {
    const clock = new ManualClock();
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimeout(resolve, ms));
      clock.setTimeout(() => {}, 10_000); // a later timer is left alone
      expect(await clock.runUntil((async () => (await sleep(300), clock.now()))())).toBe(300);
      const failing = (async () => {
        await sleep(200);
        throw new Error("timed out");
      })();
      await expect(clock.runUntil(failing)).rejects.toThrow("timed out");
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
      expect(clock.now()).toBe(500);
      expect(clock.pendingTimers).toBe(1);
      // Stuck: pending with no timer to fire; and a limit reached.
      await clock.runAll();
      await expect(clock.runUntil(new Promise(() => {}))).rejects.toThrow(/no timer is left/);
      const rearm = () => void clock.setTimeout(rearm, 1);
      rearm();
      await expect(clock.runUntil(new Promise(() => {}), 50)).rejects.toThrow(/after 50 timers/);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  test("advance throws instead of hanging on a timer that re-arms itself with no delay; delays past 2^31−1 ms count as that (red-team, 2026-11-27)", async () => {
    const clock = new ManualClock();
    let fired = 0;
    const spin = () => {
      fired++;
      clock.setTimeout(spin, 0);
    };
    clock.setTimeout(spin, 5);
    await expect(clock.advance(10)).rejects.toThrow(/more than 100000 timers set and fired within 1 µs of 5 ms/);
    // A re-arm by a vanishing delay moves time, but not for real (review: ran for 10 minutes).
    const creeping = new ManualClock(1e6);
    const creep = () => void creeping.setTimeout(creep, 1e-9);
    creep();
    await expect(creeping.advance(1000)).rejects.toThrow(/within 1 µs/);
    expect(fired).toBeGreaterThan(100_000);
    const other = new ManualClock();
    let at: number | undefined;
    other.setTimeout(() => (at = other.now()), Infinity);
    await other.runAll();
    expect(at).toBe(2_147_483_647);
    await other.advance(1); // the clock still works
    // Many timers set beforehand at one instant are no loop (review: 150,000 tripped the guard).
    const busy = new ManualClock();
    let count = 0;
    for (let i = 0; i < 150_000; i++) busy.setTimeout(() => count++, 5);
    await busy.advance(10);
    expect(count).toBe(150_000);
  }, 60_000);

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

describe("ManualClock and real asynchronous work (red-team, 2026-11-27)", () => {
  const realDelay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  test("hold(work): no timer fires until the held work settles, so virtual time waits for it", async () => {
    const clock = new ManualClock();
    const seen: string[] = [];
    clock.setTimeout(() => seen.push(`timer at ${clock.now()}`), 10);
    const work = clock.hold(realDelay(30).then(() => seen.push(`work done at ${clock.now()}`)));
    await clock.advance(100);
    await work;
    expect(seen).toEqual(["work done at 0", "timer at 10"]);
    // a held rejection is the caller's to handle; the clock goes on
    const failed = clock.hold(Promise.reject(new Error("read failed")));
    await expect(failed).rejects.toThrow("read failed");
    await clock.advance(10);
    expect(clock.now()).toBe(110);
  });

  test("runUntil waits some real time for work outside the clock (file I/O, a hash off the main thread) before calling the promise stuck", async () => {
    const clock = new ManualClock();
    const job = async () => {
      for (let i = 0; i < 3; i++) {
        await realDelay(40); // e.g. appending a result to a file: no timer of the clock is pending
        await new Promise<void>((resolve) => clock.setTimeout(resolve, 1000));
      }
      return clock.now();
    };
    expect(await clock.runUntil(job())).toBe(3000);
  });

  test("held work that waits on the clock is let go (after 0.2 s of real time), so neither hangs (review, 2026-11-27): a simulated server sleeping on the clock", async () => {
    const { createSimulatedFetch } = await import("../src/testing.ts");
    const clock = new ManualClock();
    const server = {
      async handle(_request: Request) {
        await new Promise<void>((resolve) => clock.setTimeout(resolve, 10)); // the server's own work, in virtual time
        return { status: 200, body: "ok" };
      },
    };
    const fetch = createSimulatedFetch({ server, clock });
    expect((await clock.runUntil(fetch("https://api.example.com/"))).status).toBe(200);
    expect(clock.now()).toBe(10);
  });

  test("held work waiting on a timer set before it is let go after 0.2 s of real time", async () => {
    const clock = new ManualClock();
    const ticked = new Promise<void>((resolve) => clock.setTimeout(resolve, 100));
    const work = clock.hold(ticked);
    await clock.advance(100);
    await work;
    expect(clock.now()).toBe(100);
  });

  test("a promise that never settles is still reported, after half a second of real time with no timer", async () => {
    const clock = new ManualClock();
    await expect(clock.runUntil(new Promise(() => {}))).rejects.toThrow(/no timer is left at 0 ms/);
  });
});
