import { describe, expect, test } from "vitest";
import {
  combine,
  createThrottledFetch,
  CombinedLimiter,
  FixedWindowLimiter,
  KeyedLimiter,
  ManualClock,
  SlidingCounterLimiter,
  SmoothLimiter,
  WindowLimiter,
} from "../../src/index.ts";
import { describeValue } from "../../src/validate.ts";

const clock = new ManualClock();

/** [name, call, error class, text the message must contain (the option and the value)]. */
type Case = [string, () => unknown, ErrorConstructor, string];

function table(cases: Case[]): void {
  test.each(cases)("%s", async (_name, call, type, message) => {
    let thrown: unknown;
    try {
      // A method that returns a promise may throw at once or reject: both count.
      await call();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(type);
    expect((thrown as Error).message).toContain(message);
  });
}

describe("bad options throw a RangeError/TypeError that names the option and the value", () => {
  table([
    ["limit 0", () => new WindowLimiter({ limit: 0, interval: 1000 }), RangeError, "`limit` must be a positive integer, got 0"],
    ["limit -3", () => new WindowLimiter({ limit: -3, interval: 1000 }), RangeError, "`limit` must be a positive integer, got -3"],
    ["limit NaN", () => new SmoothLimiter({ limit: NaN }), RangeError, "`limit` must be a positive finite number, got NaN"],
    ["limit Infinity", () => new SmoothLimiter({ limit: Infinity }), RangeError, "got Infinity"],
    ["limit 1.5 (window)", () => new FixedWindowLimiter({ limit: 1.5, interval: 1000 }), RangeError, "`limit` must be a positive integer, got 1.5"],
    ["limit as string", () => new SlidingCounterLimiter({ limit: "10" as never, interval: 1000 }), TypeError, '`limit` must be a number, got "10"'],
    ["missing interval", () => new WindowLimiter({ limit: 1 } as never), TypeError, "`interval` must be a number, got undefined"],
    ["interval 0", () => new WindowLimiter({ limit: 1, interval: 0 }), RangeError, "`interval` must be a finite number of ms, at least 0.001 (1 µs), got 0"],
    ["burst -1", () => new SmoothLimiter({ limit: 1, burst: -1 }), RangeError, "`burst` must be a non-negative integer, got -1"],
    ["initialPermits > burst", () => new SmoothLimiter({ limit: 1, burst: 2, initialPermits: 3 }), RangeError, "`initialPermits` must be at most `burst` (2), got 3"],
    ["maxQueue -1", () => new SmoothLimiter({ limit: 1, maxQueue: -1 }), RangeError, "`maxQueue` must be a non-negative integer or Infinity, got -1"],
    ["maxWait NaN", () => new SmoothLimiter({ limit: 1, maxWait: NaN }), RangeError, "`maxWait` must be a non-negative number or Infinity, got NaN"],
    ["clock not a clock", () => new SmoothLimiter({ limit: 1, clock: {} as never }), TypeError, "`clock` must be a Clock"],
    ["options missing", () => new SmoothLimiter(undefined as never), TypeError, "`limit` must be a number, got undefined"],
    ["options a string", () => new SmoothLimiter("fast" as never), TypeError, '`options` must be an object, got "fast"'],
  ]);
});

describe("issue 10: the smallest interval is 1 µs, so time arithmetic stays exact", () => {
  const tiny: Array<[string, (interval: number) => unknown]> = [
    ["WindowLimiter", (interval) => new WindowLimiter({ limit: 1, interval, clock })],
    ["FixedWindowLimiter", (interval) => new FixedWindowLimiter({ limit: 1, interval, clock })],
    ["SlidingCounterLimiter", (interval) => new SlidingCounterLimiter({ limit: 1, interval, clock })],
    ["SmoothLimiter", (interval) => new SmoothLimiter({ limit: 1, interval, clock })],
  ];
  table(
    tiny.flatMap(([name, make]): Case[] => [
      [`${name} interval 1e-300`, () => make(1e-300), RangeError, "`interval` must be a finite number of ms, at least 0.001 (1 µs), got 1e-300"],
      [`${name} interval 0.0009`, () => make(0.0009), RangeError, "got 0.0009"],
      [`${name} interval -1`, () => make(-1), RangeError, "got -1"],
      [`${name} interval Infinity`, () => make(Infinity), RangeError, "got Infinity"],
      [`${name} interval "1s"`, () => make("1s" as never), TypeError, '`interval` must be a number, got "1s"'],
    ]),
  );
  table([
    ["Smooth spacing below 1 µs", () => new SmoothLimiter({ limit: 2_000_000, interval: 1000 }), RangeError, "`limit` must be at most 1000 per ms of `interval` (a permit per µs), got 2000000"],
    ["Smooth spacing not finite", () => new SmoothLimiter({ limit: 1e-320, interval: 1000 }), RangeError, "`limit` is too small for `interval` (a spacing of interval/limit ms must be finite), got 1e-320"],
    ["Smooth burst fractional", () => new SmoothLimiter({ limit: 1, burst: 1.5 }), RangeError, "`burst` must be a non-negative integer, got 1.5"],
    ["Smooth burst huge", () => new SmoothLimiter({ limit: 1e-300, interval: 1, burst: 2 ** 50 }), RangeError, "`burst` is too large"],
    ["Smooth initialPermits fractional", () => new SmoothLimiter({ limit: 1, burst: 2, initialPermits: 0.5 }), RangeError, "`initialPermits` must be a non-negative integer, got 0.5"],
    ["Smooth initialPermits a string", () => new SmoothLimiter({ limit: 1, burst: 2, initialPermits: "1" as never }), TypeError, '`initialPermits` must be a number, got "1"'],
  ]);

  test("the smallest interval works: one permit per µs, and the next window starts strictly later", async () => {
    const c = new ManualClock(9_007_199_254_740); // about 2^53 µs, the largest exact time
    const limiter = new WindowLimiter({ limit: 1, interval: 0.001, clock: c });
    expect(limiter.tryAcquire()).toBe(0);
    const wait = limiter.tryAcquire();
    expect(wait).toBeGreaterThan(0);
    let granted = 1;
    for (let i = 0; i < 100_000; i++) if (limiter.tryAcquire() === 0) granted++;
    expect(granted).toBe(1); // 100,000 attempts in one instant: one grant (issue 10)
  });
});

describe("issue 10: integer-valued options must be integers (or Infinity where it means no limit)", () => {
  const gated: Array<[string, (extra: object) => unknown]> = [
    ["SmoothLimiter", (extra) => new SmoothLimiter({ limit: 1, clock, ...extra })],
    ["WindowLimiter", (extra) => new WindowLimiter({ limit: 1, interval: 1000, clock, ...extra })],
    ["FixedWindowLimiter", (extra) => new FixedWindowLimiter({ limit: 1, interval: 1000, clock, ...extra })],
    ["SlidingCounterLimiter", (extra) => new SlidingCounterLimiter({ limit: 1, interval: 1000, clock, ...extra })],
    ["CombinedLimiter", (extra) => new CombinedLimiter([new SmoothLimiter({ limit: 1, clock })], extra)],
  ];
  table(
    gated.flatMap(([name, make]): Case[] => [
      [`${name} maxQueue 1.5`, () => make({ maxQueue: 1.5 }), RangeError, "`maxQueue` must be a non-negative integer or Infinity, got 1.5"],
      [`${name} maxQueue NaN`, () => make({ maxQueue: NaN }), RangeError, "`maxQueue` must be a non-negative integer or Infinity, got NaN"],
      [`${name} maxQueue -Infinity`, () => make({ maxQueue: -Infinity }), RangeError, "got -Infinity"],
      [`${name} maxQueue "10"`, () => make({ maxQueue: "10" }), TypeError, '`maxQueue` must be a number, got "10"'],
      [`${name} maxWait -1`, () => make({ maxWait: -1 }), RangeError, "`maxWait` must be a non-negative number or Infinity, got -1"],
      [`${name} maxWait {}`, () => make({ maxWait: {} }), TypeError, "`maxWait` must be a number, got an object {}"],
      ...(name === "CombinedLimiter" ? [] : [ // a combination takes its members' clock
        [`${name} clock []`, () => make({ clock: [] }), TypeError, "`clock` must be a Clock (now, setTimeout, clearTimeout), got an array []"] as Case,
      ]),
    ]),
  );
  test("maxQueue: 0 and Infinity are accepted", () => {
    for (const [, make] of gated) {
      expect(() => make({ maxQueue: 0 })).not.toThrow();
      expect(() => make({ maxQueue: Infinity })).not.toThrow();
    }
  });
  table([
    ["Window limit 2.5", () => new WindowLimiter({ limit: 2.5, interval: 1000 }), RangeError, "`limit` must be a positive integer, got 2.5"],
    ["Sliding limit 2^53", () => new SlidingCounterLimiter({ limit: 2 ** 53, interval: 1000 }), RangeError, "`limit` must be a positive integer, got 9007199254740992"],
    ["Window countFrom", () => new WindowLimiter({ limit: 1, interval: 1000, countFrom: "start" as never }), RangeError, '`countFrom` must be "grant" or "completion", got "start"'],
  ]);
});

describe("KeyedLimiter and combine validate theirs", () => {
  const create = () => new SmoothLimiter({ limit: 1, clock });
  table([
    ["create missing", () => new KeyedLimiter({} as never), TypeError, "`create` must be a function, got undefined"],
    ["create a number", () => new KeyedLimiter({ create: 5 as never }), TypeError, "`create` must be a function, got 5"],
    ["options a number", () => new KeyedLimiter(5 as never), TypeError, "`options` must be an object, got 5"],
    ["maxKeys 0", () => new KeyedLimiter({ create, maxKeys: 0 }), RangeError, "`maxKeys` must be a positive integer, got 0"],
    ["maxKeys 1.5", () => new KeyedLimiter({ create, maxKeys: 1.5 }), RangeError, "`maxKeys` must be a positive integer, got 1.5"],
    ["maxKeys a string", () => new KeyedLimiter({ create, maxKeys: "9" as never }), TypeError, '`maxKeys` must be a number, got "9"'],
    ["idleTimeout -1", () => new KeyedLimiter({ create, idleTimeout: -1 }), RangeError, "`idleTimeout` must be a non-negative number or Infinity, got -1"],
    ["idleTimeout NaN", () => new KeyedLimiter({ create, idleTimeout: NaN }), RangeError, "got NaN"],
    ["idleTimeout a string", () => new KeyedLimiter({ create, idleTimeout: "60s" as never }), TypeError, '`idleTimeout` must be a number, got "60s"'],
    ["clock a number", () => new KeyedLimiter({ create, clock: 1 as never }), TypeError, "`clock` must be a Clock (now, setTimeout, clearTimeout), got 1"],
    ["create returns an object", () => new KeyedLimiter({ create: () => ({ a: 1 }) as never }).get("x"), TypeError, "`create` must return a Limiter, got an object {a}"],
    ["combine()", () => combine(), RangeError, "`limiters` must list at least one limiter, got an array []"],
    ["combine(a plain object)", () => combine({ acquire() {} } as never), TypeError, "`limiters[0]` must be a sluice limiter (SmoothLimiter, WindowLimiter, …), got an object {acquire}"],
    ["combine(a limiter of another copy of sluice)", () => combine(new (class WindowLimiter { acquire() {} reserve() {} tryAcquire() {} })() as never), TypeError,
      "`limiters[0]` must be a sluice limiter (SmoothLimiter, WindowLimiter, …), got a WindowLimiter from another copy of sluice (ESM and CommonJS, or two versions): create every limiter through one module system"],
  ]);
});

describe("bad arguments to acquire/tryAcquire/schedule/pause throw at once and take nothing", () => {
  const limiter = new WindowLimiter({ limit: 5, interval: 1000, clock });
  table([
    ["permits 0", () => limiter.acquire(0), RangeError, "`permits` must be a positive integer, got 0"],
    ["permits -1", () => limiter.tryAcquire(-1), RangeError, "got -1"],
    ["permits 1.5", () => limiter.acquire(1.5), RangeError, "got 1.5"],
    ["permits NaN", () => limiter.acquire(NaN), RangeError, "got NaN"],
    ["permits Infinity", () => limiter.acquire(Infinity), RangeError, "got Infinity"],
    ["permits as string", () => limiter.acquire("2" as never), TypeError, '`permits` must be a number, got "2"'],
    ["permits as array", () => limiter.acquire([2] as never), TypeError, "`permits` must be a number, got an array [2]"],
    ["permits above limit", () => limiter.acquire(6), RangeError, "`permits` must be at most 5"],
    ["maxWait -1", () => limiter.acquire(1, { maxWait: -1 }), RangeError, "`maxWait` must be a non-negative number or Infinity, got -1"],
    ["signal not a signal", () => limiter.acquire(1, { signal: {} as never }), TypeError, "`signal` must be an AbortSignal, got an object {}"],
    ["task not a function", () => limiter.schedule(null as never), TypeError, "`task` must be a function, got null"],
    ["schedule permits 0", () => limiter.schedule(() => 1, { permits: 0 }), RangeError, "`permits` must be a positive integer, got 0"],
    ["schedule permits 2.5", () => limiter.schedule(() => 1, { permits: 2.5 }), RangeError, "`permits` must be a positive integer, got 2.5"],
    ["pause -5", () => limiter.pause(-5), RangeError, "`ms` must be a non-negative finite number, got -5"],
    ["pause Infinity", () => limiter.pause(Infinity), RangeError, "got Infinity"],
    ["pause a string", () => limiter.pause("5" as never), TypeError, '`ms` must be a number, got "5"'],
    ["acquire options a string", () => limiter.acquire(1, "fast" as never), TypeError, '`options` must be an object, got "fast"'],
    ["acquire maxWait a string", () => limiter.acquire(1, { maxWait: "1" as never }), TypeError, '`maxWait` must be a number, got "1"'],
    ["schedule options a number", () => limiter.schedule(() => 1, 5 as never), TypeError, "`options` must be an object, got 5"],
    ["schedule permits a string", () => limiter.schedule(() => 1, { permits: "2" as never }), TypeError, '`permits` must be a number, got "2"'],
    ["KeyedLimiter.acquire permits 1.5", () => new KeyedLimiter({ create: () => limiter }).acquire("k", 1.5), RangeError, "`permits` must be a positive integer, got 1.5"],
  ]);

  test("none of them took any capacity", () => {
    expect(limiter.tryAcquire(5)).toBe(0);
  });
});

describe("ManualClock: non-numbers are TypeErrors, numbers out of range RangeErrors, values shown readably", () => {
  const c = new ManualClock();
  table([
    ["new ManualClock({})", () => new ManualClock({} as never), TypeError, "`start` must be a number, got an object {}"],
    ["new ManualClock(NaN)", () => new ManualClock(NaN), RangeError, "`start` must be a finite number of ms within ±2^53 µs (about ±9.007e12 ms), got NaN"],
    ["new ManualClock(1e300)", () => new ManualClock(1e300), RangeError, "`start` must be a finite number of ms within ±2^53 µs (about ±9.007e12 ms), got 1e+300"],
    ["advance({})", () => c.advance({} as never), TypeError, "`ms` must be a number, got an object {}"],
    ["advance([1])", () => c.advance([1] as never), TypeError, "`ms` must be a number, got an array [1]"],
    ["advance(-1)", () => c.advance(-1), RangeError, "`ms` must be a non-negative finite number, got -1"],
    ["advance(Infinity)", () => c.advance(Infinity), RangeError, "got Infinity"],
    ["advance(1e300)", () => c.advance(1e300), RangeError, "`ms` must keep the time within ±2^53 µs (about ±9.007e12 ms), got 1e+300"],
    ["advanceTo(null)", () => c.advanceTo(null as never), TypeError, "`time` must be a number, got null"],
    ["advanceTo(NaN)", () => c.advanceTo(NaN), RangeError, "`time` must be a finite number of ms within ±2^53 µs (about ±9.007e12 ms), got NaN"],
    ["jumpTo(\"5\")", () => c.jumpTo("5" as never), TypeError, '`time` must be a number, got "5"'],
    ["jumpTo(-Infinity)", () => c.jumpTo(-Infinity), RangeError, "got -Infinity"],
    ["runAll(1.5)", () => c.runAll(1.5), RangeError, "`limit` must be a non-negative integer or Infinity, got 1.5"],
    ["runAll(-1)", () => c.runAll(-1), RangeError, "got -1"],
    ["runAll(\"all\")", () => c.runAll("all" as never), TypeError, '`limit` must be a number, got "all"'],
    ["setTimeout(not a function)", () => c.setTimeout("code" as never, 10), TypeError, '`callback` must be a function, got "code"'],
    ["setTimeout(delay a string)", () => c.setTimeout(() => {}, "10" as never), TypeError, '`delay` must be a number, got "10"'],
  ]);

  test("rejections are asynchronous for the async methods (a promise, never a synchronous throw)", async () => {
    let advancing: Promise<void> | undefined;
    expect(() => (advancing = c.advance({} as never))).not.toThrow();
    await expect(advancing).rejects.toThrow(TypeError);
    await expect(c.runAll(-1)).rejects.toThrow(RangeError);
  });

  test("runAll(0) fires nothing; runAll(Infinity) drains", async () => {
    const d = new ManualClock();
    let fired = 0;
    d.setTimeout(() => fired++, 5);
    expect(await d.runAll(0)).toBe(0);
    expect(await d.runAll(Infinity)).toBe(1);
    expect(fired).toBe(1);
  });
});

describe("describeValue prints any value readably, never [object Object]", () => {
  test.each([
    [{}, "an object {}"],
    [{ limit: 1, interval: 2 }, "an object {limit, interval}"],
    [{ a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7 }, "an object {a, b, c, d, e, f, …}"],
    [Object.create(null), "an object {}"],
    [[], "an array []"],
    [[1, "x", null, [2], {}], 'an array [1, "x", null, an array, an object]'],
    [[1, 2, 3, 4, 5, 6, 7], "an array [1, 2, 3, 4, 5, 6, …] (7 items)"],
    [new Map(), "a Map"],
    [new (class Foo {})(), "a Foo"],
    [Symbol("s"), "Symbol(s)"],
    [10n, "10n"],
    [-0, "-0"],
    [() => 1, "a function"],
  ])("%o → %s", (value, text) => {
    expect(describeValue(value)).toBe(text);
  });

  test("object values are never printed (they may hold secrets); only keys", () => {
    expect(describeValue({ authorization: "Bearer secret" })).toBe("an object {authorization}");
  });
});

describe("a Map, Set, Date or Promise is not an options object (its entries would be ignored, every default used)", () => {
  table([
    ["SmoothLimiter(new Map)", () => new SmoothLimiter(new Map([["limit", 5]]) as never), TypeError, "`options` must be an object, got a Map"],
    ["acquire options a Date", () => new SmoothLimiter({ limit: 1, clock }).acquire(1, new Date() as never), TypeError, "`options` must be an object, got a Date"],
    ["createThrottledFetch adaptive: new Map", () => createThrottledFetch({ limit: 1, adaptive: new Map() as never }), TypeError, "`adaptive` must be an object, got a Map"],
    ["createThrottledFetch retry: new Set", () => createThrottledFetch({ limit: 1, retry: new Set() as never }), TypeError, "`retry` must be an object, got a Set"],
    ["createThrottledFetch a Promise", () => createThrottledFetch(Promise.resolve({ limit: 1 }) as never), TypeError, "`options` must be an object, got a Promise"],
    ["retry: new Headers (a platform object; second review)", () => createThrottledFetch({ limit: 1, retry: new Headers() as never }), TypeError, "`retry` must be an object, got a Headers"],
    ["adaptive: new URLSearchParams", () => createThrottledFetch({ limit: 1, adaptive: new URLSearchParams("limit=5") as never }), TypeError, "`adaptive` must be an object, got an URLSearchParams"],
  ]);

  test("a class instance or a null-prototype object still counts as options", async () => {
    class Options {
      limit = 3;
    }
    expect(new SmoothLimiter(new Options()).limit).toBe(3);
    expect(new SmoothLimiter(Object.assign(Object.create(null) as object, { limit: 4 })).limit).toBe(4);
    // a Map from another realm is refused too (second review)
    const { runInNewContext } = await import("node:vm");
    expect(() => new SmoothLimiter(runInNewContext("new Map([['limit', 5]])") as never)).toThrow(/`options` must be an object, got a Map/);
    // and a module namespace (its tag is "Module"; review, 2026-11-27)
    const source: string = "data:text/javascript,export const limit = 5;";
    const namespace: unknown = await import(source);
    expect(new SmoothLimiter(namespace as never).limit).toBe(5);
  });
});
