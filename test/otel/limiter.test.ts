/**
 * instrumentLimiter(), read through the OpenTelemetry SDK's in-memory exporter: every event becomes
 * exactly the data points the README promises (names, units, attributes, values), the gauges read
 * stats() at collection, and stopping leaves no listener and no callback behind.
 */
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { DataPointType, type MetricData } from "@opentelemetry/sdk-metrics";
import type { Meter } from "@opentelemetry/api";
import { instrumentLimiter, type MeterLike, METRICS, WAIT_BUCKETS } from "../../src/otel.ts";
import { FakeLimiter, harness, type Harness, histogram, points, sorted, sortedBy } from "./support.ts";

let otel: Harness;
beforeEach(() => {
  otel = harness();
});
afterEach(() => otel.shutdown());

const NAME = { "sluice.limiter.name": "github" };
const granted = { ...NAME, "sluice.limiter.outcome": "granted" };
const aborted = { ...NAME, "sluice.limiter.outcome": "aborted" };
const refused = (reason: string) => ({ ...NAME, "sluice.limiter.outcome": "refused", "sluice.limiter.refusal.reason": reason });

describe("instrumentLimiter(): counters and the wait histogram from events", () => {
  test("grants, refusals and aborts become requests and permits by outcome, waits a histogram in seconds", async () => {
    const limiter = new FakeLimiter();
    instrumentLimiter(limiter, { meter: otel.meter, name: "github" });
    limiter.grant(1, 0);
    limiter.grant(3, 1500);
    limiter.grant(1, 40);
    limiter.refuse(2, "maxWait");
    limiter.refuse(1, "maxQueue");
    limiter.refuse(1, "maxQueue");
    limiter.abort(4, 250);
    const metrics = await otel.collect();

    expect(points(metrics, "sluice.limiter.requests")).toEqual(sorted([
      [granted, 3],
      [refused("max_wait"), 1],
      [refused("max_queue"), 2],
      [aborted, 1],
    ]));
    expect(points(metrics, "sluice.limiter.permits")).toEqual(sorted([
      [granted, 5],
      [refused("max_wait"), 2],
      [refused("max_queue"), 2],
      [aborted, 4],
    ]));
    expect(histogram(metrics, "sluice.limiter.queue.duration")).toEqual(sortedBy([
      { attributes: granted, count: 3, sum: 1.54, buckets: [[0, 1], [0.05, 1], [2.5, 1]] },
      { attributes: aborted, count: 1, sum: 0.25, buckets: [[0.25, 1]] },
    ]));
  });

  test("pauses are counted", async () => {
    const limiter = new FakeLimiter();
    instrumentLimiter(limiter, { meter: otel.meter, name: "github" });
    limiter.pause(2000, 0);
    limiter.pause(500, 100);
    expect(points(await otel.collect(), "sluice.limiter.pauses")).toEqual(sorted([[NAME, 2]]));
  });

  test("the caller's attributes are on every measurement, beside the name", async () => {
    const limiter = new FakeLimiter();
    instrumentLimiter(limiter, { meter: otel.meter, name: "github", attributes: { region: "eu", shard: 3 } });
    limiter.grant(1, 0);
    limiter.queued = 2;
    const metrics = await otel.collect();
    expect(points(metrics, "sluice.limiter.requests")).toEqual(sorted([[{ ...granted, region: "eu", shard: 3 }, 1]]));
    expect(points(metrics, "sluice.limiter.queued_requests")).toEqual(sorted([[{ ...NAME, region: "eu", shard: 3 }, 2]]));
  });

  test("`name` wins over an attribute of the same key", async () => {
    const limiter = new FakeLimiter();
    instrumentLimiter(limiter, { meter: otel.meter, name: "github", attributes: { "sluice.limiter.name": "other" } });
    limiter.grant(1, 0);
    expect(points(await otel.collect(), "sluice.limiter.requests")).toEqual(sorted([[granted, 1]]));
  });
});

