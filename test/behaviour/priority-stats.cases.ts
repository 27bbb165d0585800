/** Priorities and stats()/events on every runtime (EventTarget and CustomEvent are the runtime's own). */
import { KeyedLimiter, ManualClock, WindowLimiter } from "../../src/index.ts";
import { expect } from "./expect.ts";
import { describe, test } from "./harness.ts";

describe("priority", () => {
  test("higher priority first, FIFO within a priority", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 100, clock, priorityAging: Infinity });
    await limiter.acquire();
    const order: string[] = [];
    const asks: Array<[string, number]> = [["low-1", -1], ["normal-1", 0], ["high-1", 5], ["normal-2", 0], ["high-2", 5]];
    const done = asks.map(([name, priority]) => limiter.acquire(1, { priority }).then(() => order.push(name)));
    await clock.advance(500);
    await Promise.all(done);
    expect(order).toEqual(["high-1", "high-2", "normal-1", "normal-2", "low-1"]);
  });
});

describe("stats and events", () => {
  test("grant, refuse and abort events carry their details; stats() counts them", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 100, clock });
    const seen: Array<[string, unknown]> = [];
    for (const type of ["grant", "refuse", "abort"]) {
      limiter.events.addEventListener(type, (e) => {
        const d = (e as CustomEvent<{ permits: number; waited?: number; reason?: string }>).detail;
        seen.push([type, type === "refuse" ? d.reason : d.waited]);
      });
    }
    await limiter.acquire();
    const waiting = limiter.acquire();
    await limiter.acquire(1, { maxWait: 10 }).catch(() => undefined);
    const controller = new AbortController();
    const aborted = limiter.acquire(1, { signal: controller.signal }).catch(() => "aborted");
    await clock.advance(40);
    controller.abort();
    expect(await aborted).toBe("aborted");
    await clock.advance(60);
    await waiting;
    expect(seen).toEqual([["grant", 0], ["refuse", "maxWait"], ["abort", 40], ["grant", 100]]);
    const stats = limiter.stats();
    expect([stats.granted, stats.refused, stats.aborted, stats.queued]).toEqual([2, 1, 1, 0]);
  });

  test("a KeyedLimiter re-dispatches its keys' events with the key", async () => {
    const clock = new ManualClock();
    const keyed = new KeyedLimiter({ create: () => new WindowLimiter({ limit: 5, interval: 100, clock }), clock });
    const keys: unknown[] = [];
    keyed.events.addEventListener("grant", (e) => keys.push((e as CustomEvent<{ key: unknown }>).detail.key));
    await keyed.get("a").acquire();
    await keyed.get("b").acquire();
    expect(keys).toEqual(["a", "b"]);
    expect(keyed.stats().granted).toBe(2);
  });
});
