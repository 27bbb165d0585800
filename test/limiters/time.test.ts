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
