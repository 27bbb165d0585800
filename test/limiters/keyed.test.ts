import { describe, expect, test } from "vitest";
import { combine, KeyedLimiter, ManualClock, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import { track } from "../helpers.ts";

describe("KeyedLimiter", () => {
  test("one limiter per key, created on first use and reused after", () => {
    const clock = new ManualClock();
    const created: string[] = [];
    const keyed = new KeyedLimiter({
      clock,
      create: (key: string) => {
        created.push(key);
        return new WindowLimiter({ limit: 1, interval: 1000, clock });
      },
    });
    expect(keyed.tryAcquire("a")).toBe(0);
    expect(keyed.tryAcquire("a")).toBe(1000);
    expect(keyed.tryAcquire("b")).toBe(0);
    expect(created).toEqual(["a", "b"]);
    expect(keyed.get("a")).toBe(keyed.get("a"));
  });

  test("evicts keys that are idle and at rest, never a key whose state still matters", async () => {
    const clock = new ManualClock();
    const keyed = new KeyedLimiter({
      clock,
      idleTimeout: 5000,
      create: () => new WindowLimiter({ limit: 1, interval: 10_000, clock }),
    });
    await keyed.acquire("busy");
    await clock.advance(6000);
    keyed.get("other"); // sweeps: "busy" is stale but its grant is still in the window
    expect(keyed.has("busy")).toBe(true);
    expect(keyed.tryAcquire("busy")).toBe(4000); // the limit still holds
    await clock.advance(11_000);
    keyed.get("other");
    expect(keyed.has("busy")).toBe(false);
  });

  test("maxKeys bounds memory: the least recently used keys at rest are evicted first", () => {
    const clock = new ManualClock();
    const keyed = new KeyedLimiter({
      clock,
      maxKeys: 100,
      create: () => new SmoothLimiter({ limit: 10, clock }),
    });
    for (let i = 0; i < 10_000; i++) keyed.get(`k${i}`);
    expect(keyed.size).toBeLessThanOrEqual(101);
    expect(keyed.has("k9999")).toBe(true);
    expect(keyed.has("k0")).toBe(false);
  });

  test("a key with waiters is never evicted, whatever maxKeys says", async () => {
    const clock = new ManualClock();
    const keyed = new KeyedLimiter({ clock, maxKeys: 1, create: () => new WindowLimiter({ limit: 1, interval: 1000, clock }) });
    await keyed.acquire("a");
    const waiting = track(clock, keyed.acquire("a"));
    keyed.get("b");
    keyed.get("c");
    expect(keyed.has("a")).toBe(true);
    await clock.advance(1000);
    expect(waiting.at).toBe(1000);
  });

  test("per-key limits combined with an overall limit: a shared overall limit does not pin keys in memory", async () => {
    const clock = new ManualClock();
    const overall = new SmoothLimiter({ limit: 1, interval: 1000, clock });
    const keyed = new KeyedLimiter({
      clock,
      idleTimeout: 100,
      create: () => combine(overall, new SmoothLimiter({ limit: 5, interval: 1000, clock })),
    });
    await keyed.acquire("a"); // t=0; overall next free at 1000
    const b = track(clock, keyed.acquire("b"));
    await clock.advance(1500);
    expect(b.at).toBe(1000); // overall next free at 2000: not at rest
    keyed.get("c");
    keyed.get("d");
    // "a" is at rest on its own limit; the overall's debt lives on in `overall`, which is not forgotten.
    expect(keyed.has("a")).toBe(false);
    expect(overall.tryAcquire()).toBe(500);
  });

  test("validates its options", () => {
    expect(() => new KeyedLimiter({ create: 5 as never })).toThrow(/`create` must be a function, got 5/);
    expect(() => new KeyedLimiter({ create: () => new SmoothLimiter({ limit: 1 }), maxKeys: 0 })).toThrow(
      /`maxKeys` must be a positive integer, got 0/,
    );
    const keyed = new KeyedLimiter({ create: () => 42 as never });
    expect(() => keyed.get("x")).toThrow(/`create` must return a Limiter, got 42/);
  });
});
