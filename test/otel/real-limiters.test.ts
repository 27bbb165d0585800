/**
 * sluice/otel against the real limiters (stats() and events as SPEC-observability.md defines them),
 * in virtual time, read through the OpenTelemetry SDK's in-memory exporter.
 */
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { ManualClock } from "../../src/clock.ts";
import { MaxWaitExceededError, QueueFullError } from "../../src/errors.ts";
import { combine } from "../../src/limiters/combine.ts";
import { KeyedLimiter } from "../../src/limiters/keyed.ts";
import { SmoothLimiter } from "../../src/limiters/smooth.ts";
import { WindowLimiter } from "../../src/limiters/window.ts";
import { instrumentKeyed, instrumentLimiter } from "../../src/otel.ts";
import { harness, type Harness, histogram, points, sorted } from "./support.ts";

let otel: Harness;
beforeEach(() => {
  otel = harness();
});
afterEach(() => otel.shutdown());

const NAME = { "sluice.limiter.name": "api" };
const outcome = (o: string, extra: Record<string, string> = {}) => ({ ...NAME, "sluice.limiter.outcome": o, ...extra });

describe("instrumentLimiter() on the built-in limiters", () => {
  test("WindowLimiter: two grants at once, the third after the window; queued while it waits; the rate", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 2, interval: 1000, clock });
    instrumentLimiter(limiter, { meter: otel.meter, name: "api" });
    await limiter.acquire();
    await limiter.acquire();
    const third = limiter.acquire();
    let metrics = await otel.collect();
    expect(points(metrics, "sluice.limiter.queued_requests")).toEqual([[NAME, 1]]);
    expect(points(metrics, "sluice.limiter.rate")).toEqual([[NAME, 2]]);
    await clock.advance(1000);
    await third;
    metrics = await otel.collect();
    expect(points(metrics, "sluice.limiter.queued_requests")).toEqual([[NAME, 0]]);
    expect(points(metrics, "sluice.limiter.requests")).toEqual([[outcome("granted"), 3]]);
    expect(histogram(metrics, "sluice.limiter.queue.duration")).toEqual([
      { attributes: outcome("granted"), count: 3, sum: 1, buckets: [[0, 2], [1, 1]] },
    ]);
  });

  test("refusals by maxWait and by maxQueue, and an abort after 300 ms, each with its permits", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 5, interval: 1000, clock, maxQueue: 1 });
    instrumentLimiter(limiter, { meter: otel.meter, name: "api" });
    await limiter.acquire(5);
    await expect(limiter.acquire(2, { maxWait: 10 })).rejects.toBeInstanceOf(MaxWaitExceededError);
    const controller = new AbortController();
    const queued = limiter.acquire(3, { signal: controller.signal });
    queued.catch(() => {});
    await expect(limiter.acquire()).rejects.toBeInstanceOf(QueueFullError);
    await clock.advance(300);
    controller.abort();
    await expect(queued).rejects.toBeDefined();
    const metrics = await otel.collect();
    expect(points(metrics, "sluice.limiter.requests")).toEqual(sorted([
      [outcome("granted"), 1],
      [outcome("refused", { "sluice.limiter.refusal.reason": "max_wait" }), 1],
      [outcome("refused", { "sluice.limiter.refusal.reason": "max_queue" }), 1],
      [outcome("aborted"), 1],
    ]));
    expect(points(metrics, "sluice.limiter.permits")).toEqual(sorted([
      [outcome("granted"), 5],
      [outcome("refused", { "sluice.limiter.refusal.reason": "max_wait" }), 2],
      [outcome("refused", { "sluice.limiter.refusal.reason": "max_queue" }), 1],
      [outcome("aborted"), 3],
    ]));
    expect(histogram(metrics, "sluice.limiter.queue.duration").find((h) => h.attributes["sluice.limiter.outcome"] === "aborted"))
      .toEqual({ attributes: outcome("aborted"), count: 1, sum: 0.3, buckets: [[0.5, 1]] });
  });

  test("a scheduled task is in flight until it settles; tryAcquire grants count too", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 10, interval: 1000, clock });
    instrumentLimiter(limiter, { meter: otel.meter, name: "api" });
    let finish!: () => void;
    const task = limiter.schedule(() => new Promise<void>((resolve) => (finish = resolve)));
    expect(points(await otel.collect(), "sluice.limiter.active_requests")).toEqual([[NAME, 1]]);
    finish();
    await task;
    // burst defaults to 1: the next permit is free one spacing (100 ms) after the first grant.
    expect(limiter.tryAcquire()).toBe(100);
    await clock.advance(100);
    expect(limiter.tryAcquire()).toBe(0);
    const metrics = await otel.collect();
    expect(points(metrics, "sluice.limiter.active_requests")).toEqual([[NAME, 0]]);
    expect(points(metrics, "sluice.limiter.requests")).toEqual([[outcome("granted"), 2]]);
  });

  test("pause(ms) is counted", async () => {
    const limiter = new SmoothLimiter({ limit: 10, clock: new ManualClock() });
    instrumentLimiter(limiter, { meter: otel.meter, name: "api" });
    limiter.pause(2000);
    expect(points(await otel.collect(), "sluice.limiter.pauses")).toEqual([[NAME, 1]]);
  });

  test("combine(): each grant counted once on the combination", async () => {
    const clock = new ManualClock();
    const both = combine(new WindowLimiter({ limit: 5, interval: 1000, clock }), new SmoothLimiter({ limit: 100, clock }));
    instrumentLimiter(both, { meter: otel.meter, name: "api" });
    await both.acquire(2);
    expect(points(await otel.collect(), "sluice.limiter.permits")).toEqual([[outcome("granted"), 2]]);
  });

  test("stop() removes the listeners: later grants are not counted", async () => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 10, clock });
    const stop = instrumentLimiter(limiter, { meter: otel.meter, name: "api" });
    await limiter.acquire();
    stop();
    // burst defaults to 1: the second is granted one spacing (100 ms) later.
    const second = limiter.acquire();
    await clock.advance(100);
    await second;
    expect(limiter.stats().granted).toBe(2);
    expect(points(await otel.collect(), "sluice.limiter.requests")).toEqual([[outcome("granted"), 1]]);
  });
});

describe("instrumentKeyed() on a KeyedLimiter", () => {
  test("per-key requests and queued counts, adding up to stats()", async () => {
    const clock = new ManualClock();
    const keyed = new KeyedLimiter({ create: () => new WindowLimiter({ limit: 1, interval: 1000, clock }), clock });
    instrumentKeyed(keyed, { meter: otel.meter, name: "api" });
    await keyed.acquire("a");
    await keyed.acquire("b");
    const waiting = [keyed.acquire("a"), keyed.acquire("a")];
    let metrics = await otel.collect();
    const key = (k: string) => ({ ...NAME, "sluice.key": k });
    expect(points(metrics, "sluice.limiter.queued_requests")).toEqual(sorted([[NAME, 0], [key("a"), 2], [key("b"), 0]]));
    expect(keyed.stats().queued).toBe(2);
    await clock.advance(2000);
    await Promise.all(waiting);
    metrics = await otel.collect();
    expect(points(metrics, "sluice.limiter.requests")).toEqual(sorted([
      [{ ...key("a"), "sluice.limiter.outcome": "granted" }, 3],
      [{ ...key("b"), "sluice.limiter.outcome": "granted" }, 1],
    ]));
    // b was idle at the last collection and is no longer read; the SDK keeps its last value, 0.
    expect(points(metrics, "sluice.limiter.queued_requests")).toEqual(sorted([[NAME, 0], [key("a"), 0], [key("b"), 0]]));
  });
});
