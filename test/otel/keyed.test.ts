/**
 * instrumentKeyed(): the key as `sluice.key`, bounded; per-key queued and in-flight counts that
 * always add up to the keyed limiter's totals — checked on examples and on random sequences.
 */
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { instrumentKeyed } from "../../src/otel.ts";
import { Reach } from "../reach.ts";
import { FakeKeyed, harness, type Harness, points, sorted } from "./support.ts";

let otel: Harness;
beforeEach(() => {
  otel = harness();
});
afterEach(() => otel.shutdown());

const NAME = { "sluice.limiter.name": "tenants" };
const key = (k: string) => ({ ...NAME, "sluice.key": k });
const granted = (attributes: Record<string, unknown>) => ({ ...attributes, "sluice.limiter.outcome": "granted" });

describe("instrumentKeyed(): each key's events carry sluice.key", () => {
  test("by default the key itself, for the first 100 distinct keys; later keys without sluice.key", async () => {
    const keyed = new FakeKeyed();
    instrumentKeyed(keyed, { meter: otel.meter, name: "tenants" });
    for (let i = 0; i < 102; i++) keyed.key(`t${i}`).grant(1, 0);
    keyed.key("t0").grant(2, 0);
    keyed.key("t101").refuse(1, "maxQueue");
    const requests = points(await otel.collect(), "sluice.limiter.requests");
    expect(requests).toHaveLength(102); // t0…t99, the unkeyed granted series, the unkeyed refusal
    expect(requests).toContainEqual([granted(key("t0")), 2]);
    expect(requests).toContainEqual([granted(key("t99")), 1]);
    expect(requests).toContainEqual([granted(NAME), 2]); // t100, t101
    expect(requests).toContainEqual([{ ...NAME, "sluice.limiter.outcome": "refused", "sluice.limiter.refusal.reason": "max_queue" }, 1]);
  });

  test("`key` maps keys to buckets; `undefined` leaves a key out", async () => {
    const keyed = new FakeKeyed();
    const plan = (tenant: string) => (tenant.startsWith("free-") ? "free" : tenant === "internal" ? undefined : "paid");
    instrumentKeyed(keyed, { meter: otel.meter, name: "tenants", key: plan, maxKeys: 5 });
    keyed.key("free-1").grant(1, 0);
    keyed.key("free-2").grant(1, 0);
    keyed.key("acme").grant(1, 0);
    keyed.key("internal").grant(1, 0);
    expect(points(await otel.collect(), "sluice.limiter.requests")).toEqual(sorted([
      [granted(NAME), 1],
      [granted(key("free")), 2],
      [granted(key("paid")), 1],
    ]));
  });

  test("`maxKeys: 0` never breaks out keys; a `key` function that throws or returns a non-string leaves the key out", async () => {
    const keyed = new FakeKeyed();
    instrumentKeyed(keyed, { meter: otel.meter, name: "a", maxKeys: 0 });
    instrumentKeyed(keyed, {
      meter: otel.meter,
      name: "b",
      key: (k) => {
        if (k === "bad") throw new Error("boom");
        return k === "num" ? (42 as never) : k;
      },
    });
    keyed.key("x").grant(1, 0);
    keyed.key("bad").grant(1, 0);
    keyed.key("num").grant(1, 0);
    const name = (n: string) => ({ "sluice.limiter.name": n });
    expect(points(await otel.collect(), "sluice.limiter.requests")).toEqual(sorted([
      [granted(name("a")), 3],
      [granted(name("b")), 2],
      [granted({ ...name("b"), "sluice.key": "x" }), 1],
    ]));
  });

  test("`maxKeys: Infinity` breaks out every key", async () => {
    const keyed = new FakeKeyed();
    instrumentKeyed(keyed, { meter: otel.meter, name: "tenants", maxKeys: Infinity });
    for (let i = 0; i < 150; i++) keyed.key(`t${i}`).grant(1, 0);
    expect(points(await otel.collect(), "sluice.limiter.requests")).toHaveLength(150);
  });

  test("pauses and waits are per key too", async () => {
    const keyed = new FakeKeyed();
    instrumentKeyed(keyed, { meter: otel.meter, name: "tenants" });
    keyed.key("a").pause(1000, 0);
    keyed.key("a").abort(1, 500);
    const metrics = await otel.collect();
    expect(points(metrics, "sluice.limiter.pauses")).toEqual(sorted([[key("a"), 1]]));
    expect(points(metrics, "sluice.limiter.requests")).toEqual(sorted([[{ ...key("a"), "sluice.limiter.outcome": "aborted" }, 1]]));
  });
});