describe("instrumentLimiter(): queued, in-flight and rate read from stats() at each collection", () => {
  test("each collection reads stats() once and reports what it says", async () => {
    const limiter = new FakeLimiter();
    limiter.rate = { limit: 5000, interval: 3_600_000 };
    instrumentLimiter(limiter, { meter: otel.meter, name: "github" });
    limiter.queued = 7;
    limiter.inFlight = 2;
    let metrics = await otel.collect();
    expect(limiter.reads).toBe(1);
    expect(points(metrics, "sluice.limiter.queued_requests")).toEqual(sorted([[NAME, 7]]));
    expect(points(metrics, "sluice.limiter.active_requests")).toEqual(sorted([[NAME, 2]]));
    expect(points(metrics, "sluice.limiter.rate")).toEqual(sorted([[NAME, 5000 / 3600]]));

    limiter.queued = 0;
    limiter.inFlight = 1;
    limiter.rate = { limit: 10, interval: 1000 }; // an adaptive limiter moved its rate
    metrics = await otel.collect();
    expect(limiter.reads).toBe(2);
    expect(points(metrics, "sluice.limiter.queued_requests")).toEqual(sorted([[NAME, 0]]));
    expect(points(metrics, "sluice.limiter.active_requests")).toEqual(sorted([[NAME, 1]]));
    expect(points(metrics, "sluice.limiter.rate")).toEqual(sorted([[NAME, 10]]));
  });

  test("a limiter without a rate reports none", async () => {
    const limiter = new FakeLimiter();
    instrumentLimiter(limiter, { meter: otel.meter, name: "github" });
    expect(points(await otel.collect(), "sluice.limiter.rate")).toEqual(sorted([]));
  });

  test("two limiters on one meter share the instruments, told apart by name", async () => {
    const a = new FakeLimiter();
    const b = new FakeLimiter();
    instrumentLimiter(a, { meter: otel.meter, name: "a" });
    instrumentLimiter(b, { meter: otel.meter, name: "b" });
    a.grant(1, 0);
    b.grant(2, 0);
    b.grant(1, 0);
    a.queued = 1;
    b.queued = 4;
    const metrics = await otel.collect();
    expect(metrics.filter((m) => m.descriptor.name === "sluice.limiter.requests")).toHaveLength(1);
    const name = (n: string) => ({ "sluice.limiter.name": n });
    expect(points(metrics, "sluice.limiter.requests")).toEqual(sorted([
      [{ ...name("a"), "sluice.limiter.outcome": "granted" }, 1],
      [{ ...name("b"), "sluice.limiter.outcome": "granted" }, 2],
    ]));
    expect(points(metrics, "sluice.limiter.queued_requests")).toEqual(sorted([[name("a"), 1], [name("b"), 4]]));
  });
});

describe("the instruments follow the semantic conventions", () => {
  test("names, kinds, units and bucket boundaries are the documented ones", async () => {
    const limiter = new FakeLimiter();
    limiter.rate = { limit: 1, interval: 1000 };
    instrumentLimiter(limiter, { meter: otel.meter, name: "github" });
    limiter.grant(1, 0);
    limiter.pause(1, 0);
    const metrics = await otel.collect();
    const kind = (m: MetricData) => [
      m.descriptor.name,
      m.descriptor.unit,
      m.dataPointType === DataPointType.SUM ? (m.isMonotonic ? "counter" : "updowncounter") : DataPointType[m.dataPointType],
    ];
    expect(metrics.map(kind).sort()).toEqual([
      [METRICS.activeRequests.name, "{request}", "updowncounter"],
      [METRICS.pauses.name, "{pause}", "counter"],
      [METRICS.permits.name, "{permit}", "counter"],
      [METRICS.queueDuration.name, "s", "HISTOGRAM"],
      [METRICS.queuedRequests.name, "{request}", "updowncounter"],
      [METRICS.rate.name, "{permit}/s", "GAUGE"],
      [METRICS.requests.name, "{request}", "counter"],
    ].sort());
    for (const m of metrics) {
      expect(m.descriptor.name).toMatch(/^sluice\.[a-z_.]+$/);
      expect(m.descriptor.name).not.toMatch(/total|seconds/);
      expect(m.descriptor.description).not.toBe("");
    }
    const [point] = metrics.find((m) => m.descriptor.name === METRICS.queueDuration.name)!.dataPoints;
    expect((point!.value as { buckets: { boundaries: number[] } }).buckets.boundaries).toEqual(WAIT_BUCKETS);
  });
});

