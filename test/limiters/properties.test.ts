import fc from "fast-check";
import { describe, expect, test, vi } from "vitest";
import { combine, ManualClock, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import { Gate } from "../../src/limiters/gate.ts";
import { Reach } from "../reach.ts";
import { simulate } from "./reference-model.ts";
import { conflictScenario, HORIZON, makeLimiter, maxPermits, overtaken, runReal, type Scenario, scenario } from "./scenarios.ts";

/** `SLUICE_MODEL_RUNS=3000` runs the model comparison longer (to hunt rare mismatches). */
const modelRuns = Number(process.env.SLUICE_MODEL_RUNS ?? 300);
/** The default 30 s per test, scaled for longer runs. */
const modelTimeout = Math.max(30_000, modelRuns * 100);

/**
 * Seed 1534039877's counterexample (a flake before reservations were refreshed): windows 5/1000 (0)
 * and 5/250 (1); the combination [0,1] waits; a loop of 1 permit every 100 ms on [1] alone. At 1050
 * the combination's second waiter (2 permits) is allowed by its own windows but would delay the
 * waiter of [0] (reserved 2000), so it reserves 2000; then the loop's request of 1000 is granted
 * (it delays nobody) and leaves window 1 short for that waiter until 1150: a fresh pass has it
 * reserve 1150, so the loop's 1100 request (after which it would be short until 1250) waits until
 * 1150. The gate used to keep the 2000 reservation and grant the 1100 request at once.
 */
const STALE_RESERVATION: Scenario = {
  policies: [{ kind: "window", limit: 5, interval: 1000 }, { kind: "window", limit: 5, interval: 250 }],
  queues: [[0, 1], [0], [1]],
  requests: [
    { arrival: 2, queue: 0, permits: 2 },
    { arrival: 1, queue: 0, permits: 2 },
    { arrival: 0, queue: 0, permits: 4 },
    { arrival: 1, queue: 1, permits: 4 },
    ...[500, 600, 700, 800, 900, 1000, 1100].map((arrival) => ({ arrival, queue: 2, permits: 1 })),
  ],
};

/**
 * The same layout, where a take outside a pass leaves the conflicted waiter short: at 1050 the
 * combination's second waiter reserves 2000 (it would delay [0]'s waiter); at 1060 two requests on
 * [1] arrive — the first is granted at once and leaves that waiter short until 1150, so the second is
 * checked against its fresh reservation of 1150 and waits until then. (The gate used to read the kept
 * 2000 and grant it at 1060.)
 */
const STALE_AFTER_TAKE: Scenario = {
  ...STALE_RESERVATION,
  requests: [
    ...STALE_RESERVATION.requests.slice(0, 4),
    ...[500, 600, 700, 800, 900, 1060, 1060].map((arrival) => ({ arrival, queue: 2, permits: 1 })),
  ],
};

/**
 * The same layout with two loop requests at 1000, which queue one behind the other on [1]: in the
 * pass at 1050 the first is granted after the conflicted waiter reserved 2000, and leaves it short
 * until 1150; the second, now at the front, is decided in the same pass — against 1150, so it waits
 * until then. (Without the pass starting over after that grant, it read the 2000 and went at 1050.)
 */
const STALE_IN_PASS: Scenario = {
  ...STALE_RESERVATION,
  requests: [...STALE_RESERVATION.requests, { arrival: 1000, queue: 2, permits: 1 }],
};

describe("properties against the reference model (random arrivals, sizes, aborts and channels)", () => {
  test("a reservation is recomputed after a take that leaves its waiter short (seed 1534039877, pinned)", async () => {
    const counts = { shrank: 0, grew: 0 };
    const expected = simulate(STALE_RESERVATION.policies, STALE_RESERVATION.queues, STALE_RESERVATION.requests, HORIZON, 1000, counts);
    expect(await runReal(STALE_RESERVATION)).toEqual(expected);
    // 0 at 0; [0]'s 4 at 2000 (window 0 frees at 1000, then [0,1]'s 2 at 1000 hold it until 2000);
    // [0,1]'s second 2 after that, at 3000; the loop on [1] as it arrives but 1000 (granted at
    // 1050, see above) and 1100, which waits until 1150 for [0,1]'s reservation of its own time.
    expect(expected).toEqual([
      { grantedAt: 3000 }, { grantedAt: 1000 }, { grantedAt: 0 }, { grantedAt: 2000 },
      ...[500, 600, 700, 800, 900, 1050, 1150].map((grantedAt) => ({ grantedAt })),
    ]);
    expect(counts.shrank).toBeGreaterThan(0);
  });

  test("a pass starts over after a grant that follows a conflicted waiter", async () => {
    const expected = simulate(STALE_IN_PASS.policies, STALE_IN_PASS.queues, STALE_IN_PASS.requests, HORIZON);
    expect(await runReal(STALE_IN_PASS)).toEqual(expected);
    expect([expected[9], expected[11]]).toEqual([{ grantedAt: 1050 }, { grantedAt: 1150 }]); // the two of 1000
  });

  test("a reservation is recomputed after a take outside a pass, before the next request reads it", async () => {
    const expected = simulate(STALE_AFTER_TAKE.policies, STALE_AFTER_TAKE.queues, STALE_AFTER_TAKE.requests, HORIZON);
    expect(await runReal(STALE_AFTER_TAKE)).toEqual(expected);
    expect(expected.slice(9)).toEqual([{ grantedAt: 1060 }, { grantedAt: 1150 }]);
  });

  test("reservation refresh: conflicted waiters beside dense loops match the reference model exactly", async () => {
    const reach = new Reach("reservation refresh");
    const counts = { shrank: 0, grew: 0 };
    const refresh = Gate.prototype.refresh;
    vi.spyOn(Gate.prototype, "refresh").mockImplementation(function (this: Gate, ...args: Parameters<Gate["refresh"]>) {
      const epoch = this.epoch;
      refresh.apply(this, args);
      reach.hit("rescan before a decision", this.epoch !== epoch);
    });
    try {
      await fc.assert(
        fc.asyncProperty(conflictScenario, async (s) => {
          reach.run();
          const real = await runReal(s);
          const before = { ...counts };
          expect(real).toEqual(simulate(s.policies, s.queues, s.requests, HORIZON, 1000, counts));
          reach.hit("conflicted reservation recomputed shorter", counts.shrank > before.shrank);
          reach.hit("conflicted reservation recomputed later", counts.grew > before.grew);
        }),
        { numRuns: modelRuns },
      );
    } finally {
      vi.restoreAllMocks();
    }
    const k = modelRuns / 300;
    // Measured over 8 runs of 300: shorter 105–127, later 8–14, rescans 41–95 (clustered in a run).
    reach.atLeast({
      "conflicted reservation recomputed shorter": 55 * k,
      "conflicted reservation recomputed later": 0, // printed with SLUICE_REACH=1 only: too rare for a 5σ floor
      "rescan before a decision": 10 * k,
    });
  }, modelTimeout);

  test("grant times and aborts match the naive reference model exactly", async () => {
    const reach = new Reach("gate = reference model");
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        reach.run();
        const real = await runReal(s);
        expect(real).toEqual(simulate(s.policies, s.queues, s.requests, HORIZON));
        reach.hit("starvation layout", s.queues.length === 3 && s.queues[0]!.length === 2);
        reach.hit("combination overtaken", overtaken(s, real));
      }),
      { numRuns: modelRuns },
    );
    // The starvation layouts with loops are generated, and later requests do pass a waiting combination.
    const k = modelRuns / 300;
    reach.atLeast({ "starvation layout": 30 * k, "combination overtaken": 15 * k });
  }, modelTimeout);

  test("a combination waiting beside loops on its members is granted by its reservation: no starvation", async () => {
    let reached = 0;
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const real = await runReal(s); // every request settles by the horizon (checked inside)
        if (s.queues.length === 3 && s.queues[0]!.length === 2 && overtaken(s, real)) reached++;
      }),
      { numRuns: 200 },
    );
    expect(reached).toBeGreaterThan(8);
  });

  test("predictions are exact: tryAcquire's hint and maxWait's retryAfter equal the real grant time", async () => {
    let otherChannelsWaiting = 0;
    let predicted = 0;
    await fc.assert(
      fc.asyncProperty(scenario, fc.integer({ min: 0, max: 1500 }), fc.nat(), fc.integer({ min: 1, max: 100 }), async (s, probeAt, q, seed) => {
        const clock = new ManualClock();
        const ps = s.policies.map((spec) => makeLimiter(spec, clock));
        const limiters = s.queues.map((qs) => (qs.length === 1 ? ps[qs[0]!]! : combine(...qs.map((p) => ps[p]!))));
        // Every request arrives before the probe, squeezed into [0, probeAt]: queues are busy when it asks.
        const last = Math.max(1, ...s.requests.map((r) => r.arrival));
        const before = s.requests
          .map((r) => ({ ...r, arrival: Math.floor((r.arrival * probeAt) / last) }))
          .sort((a, b) => a.arrival - b.arrival);
        for (const r of before) {
          await clock.advanceTo(r.arrival);
          void limiters[r.queue]!.acquire(r.permits);
        }
        await clock.advanceTo(probeAt);
        const queue = q % s.queues.length;
        const permits = 1 + (seed % Math.min(...s.queues[queue]!.map((p) => maxPermits(s.policies[p]!))));
        const target = limiters[queue]!;
        const hint = target.tryAcquire(permits);
        if (hint === 0) return; // granted (and taken) now
        predicted++;
        // The case a shortcut gets wrong: nobody queued on this limiter, but a waiter on another one
        // that shares a policy with it (it may take that policy first).
        const shares = (i: number) => s.queues[i]!.some((p) => s.queues[queue]!.includes(p));
        if (target.queued === 0 && limiters.some((l, i) => i !== queue && l.queued > 0 && shares(i))) otherChannelsWaiting++;
        const refused = target.acquire(permits, { maxWait: hint - 0.5 });
        await expect(refused).rejects.toMatchObject({ name: "MaxWaitExceededError", retryAfter: hint });
        let grantedAt: number | undefined;
        void target.acquire(permits, { maxWait: hint }).then(() => void (grantedAt = clock.now()));
        await clock.advanceTo(HORIZON);
        expect(grantedAt).toBe(probeAt + hint);
      }),
      { numRuns: 500 },
    );
    console.info(`predictions checked ${predicted}/500, with waiters only on other channels ${otherChannelsWaiting}`);
    expect(predicted).toBeGreaterThan(100);
    expect(otherChannelsWaiting).toBeGreaterThan(15);
  });

  test("a strict window is never exceeded, in any window, on any member of any combination", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const real = await runReal(s);
        s.policies.forEach((spec, p) => {
          if (spec.kind !== "window") return;
          const grants = real
            .map((o, i) => ({ at: o.grantedAt, permits: s.requests[i]!.permits, uses: s.queues[s.requests[i]!.queue]!.includes(p) }))
            .filter((g): g is { at: number; permits: number; uses: true } => g.at !== undefined && g.uses);
          for (const start of grants) {
            const inWindow = grants.filter((g) => g.at >= start.at && g.at < start.at + spec.interval);
            expect(inWindow.reduce((sum, g) => sum + g.permits, 0)).toBeLessThanOrEqual(spec.limit);
          }
        });
      }),
      { numRuns: 200 },
    );
  });

  test("FIFO: on one limiter, requests are granted in arrival order", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const real = await runReal(s);
        for (let q = 0; q < s.queues.length; q++) {
          const granted = s.requests
            .map((r, i) => ({ ...r, i, at: real[i]!.grantedAt }))
            .filter((r) => r.queue === q && r.at !== undefined)
            .sort((a, b) => a.arrival - b.arrival || a.i - b.i);
          for (let k = 1; k < granted.length; k++) expect(granted[k]!.at!).toBeGreaterThanOrEqual(granted[k - 1]!.at!);
        }
      }),
      { numRuns: 200 },
    );
  });

  test("an aborted request gives back exactly what it held: a twin that never saw it behaves identically", async () => {
    const extra = fc.record({ queue: fc.nat(), permitsSeed: fc.integer({ min: 1, max: 100 }), abortAfter: fc.integer({ min: 0, max: 2000 }) });
    await fc.assert(
      fc.asyncProperty(scenario, fc.array(extra, { minLength: 1, maxLength: 5 }), fc.integer({ min: 0, max: 500 }), async (s, extras, gap) => {
        const clock = new ManualClock();
        const build = () => {
          const ps = s.policies.map((spec) => makeLimiter(spec, clock));
          return s.queues.map((q) => (q.length === 1 ? ps[q[0]!]! : combine(...q.map((p) => ps[p]!))));
        };
        const [subject, twin] = [build(), build()];
        const base = s.requests.map((r) => ({ ...r, abortAt: undefined })).sort((a, b) => a.arrival - b.arrival);
        const times = [new Map<number, number>(), new Map<number, number>()];
        let extraGranted = false;
        for (const [i, r] of base.entries()) {
          await clock.advanceTo(r.arrival);
          void subject[r.queue]!.acquire(r.permits).then(() => times[0]!.set(i, clock.now()));
          void twin[r.queue]!.acquire(r.permits).then(() => times[1]!.set(i, clock.now()));
        }
        // Extra requests on the subject only, each aborted later; the twin never sees them.
        await clock.advance(gap);
        for (const e of extras) {
          const q = e.queue % s.queues.length;
          const cap = Math.min(...s.queues[q]!.map((p) => maxPermits(s.policies[p]!)));
          const controller = new AbortController();
          clock.setTimeout(() => controller.abort(), e.abortAfter + 0.5);
          subject[q]!.acquire(1 + (e.permitsSeed % cap), { signal: controller.signal }).then(
            () => void (extraGranted = true),
            () => {},
          );
        }
        await clock.advance(0);
        fc.pre(!extraGranted); // a granted request was never a waiter: outside this property
        await clock.advance(2001);
        fc.pre(!extraGranted);
        // From now on the two must be indistinguishable: same predictions, same grants.
        s.queues.forEach((_, q) => expect(subject[q]!.tryAcquire(1)).toBe(twin[q]!.tryAcquire(1)));
        await clock.advanceTo(HORIZON);
        expect(times[0]).toEqual(times[1]);
      }),
      { numRuns: 150 },
    );
  });

  test("a saturated limiter uses its full rate: no capacity is lost", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 20 }),
        fc.constantFrom(100, 1000),
        fc.integer({ min: 1, max: 120 }),
        async (limit, interval, n) => {
          const clock = new ManualClock();
          const window = new WindowLimiter({ limit, interval, clock });
          const smooth = new SmoothLimiter({ limit, interval, clock });
          const windowTimes: number[] = [];
          const smoothTimes: number[] = [];
          for (let k = 0; k < n; k++) {
            void window.acquire().then(() => windowTimes.push(clock.now()));
            void smooth.acquire().then(() => smoothTimes.push(clock.now()));
          }
          await clock.runAll();
          // Exactly `limit` per window, back to back; exactly one every interval/limit.
          expect(windowTimes).toEqual(Array.from({ length: n }, (_, k) => Math.floor(k / limit) * interval));
          smoothTimes.forEach((t, k) => expect(t).toBeCloseTo((k * interval) / limit, 9));
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe("WindowLimiter's log against a plain list of grants", () => {
  // The log is a ring buffer that grows by doubling; this drives it through wraps and growths (a
  // growth while the live entries wrap past the end copies two blocks) and checks every answer of
  // `tryAcquire` against the definition: the permits granted in (t - interval, t]. (Counted once,
  // 2026-11-24: 300 runs, ~46,000 steps, ~200 growths of a wrapped ring; a copy off by one entry fails.)
  test("tryAcquire agrees with the definition at every step, across wraps and growths", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 80 }),
        // Mostly small steps (the log fills, its head moves as the oldest leave), now and then a long
        // one (most of it empties): the ring wraps, and grows while wrapped.
        fc.array(fc.tuple(fc.oneof({ weight: 9, arbitrary: fc.integer({ min: 0, max: 6 }) }, { weight: 1, arbitrary: fc.integer({ min: 50, max: 150 }) }), fc.integer({ min: 1, max: 4 })), { minLength: 100, maxLength: 400 }),
        (limit, steps) => {
          const interval = 100;
          const clock = new ManualClock();
          const window = new WindowLimiter({ limit, interval, clock });
          const grants: [at: number, permits: number][] = [];
          for (const [dt, asked] of steps) {
            const permits = Math.min(asked, limit);
            clock.jumpTo(clock.now() + dt);
            const t = clock.now();
            const live = grants.filter(([at]) => at + interval > t);
            const used = live.reduce((sum, [, n]) => sum + n, 0);
            let expected = 0;
            if (used + permits > limit) {
              // The oldest grants must leave until the rest and these permits fit.
              let left = used;
              for (const [at, n] of live) {
                left -= n;
                if (left + permits <= limit) {
                  expected = at + interval - t;
                  break;
                }
              }
            }
            const got = window.tryAcquire(permits);
            expect(got).toBe(expected);
            if (got === 0) grants.push([t, permits]);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