describe("instrumentKeyed(): queued and in-flight per key, adding up to stats()", () => {
  test("keys seen in events are read with stats(key); the rest is the series without sluice.key", async () => {
    const keyed = new FakeKeyed();
    instrumentKeyed(keyed, { meter: otel.meter, name: "tenants" });
    keyed.key("a").grant(1, 0);
    keyed.key("a").queued = 2;
    keyed.key("b").grant(1, 0);
    keyed.key("b").inFlight = 1;
    keyed.key("c").queued = 4; // waiting since before its first event
    const metrics = await otel.collect();
    expect(points(metrics, "sluice.limiter.queued_requests")).toEqual(sorted([[NAME, 4], [key("a"), 2], [key("b"), 0]]));
    expect(points(metrics, "sluice.limiter.active_requests")).toEqual(sorted([[NAME, 0], [key("a"), 0], [key("b"), 1]]));
    expect(points(metrics, "sluice.limiter.rate")).toEqual(sorted([]));
  });

  test("a key that goes idle is reported at 0 (the SDK keeps a series' last value), then no longer read", async () => {
    const keyed = new FakeKeyed();
    instrumentKeyed(keyed, { meter: otel.meter, name: "tenants" });
    const a = keyed.key("a");
    a.grant(1, 0);
    a.queued = 3;
    expect(points(await otel.collect(), "sluice.limiter.queued_requests")).toEqual(sorted([[NAME, 0], [key("a"), 3]]));
    a.queued = 0;
    const reads = a.reads;
    expect(points(await otel.collect(), "sluice.limiter.queued_requests")).toEqual(sorted([[NAME, 0], [key("a"), 0]]));
    expect(a.reads).toBe(reads + 1);
    await otel.collect();
    expect(a.reads).toBe(reads + 1); // forgotten: memory follows the busy keys

    // Busy again without an event: counted in the unkeyed series until its next event.
    a.queued = 1;
    expect(points(await otel.collect(), "sluice.limiter.queued_requests")).toEqual(sorted([[NAME, 1], [key("a"), 0]]));
    a.grant(1, 0);
    expect(points(await otel.collect(), "sluice.limiter.queued_requests")).toEqual(sorted([[NAME, 0], [key("a"), 1]]));
  });

  test("an evicted key is reported at 0 and forgotten, without making a limiter for it", async () => {
    const keyed = new FakeKeyed();
    instrumentKeyed(keyed, { meter: otel.meter, name: "tenants" });
    keyed.key("a").grant(1, 0);
    keyed.key("a").inFlight = 1;
    expect(points(await otel.collect(), "sluice.limiter.active_requests")).toEqual(sorted([[NAME, 0], [key("a"), 1]]));
    keyed.key("a").inFlight = 0;
    keyed.evict("a");
    expect(points(await otel.collect(), "sluice.limiter.active_requests")).toEqual(sorted([[NAME, 0], [key("a"), 0]]));
    expect(keyed.has("a")).toBe(false);
  });

  test("keys in one bucket are summed", async () => {
    const keyed = new FakeKeyed();
    instrumentKeyed(keyed, { meter: otel.meter, name: "tenants", key: (k) => k.split("-")[0] });
    for (const [k, queued] of [["free-1", 1], ["free-2", 2], ["paid-1", 5]] as const) {
      keyed.key(k).grant(1, 0);
      keyed.key(k).queued = queued;
    }
    expect(points(await otel.collect(), "sluice.limiter.queued_requests")).toEqual(sorted([[NAME, 0], [key("free"), 3], [key("paid"), 5]]));
  });

  test("stopping removes the listeners and the callback", async () => {
    const keyed = new FakeKeyed();
    const stop = instrumentKeyed(keyed, { meter: otel.meter, name: "tenants" });
    keyed.key("a").grant(1, 0);
    await otel.collect();
    const reads = keyed.key("a").reads;
    stop();
    expect(keyed.events.listeners()).toBe(0);
    keyed.key("a").queued = 5;
    await otel.collect();
    expect(keyed.key("a").reads).toBe(reads);
  });

  test("random sequences: the series always add up to stats(), and a key seen in an event reads as stats(key)", async () => {
    const KEYS = ["a", "b", "c", "d"];
    type Op =
      | { kind: "event"; key: string }
      | { kind: "set"; key: string; queued: number; inFlight: number }
      | { kind: "evict"; key: string }
      | { kind: "collect" };
    const keyArb = fc.constantFrom(...KEYS);
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant("event" as const), key: keyArb }),
      fc.record({ kind: fc.constant("set" as const), key: keyArb, queued: fc.nat(3), inFlight: fc.nat(2) }),
      fc.record({ kind: fc.constant("evict" as const), key: keyArb }),
      fc.record({ kind: fc.constant("collect" as const) }),
    );
    const reach = new Reach("keyed gauges add up");
    await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 30 }), async (ops) => {
      reach.run();
      const local = harness();
      try {
        const keyed = new FakeKeyed();
        instrumentKeyed(keyed, { meter: local.meter, name: "tenants" });
        const exact = new Set<string>(); // keys seen in an event and not yet reported idle
        for (const o of [...ops, { kind: "collect" } as const]) {
          if (o.kind === "event") {
            keyed.key(o.key).grant(1, 0);
            exact.add(o.key);
          } else if (o.kind === "set") {
            Object.assign(keyed.key(o.key), { queued: o.queued, inFlight: o.inFlight });
          } else if (o.kind === "evict") {
            // Only a key at rest is evicted (the KeyedLimiter's rule).
            if (keyed.has(o.key) && keyed.stats(o.key).queued === 0 && keyed.stats(o.key).inFlight === 0) keyed.evict(o.key);
          } else {
            const metrics = await local.collect();
            const total = keyed.stats();
            for (const [metric, field] of [["sluice.limiter.queued_requests", "queued"], ["sluice.limiter.active_requests", "inFlight"]] as const) {
              const series = points(metrics, metric);
              expect(series.reduce((s, [, v]) => s + v, 0)).toBe(total[field]);
              for (const k of exact) {
                expect(series.find(([a]) => a["sluice.key"] === k)?.[1]).toBe(keyed.stats(k)[field]);
              }
              const unkeyed = series.find(([a]) => !("sluice.key" in a))?.[1] ?? 0;
              reach.hit("busy keys outside the keyed series", unkeyed > 0);
              reach.hit("busy keys in the keyed series", series.some(([a, v]) => "sluice.key" in a && v > 0));
            }
            for (const k of [...exact]) {
              const s = keyed.stats(k);
              if (s.queued === 0 && s.inFlight === 0) {
                exact.delete(k);
                reach.hit("a key forgotten after reporting idle");
              }
            }
          }
        }
      } finally {
        await local.shutdown();
      }
    }));
    reach.atLeast({ "busy keys outside the keyed series": 100, "busy keys in the keyed series": 30, "a key forgotten after reporting idle": 40 });
  });
});