describe("stopping", () => {
  test("removes every listener and the collection callback; calling it twice is harmless", async () => {
    const limiter = new FakeLimiter();
    const stop = instrumentLimiter(limiter, { meter: otel.meter, name: "github" });
    expect(limiter.events.listeners()).toBe(4); // grant, refuse, abort, pause
    limiter.grant(1, 0);
    await otel.collect();
    expect(limiter.reads).toBe(1);

    stop();
    stop();
    expect(limiter.events.listeners()).toBe(0);
    limiter.grant(1, 0); // no listener: nothing dispatched, nothing counted
    const metrics = await otel.collect();
    expect(limiter.reads).toBe(1);
    expect(points(metrics, "sluice.limiter.requests")).toEqual(sorted([[granted, 1]]));
  });

  test("a stopped limiter and its callback are not kept by the meter", async () => {
    const removed: unknown[] = [];
    const meter = otel.meter;
    const spy: MeterLike = {
      createCounter: (n, o) => meter.createCounter(n, o),
      createHistogram: (n, o) => meter.createHistogram(n, o),
      createObservableUpDownCounter: (n, o) => meter.createObservableUpDownCounter(n, o),
      createObservableGauge: (n, o) => meter.createObservableGauge(n, o),
      addBatchObservableCallback: (c, o) => meter.addBatchObservableCallback(c, o as never),
      removeBatchObservableCallback: (c, o) => {
        removed.push(c);
        meter.removeBatchObservableCallback(c, o as never);
      },
    };
    const stop = instrumentLimiter(new FakeLimiter(), { meter: spy, name: "x" });
    stop();
    expect(removed).toHaveLength(1);
  });
});

describe("a real OpenTelemetry Meter is a MeterLike", () => {
  test("type-checked: no cast needed", () => {
    const meter: Meter = otel.meter;
    const like: MeterLike = meter;
    expect(like).toBe(meter);
  });
});

describe("invalid options throw, naming the option and the value", () => {
  const limiter = new FakeLimiter();
  const cases: Array<[string, () => unknown, ErrorConstructor, string]> = [
    ["no meter", () => instrumentLimiter(limiter, { name: "x" } as never), TypeError, "`meter` must be an OpenTelemetry Meter, got undefined"],
    [
      "a meter without batch callbacks",
      () => instrumentLimiter(limiter, { meter: { createCounter() {}, createHistogram() {} } as never, name: "x" }),
      TypeError,
      "`meter` must be an OpenTelemetry Meter (it has no createObservableUpDownCounter()), got an object {createCounter, createHistogram}",
    ],
    ["no name", () => instrumentLimiter(limiter, { meter: otel.meter } as never), TypeError, "`name` must be a string, got undefined"],
    ["an empty name", () => instrumentLimiter(limiter, { meter: otel.meter, name: "" }), RangeError, '`name` must be a non-empty string, got ""'],
    [
      "attributes that are not an object",
      () => instrumentLimiter(limiter, { meter: otel.meter, name: "x", attributes: "eu" as never }),
      TypeError,
      '`attributes` must be an object, got "eu"',
    ],
    ["not a limiter", () => instrumentLimiter({} as never, { meter: otel.meter, name: "x" }), TypeError, "`limiter` must be a sluice limiter (with stats() and events), got an object {}"],
    ["no options", () => instrumentLimiter(limiter, undefined as never), TypeError, "`meter` must be an OpenTelemetry Meter, got undefined"],
  ];
  test.each(cases)("%s", (_name, call, type, message) => {
    expect(call).toThrow(type);
    expect(call).toThrow(message);
  });

  test("a failed call leaves no listener behind", () => {
    const fresh = new FakeLimiter();
    expect(() => instrumentLimiter(fresh, { meter: otel.meter, name: "" })).toThrow(RangeError);
    expect(fresh.events.listeners()).toBe(0);
  });
});
