import { describe, expect, test } from "vitest";
import {
  combine,
  ConcurrencyLimiter,
  FixedWindowLimiter,
  KeyedLimiter,
  type Limiter,
  ManualClock,
  SlidingCounterLimiter,
  SmoothLimiter,
  WindowLimiter,
} from "../../src/index.ts";
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

  test("prune() frees every idle key at rest at once, without waiting for later calls (they alone sweep a few per get)", async () => {
    const clock = new ManualClock();
    const keyed = new KeyedLimiter({ clock, idleTimeout: 5000, create: () => new WindowLimiter({ limit: 1, interval: 10_000, clock }) });
    for (let i = 0; i < 1000; i++) keyed.get(`k${i}`); // never granted: at rest from the start
    await keyed.acquire("counting"); // its grant counts for 10 s: not at rest until then
    const waiting = keyed.acquire("counting"); // a waiter: never evicted
    expect(keyed.prune()).toBe(0); // nothing idle for 5 s yet
    await clock.advance(6000);
    keyed.get("fresh"); // a get examines only a few of the oldest keys
    const left = keyed.size;
    expect(left).toBeGreaterThan(990);
    expect(keyed.prune()).toBe(left - 2); // every k… key still there
    expect(keyed.size).toBe(2); // "counting" (waiter and grant) and "fresh" (used just now)
    expect(keyed.has("counting")).toBe(true);
    await clock.advance(20_000);
    await waiting;
    await clock.advance(20_000);
    expect(keyed.prune()).toBe(2);
    expect(keyed.size).toBe(0);
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

describe("KeyedLimiter eviction never lets more through (issue 10)", () => {
  test("a custom limiter that cannot say it is idle is never evicted, even with waiters queued and maxKeys exceeded", async () => {
    const clock = new ManualClock();
    let made = 0;
    // A user Limiter without isIdle(): a wrapper around a built-in one (2 per 1000 ms).
    const keyed = new KeyedLimiter({
      clock,
      maxKeys: 1,
      idleTimeout: 0,
      create: (): Limiter => {
        made++;
        const inner = new WindowLimiter({ limit: 2, interval: 1000, clock });
        return {
          acquire: (p, o) => inner.acquire(p, o),
          tryAcquire: (p) => inner.tryAcquire(p),
          schedule: (t, o) => inner.schedule(t, o),
          pause: (ms) => inner.pause(ms),
        };
      },
    });
    const grants = [0, 1, 2, 3].map(() => track(clock, keyed.acquire("a")));
    for (let i = 0; i < 10; i++) keyed.get(`other${i}`); // sweeps, over maxKeys and past idleTimeout
    for (let i = 0; i < 4; i++) grants.push(track(clock, keyed.acquire("a")));
    await clock.advance(0);
    expect(grants.filter((g) => g.at === 0)).toHaveLength(2);
    expect(made).toBe(11); // "a" once, the others once each
    expect(keyed.has("a")).toBe(true);
    await clock.runAll();
  });

  test("a custom limiter with isIdle() is evicted only when it says so", () => {
    const clock = new ManualClock();
    let idle = false;
    const keyed = new KeyedLimiter({
      clock,
      idleTimeout: 0,
      create: (): Limiter & { isIdle(): boolean } => ({
        acquire: async () => {},
        tryAcquire: () => 0,
        schedule: async (task) => await task(),
        pause: () => {},
        isIdle: () => idle,
      }),
    });
    keyed.get("a");
    keyed.get("b");
    expect(keyed.has("a")).toBe(true);
    idle = true;
    keyed.get("b");
    expect(keyed.has("a")).toBe(false);
  });

  test("evicting a FixedWindowLimiter key keeps its window phase: never more than limit per original window", async () => {
    const clock = new ManualClock();
    const keyed = new KeyedLimiter({
      clock,
      idleTimeout: 0,
      create: () => new FixedWindowLimiter({ limit: 2, interval: 1000, clock }),
    });
    const grants: number[] = [];
    const take = () => {
      if (keyed.tryAcquire("a") === 0) grants.push(clock.now());
    };
    take(); // t=0: windows of "a" are [k·1000, (k+1)·1000)
    await clock.advanceTo(1500);
    keyed.get("other"); // "a" has nothing in [1000, 2000): at rest, evicted
    expect(keyed.has("a")).toBe(false);
    keyed.get("a"); // re-created at t=1500
    await clock.advanceTo(2100);
    take();
    take();
    await clock.advanceTo(2600);
    take();
    take();
    const inOriginalWindow2 = grants.filter((t) => t >= 2000 && t < 3000);
    expect(inOriginalWindow2.length).toBeLessThanOrEqual(2);
  });

  test("evicting a SlidingCounterLimiter key keeps its window phase: the re-created key grants nothing the old one would not", async () => {
    const clock = new ManualClock();
    const make = () => new SlidingCounterLimiter({ limit: 2, interval: 1000, clock });
    const original = make();
    await clock.advanceTo(3500); // two empty windows: at rest
    expect(original.isIdle()).toBe(true);
    const fresh = make();
    await clock.advanceTo(5499);
    expect(original.tryAcquire(2)).toBe(0);
    expect(fresh.tryAcquire(2)).toBe(0);
    await clock.advanceTo(6000);
    expect(original.tryAcquire(1)).toBe(500);
    expect(fresh.tryAcquire(1)).toBe(500);
  });
});

describe("KeyedLimiter: every sentence of the eviction promise", () => {
  test("a limiter still held by a caller is the key's limiter again after eviction: a pause on it (a 429 during a long request) is not lost", async () => {
    const clock = new ManualClock();
    const keyed = new KeyedLimiter({ clock, idleTimeout: 0, create: () => new SmoothLimiter({ limit: 10, interval: 1000, clock }) });
    // A throttled fetch takes the key's limiter, runs a request that takes 5 s, then pauses that limiter.
    const limiter = keyed.get("api");
    let finish!: () => void;
    const request = limiter.schedule(() => new Promise<void>((resolve) => (finish = resolve)));
    await clock.advance(5000);
    keyed.get("other"); // "api" is at rest on its own state: evicted
    finish();
    await request;
    limiter.pause(30_000); // the server said 429, Retry-After: 30
    expect(keyed.get("api")).toBe(limiter);
    expect(keyed.tryAcquire("api")).toBe(30_000);
  });

  test("a caller that keeps the limiter and one that calls get(key) share one limit across an eviction", async () => {
    const clock = new ManualClock();
    const keyed = new KeyedLimiter({ clock, idleTimeout: 0, create: () => new WindowLimiter({ limit: 2, interval: 1000, clock }) });
    const kept = keyed.get("a");
    await clock.advance(5000);
    keyed.get("other"); // evicts "a"
    expect(kept.tryAcquire(2)).toBe(0);
    expect(keyed.tryAcquire("a")).toBe(1000);
  });

  test("a paused key is not evicted until its pause ends", async () => {
    for (const make of [
      (clock: ManualClock) => new WindowLimiter({ limit: 1, interval: 100, clock }),
      (clock: ManualClock) => new SmoothLimiter({ limit: 10, interval: 1000, burst: 3, clock }),
      (clock: ManualClock) => new FixedWindowLimiter({ limit: 1, interval: 100, clock }),
      (clock: ManualClock) => new SlidingCounterLimiter({ limit: 1, interval: 100, clock }),
    ]) {
      const clock = new ManualClock();
      const keyed = new KeyedLimiter({ clock, idleTimeout: 0, create: () => make(clock) });
      keyed.get("a").pause(5000);
      await clock.advance(4000);
      keyed.get("other");
      expect(keyed.has("a")).toBe(true);
      expect(keyed.tryAcquire("a")).toBe(1000);
    }
  });

  test('a key whose scheduled task is still running under countFrom: "completion" is not evicted (its slot is in flight)', async () => {
    const clock = new ManualClock();
    let made = 0;
    const keyed = new KeyedLimiter({
      clock,
      idleTimeout: 0,
      create: () => (made++, new WindowLimiter({ limit: 1, interval: 1000, countFrom: "completion", clock })),
    });
    let finish!: () => void;
    const task = keyed.schedule("a", () => new Promise<void>((resolve) => (finish = resolve)));
    await clock.advance(10_000);
    keyed.get("other");
    expect(keyed.has("a")).toBe(true);
    finish();
    await task;
    expect(keyed.tryAcquire("a")).toBe(1000); // the slot counts from the completion at 10 000
    expect(made).toBe(2);
  });

  test("combine(overall, perKey) made per key: evicting a key forgets only its own limit, the overall debt stays", async () => {
    const clock = new ManualClock();
    const overall = new WindowLimiter({ limit: 3, interval: 1000, countFrom: "completion", clock });
    const keyed = new KeyedLimiter({
      clock,
      idleTimeout: 0,
      create: () => combine(overall, new SmoothLimiter({ limit: 1, interval: 100, clock })),
    });
    let finish!: () => void;
    const running = keyed.schedule("a", () => new Promise<void>((resolve) => (finish = resolve)));
    keyed.get("b");
    await clock.advance(500);
    expect(keyed.tryAcquire("b")).toBe(0);
    keyed.get("c"); // "a" may go: its own limit is at rest, and the running task's slot lives in `overall`
    finish();
    await running;
    expect(overall.tryAcquire(2)).toBe(1000); // the task's slot counts from its completion at 500
    expect(keyed.tryAcquire("a", 2)).toBe(1000); // and a re-created "a" is bound by it
  });
});

describe("KeyedLimiter: an evicted limiter nobody holds is let go", () => {
  test("once collected, the key's next use makes a fresh limiter (memory stays bounded by maxKeys plus what callers hold)", async () => {
    const { setFlagsFromString } = await import("node:v8");
    const { runInNewContext } = await import("node:vm");
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const clock = new ManualClock();
    let made = 0;
    const keyed = new KeyedLimiter({ clock, idleTimeout: 0, create: () => (made++, new SmoothLimiter({ limit: 10, clock })) });
    expect(keyed.tryAcquire("a")).toBe(0); // nothing outside the KeyedLimiter keeps the limiter
    await clock.advance(1000);
    keyed.get("other"); // evicts "a"
    expect(keyed.has("a")).toBe(false);
    // Collection is up to the engine: give it a few chances. A WeakRef made or read in the current
    // job keeps its target alive until the job ends, hence the macrotask before each collection.
    for (let i = 0; i < 5 && made < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      gc();
      keyed.get("a"); // fresh if the old limiter was collected, else the same one, revived
      await clock.advance(1000);
      keyed.get("other"); // evicts "a" again for the next try
    }
    expect(made).toBe(3); // "a", "other", and a fresh "a"
  });
});

describe("a reservation dropped without settling", () => {
  test("that holds a concurrency slot stays in stats().inFlight when collected, as its slot stays held", async () => {
    const { setFlagsFromString } = await import("node:v8");
    const { runInNewContext } = await import("node:vm");
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const clock = new ManualClock();
    const slots = new ConcurrencyLimiter({ limit: 1, clock });
    const keyed = new KeyedLimiter({ clock, create: () => new ConcurrencyLimiter({ limit: 1, clock }) });
    const rate = new SmoothLimiter({ limit: 10, clock });
    await (async () => {
      await slots.reserve(1); // dropped: never released
      await keyed.reserve("a", 1);
      await rate.reserve(1);
    })();
    // Collected once the rate limiter's one stops counting (the proof a collection ran).
    for (let i = 0; i < 10 && rate.stats().inFlight !== 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      gc();
    }
    expect(rate.stats().inFlight).toBe(0);
    // Red-team (2026-11-27): 0 after a collection, while a second reserve still waited for the slot.
    expect(slots.stats().inFlight).toBe(1);
    expect(keyed.stats("a").inFlight).toBe(1);
    const waiting = track(clock, slots.reserve(1));
    await clock.advance(1000);
    expect(waiting.at).toBeUndefined();
    // (A rate limiter's dropped reservation stops counting as open — its permits stay counted —
    // so that it never pins its key in a KeyedLimiter.)
  });
});