describe("invalid options throw, naming the option and the value", () => {
  const keyed = new FakeKeyed();
  const cases: Array<[string, () => unknown, ErrorConstructor, string]> = [
    ["a negative maxKeys", () => instrumentKeyed(keyed, { meter: otel.meter, name: "x", maxKeys: -1 }), RangeError, "`maxKeys` must be a non-negative integer or Infinity, got -1"],
    ["a fractional maxKeys", () => instrumentKeyed(keyed, { meter: otel.meter, name: "x", maxKeys: 1.5 }), RangeError, "`maxKeys` must be a non-negative integer or Infinity, got 1.5"],
    ["a key that is not a function", () => instrumentKeyed(keyed, { meter: otel.meter, name: "x", key: "tenant" as never }), TypeError, '`key` must be a function, got "tenant"'],
    ["a misspelt option", () => instrumentKeyed(keyed, { meter: otel.meter, name: "x", maxkeys: 5 } as never), TypeError, "`maxkeys` is not an option of instrumentKeyed() (did you mean `maxKeys`?)"],
    [
      "a limiter without has()",
      () => instrumentKeyed({ stats: () => ({ queued: 0, inFlight: 0 }), events: new EventTarget() } as never, { meter: otel.meter, name: "x" }),
      TypeError,
      "`keyed` must be a sluice KeyedLimiter (with stats() and events), got an object {stats, events}",
    ],
  ];
  test.each(cases)("%s", (_name, call, type, message) => {
    expect(call).toThrow(type);
    expect(call).toThrow(message);
    expect(keyed.events.listeners()).toBe(0);
  });
});
