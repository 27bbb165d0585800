/** The public surface: KeyedLimiter, argument checks, errors, entry points. */
import {
  KeyedLimiter,
  ManualClock,
  MaxWaitExceededError,
  SluiceError,
  SmoothLimiter,
  WindowLimiter,
} from "../../src/index.ts";
import { ManualClock as TestingManualClock } from "../../src/testing.ts";
import { expect } from "./expect.ts";
import { describe, test } from "./harness.ts";
import { grantedAt } from "./util.ts";

describe("KeyedLimiter", () => {
  test("one limiter per key: keys never slow each other down, and a key keeps its limiter", async () => {
    const clock = new ManualClock();
    const perHost = new KeyedLimiter({ clock, create: () => new WindowLimiter({ limit: 1, interval: 1000, clock }) });
    expect(perHost.get("a.example")).toBe(perHost.get("a.example"));
    const a = [grantedAt(clock, perHost.acquire("a.example")), grantedAt(clock, perHost.acquire("a.example"))];
    const b = grantedAt(clock, perHost.acquire("b.example"));
    await clock.advance(1000);
    expect(await Promise.all(a)).toEqual([0, 1000]);
    expect(await b).toBe(0);
    expect(perHost.size).toBe(2);
  });
});

describe("arguments", () => {
  test("a bad option throws RangeError or TypeError naming the option and the value", () => {
    expect(() => new WindowLimiter({ limit: -3, interval: 1000 })).toThrow(
      RangeError,
      "`limit` must be a positive integer, got -3",
    );
    expect(() => new SmoothLimiter({ limit: "10" as unknown as number })).toThrow(TypeError, '`limit` must be a number, got "10"');
    const limiter = new SmoothLimiter({ limit: 1, clock: new ManualClock() });
    expect(() => limiter.acquire(0)).toThrow(RangeError, "`permits` must be a positive integer, got 0");
    expect(() => limiter.acquire(1, { signal: {} as AbortSignal })).toThrow(TypeError, "`signal` must be an AbortSignal");
  });
});

describe("errors and entry points", () => {
  test("operation errors are SluiceErrors with a literal name and structured fields", () => {
    const error = new MaxWaitExceededError(1500, 1000);
    expect(error).toBeInstanceOf(SluiceError);
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ name: "MaxWaitExceededError", retryAfter: 1500, maxWait: 1000 });
    expect(error.message).toMatch("1500 ms exceeds maxWait of 1000 ms");
  });

  test("sluice/testing exports the very ManualClock class that sluice exports", () => {
    expect(TestingManualClock).toBe(ManualClock);
    expect(new TestingManualClock(42).now()).toBe(42);
  });
});
