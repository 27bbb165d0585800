import { describe, expect, test } from "vitest";
import { type Clock, ManualClock, SmoothLimiter, type TimerHandle, WindowLimiter } from "../../src/index.ts";
import { track } from "../helpers.ts";

/**
 * A system-like clock in virtual time: timers are relative (they fire after their delay however
 * `now()` moves, as real timers do), and `now()` can be stepped backwards or made to misbehave.
 */
class SteppingClock implements Clock {
  readonly base = new ManualClock(10_000);
  skew = 0;
  armed = 0;
  value: (() => unknown) | undefined = undefined;
  now(): number {
    if (this.value !== undefined) return this.value() as number;
    return this.base.now() + this.skew;
  }
  setTimeout(callback: () => void, delay: number): TimerHandle {
    this.armed++;
    return this.base.setTimeout(callback, delay);
  }
  clearTimeout(handle: TimerHandle): void {
    this.base.clearTimeout(handle);
  }
}

describe("a clock that steps backwards", () => {
  test("grants keep their pace through a 2 s step back, with no gap and no storm of timers", async () => {
    const clock = new SteppingClock();
    const limiter = new SmoothLimiter({ limit: 10, interval: 1000, clock });
    const elapsed: number[] = []; // base (real) time of each grant
    for (let i = 0; i < 20; i++) void limiter.acquire().then(() => elapsed.push(clock.base.now()));
    await clock.base.advance(450);
    clock.skew = -2000; // the system clock is set back by 2 s
    const armedBefore = clock.armed;
    await clock.base.advance(2000);
    expect(elapsed).toEqual(Array.from({ length: 20 }, (_, i) => 10_000 + i * 100));
    // One timer per grant at most: the limiter never spins waiting for the clock to catch up.
    expect(clock.armed - armedBefore).toBeLessThanOrEqual(15);
  });

  test("a step back mints nothing: the time already waited still counts, the step does not", async () => {
    const clock = new SteppingClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    await limiter.acquire();
    await clock.base.advance(400);
    expect(limiter.tryAcquire()).toBe(600);
    clock.skew = -5000;
    expect(limiter.tryAcquire()).toBe(600);
    await clock.base.advance(599);
    expect(limiter.tryAcquire()).toBe(1);
    await clock.base.advance(1);
    expect(limiter.tryAcquire()).toBe(0);
  });
});

describe("a clock whose now() misbehaves", () => {
  test.each([[NaN], [undefined], ["12"], [Infinity]])("now() returning %s is a TypeError naming clock.now()", (value) => {
    const clock = new SteppingClock();
    clock.value = () => value;
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    expect(() => limiter.tryAcquire()).toThrow(TypeError);
    expect(() => limiter.tryAcquire()).toThrow(`\`clock.now()\` must return a finite number, got ${typeof value === "string" ? `"${value}"` : String(value)}`);
    expect(() => limiter.acquire()).toThrow(TypeError);
  });

  test("going bad while callers wait rejects them with the TypeError, never an uncaught throw in a timer", async () => {
    const clock = new SteppingClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const waiters = [limiter.acquire(), limiter.acquire(), limiter.acquire()].map((p) => track(clock.base, p));
    await clock.base.advance(0);
    expect(waiters[0]!.error).toBeUndefined();
    clock.value = () => NaN;
    await clock.base.advance(1000); // the timer fires and reads the clock
    expect(waiters[0]!.settled).toBe(true);
    for (const w of waiters.slice(1)) {
      expect(w.error).toBeInstanceOf(TypeError);
      expect(String(w.error)).toContain("`clock.now()` must return a finite number, got NaN");
    }
    expect(limiter.queued).toBe(0);
    expect(clock.base.pendingTimers).toBe(0);
  });

  test("1000 callers at limit 1 with a clock returning NaN are not all granted", async () => {
    const clock = new SteppingClock();
    clock.value = () => NaN;
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    let granted = 0;
    for (let i = 0; i < 1000; i++) {
      try {
        void limiter.acquire().then(() => granted++, () => {});
      } catch {
        // a TypeError, thrown up front
      }
    }
    await clock.base.advance(0);
    expect(granted).toBe(0);
  });
});

/**
 * Timers that fire `early` ms before their delay, as Node's can (its loop caches the time in whole
 * ms), though never sooner than `1 - early` ms after they were set (Node runs a delay below 1 as 1).
 */
class EarlyTimerClock implements Clock {
  readonly base = new ManualClock(0);
  readonly early: number;
  constructor(early: number) {
    this.early = early;
  }
  now(): number {
    return this.base.now();
  }
  setTimeout(callback: () => void, delay: number): TimerHandle {
    return this.base.setTimeout(callback, Math.max(1, delay) - this.early);
  }
  clearTimeout(handle: TimerHandle): void {
    this.base.clearTimeout(handle);
  }
}

describe("timers that fire early", () => {
  test("an early timer is no proof of time: no grant before the clock allows it, over 500 grants", async () => {
    // Found in a real-time run: treating a fired timer as proof that its time had come let a grant
    // through 0.17 ms early, and each early fire moved gate time further ahead of the clock.
    const clock = new EarlyTimerClock(0.9);
    const window = new WindowLimiter({ limit: 1, interval: 10, clock });
    const smooth = new SmoothLimiter({ limit: 100, interval: 1000, clock });
    const windowGrants: number[] = [];
    const smoothGrants: number[] = [];
    for (let i = 0; i < 500; i++) {
      void window.acquire().then(() => windowGrants.push(clock.now()));
      void smooth.acquire().then(() => smoothGrants.push(clock.now()));
    }
    await clock.base.advance(6000);
    expect(windowGrants).toHaveLength(500);
    expect(smoothGrants).toHaveLength(500);
    // Never early, in the clock's own time. The strict window counts from each actual grant, so it
    // must see every gap at least a full interval, each within one short re-arm (0.1 ms here) of it;
    // so must the smooth limiter without burst (a late grant's delay is never given back).
    const gaps = windowGrants.slice(1).map((t, i) => t - windowGrants[i]!);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(10 - 1e-9);
    expect(Math.max(...gaps)).toBeLessThan(10.2);
    const smoothGaps = smoothGrants.slice(1).map((t, i) => t - smoothGrants[i]!);
    expect(Math.min(...smoothGaps)).toBeGreaterThanOrEqual(10 - 1e-9);
    expect(Math.max(...smoothGaps)).toBeLessThan(10.2);
  });
});
