import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { combine, ManualClock, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import { simulate } from "./reference-model.ts";
import { HORIZON, makeLimiter, maxPermits, overtaken, runReal, scenario } from "./scenarios.ts";

describe("properties against the reference model (random arrivals, sizes, aborts and channels)", () => {
  test("grant times and aborts match the naive reference model exactly", async () => {
    let starvationLayouts = 0;
    let overtakes = 0;
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const real = await runReal(s);
        const expected = simulate(s.policies, s.queues, s.requests, HORIZON);
        expect(real).toEqual(expected);
        if (s.queues.length === 3 && s.queues[0]!.length === 2) starvationLayouts++;
        if (overtaken(s, real)) overtakes++;
      }),
      { numRuns: 300 },
    );
    // The starvation layouts with loops are generated, and later requests do pass a waiting combination.
    console.info(`starvation layouts ${starvationLayouts}/300, overtaken combinations ${overtakes}/300`);
    expect(starvationLayouts).toBeGreaterThan(30);
    expect(overtakes).toBeGreaterThan(15);
  });

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
