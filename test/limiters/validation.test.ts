import { describe, expect, test } from "vitest";
import {
  FixedWindowLimiter,
  ManualClock,
  SlidingCounterLimiter,
  SmoothLimiter,
  WindowLimiter,
} from "../../src/index.ts";

const clock = new ManualClock();

describe("bad options throw a RangeError/TypeError that names the option and the value", () => {
  const cases: Array<[string, () => unknown, ErrorConstructor, string]> = [
    ["limit 0", () => new WindowLimiter({ limit: 0, interval: 1000 }), RangeError, "`limit` must be a positive integer, got 0"],
    ["limit -3", () => new WindowLimiter({ limit: -3, interval: 1000 }), RangeError, "`limit` must be a positive integer, got -3"],
    ["limit NaN", () => new SmoothLimiter({ limit: NaN }), RangeError, "`limit` must be a positive finite number, got NaN"],
    ["limit Infinity", () => new SmoothLimiter({ limit: Infinity }), RangeError, "got Infinity"],
    ["limit 1.5 (window)", () => new FixedWindowLimiter({ limit: 1.5, interval: 1000 }), RangeError, "`limit` must be a positive integer, got 1.5"],
    ["limit as string", () => new SlidingCounterLimiter({ limit: "10" as never, interval: 1000 }), TypeError, '`limit` must be a number, got "10"'],
    ["missing interval", () => new WindowLimiter({ limit: 1 } as never), TypeError, "`interval` must be a number, got undefined"],
    ["interval 0", () => new WindowLimiter({ limit: 1, interval: 0 }), RangeError, "`interval` must be a positive finite number, got 0"],
    ["burst -1", () => new SmoothLimiter({ limit: 1, burst: -1 }), RangeError, "`burst` must be a non-negative finite number, got -1"],
    ["initialPermits > burst", () => new SmoothLimiter({ limit: 1, burst: 2, initialPermits: 3 }), RangeError, "`initialPermits` must be at most `burst` (2), got 3"],
    ["maxQueue -1", () => new SmoothLimiter({ limit: 1, maxQueue: -1 }), RangeError, "`maxQueue` must be a non-negative number or Infinity, got -1"],
    ["maxWait NaN", () => new SmoothLimiter({ limit: 1, maxWait: NaN }), RangeError, "`maxWait` must be a non-negative number or Infinity, got NaN"],
    ["clock not a clock", () => new SmoothLimiter({ limit: 1, clock: {} as never }), TypeError, "`clock` must be a Clock"],
    ["options missing", () => new SmoothLimiter(undefined as never), TypeError, "`limit` must be a number, got undefined"],
    ["options a string", () => new SmoothLimiter("fast" as never), TypeError, '`options` must be an object, got "fast"'],
  ];
  test.each(cases)("%s", (_name, make, type, message) => {
    expect(make).toThrow(type);
    expect(make).toThrow(message);
  });
});

describe("bad arguments to acquire/tryAcquire/schedule/pause throw at once and take nothing", () => {
  const limiter = new WindowLimiter({ limit: 5, interval: 1000, clock });
  const cases: Array<[string, () => unknown, ErrorConstructor, string]> = [
    ["permits 0", () => limiter.acquire(0), RangeError, "`permits` must be a positive integer, got 0"],
    ["permits -1", () => limiter.tryAcquire(-1), RangeError, "got -1"],
    ["permits 1.5", () => limiter.acquire(1.5), RangeError, "got 1.5"],
    ["permits NaN", () => limiter.acquire(NaN), RangeError, "got NaN"],
    ["permits Infinity", () => limiter.acquire(Infinity), RangeError, "got Infinity"],
    ["permits as string", () => limiter.acquire("2" as never), TypeError, '`permits` must be a number, got "2"'],
    ["permits above limit", () => limiter.acquire(6), RangeError, "`permits` must be at most 5"],
    ["maxWait -1", () => limiter.acquire(1, { maxWait: -1 }), RangeError, "`maxWait` must be a non-negative number or Infinity, got -1"],
    ["signal not a signal", () => limiter.acquire(1, { signal: {} as never }), TypeError, "`signal` must be an AbortSignal"],
    ["task not a function", () => limiter.schedule(null as never), TypeError, "`task` must be a function, got null"],
    ["schedule permits 0", () => limiter.schedule(() => 1, { permits: 0 }), RangeError, "`permits` must be a positive integer, got 0"],
    ["pause -5", () => limiter.pause(-5), RangeError, "`ms` must be a non-negative finite number, got -5"],
    ["pause Infinity", () => limiter.pause(Infinity), RangeError, "got Infinity"],
  ];
  test.each(cases)("%s", (_name, call, type, message) => {
    expect(call).toThrow(type);
    expect(call).toThrow(message);
  });

  test("none of them took any capacity", () => {
    expect(limiter.tryAcquire(5)).toBe(0);
  });
});
