/**
 * The adaptive limiter against simulated servers in virtual time: closed-loop callers, the server's
 * own log as the judge. Targets (issue 11): told nothing or 2× too much → ≤ 3 % 429s, ≥ 90 % of the
 * server's rate, 90 % of it within 10 s; ≤ 1 % 429s in steady state; told the right limit → no 429
 * at all. Two regimes: latency 0–2 s (seeded) on 10 req/s servers, and the benchmark's own scenarios
 * (20 req/s, latency 20–80 ms, through `createThrottledFetch`). Where a case misses a target, the
 * test pins the figure measured and says so (time to 90 % at 0–2 s of latency; a fixed window told
 * nothing, 11 s; one request per 2 s; a limit that drops).
 */
import { describe, expect, test } from "vitest";
import { FixedWindowServer } from "../../src/testing/fixed-window.ts";
import { LeakyBucketServer } from "../../src/testing/leaky-bucket.ts";
import { SlidingLogServer } from "../../src/testing/sliding-log.ts";
import { TokenBucketServer } from "../../src/testing/token-bucket.ts";
import { decision, resolveHeaders, type ServerModel } from "../../src/testing/decision.ts";
import { describe as figures, type SimResult, simulate } from "./simulation.ts";

const R = 10;
const servers: Record<string, () => ServerModel> = {
  "token bucket": () => new TokenBucketServer({ limit: R }),
  "sliding log": () => new SlidingLogServer({ limit: R }),
  "fixed window (unknown phase)": () => new FixedWindowServer({ limit: R, phase: "random", seed: 3 }),
  "fixed window counting refusals": () => new FixedWindowServer({ limit: R, phase: "random", seed: 3, countRejected: true }),
  "nginx limit_req (429)": () => new LeakyBucketServer({ rate: R, status: 429 }),
  "token bucket with RateLimit headers": () => new TokenBucketServer({ limit: R, headers: ["ietf", "retry-after"] }),
};

/**
 * Minimum mean utilisation. Told 2× too much: the 90 % target, except nginx (85 %). Told nothing at
 * 0–2 s of latency: 85 % — a known gap: the answers that confirm each step of slow start and of the
 * search take up to 2 s, and a cut that measured low leaves the cubic curve's long climb (a sliding
 * log: 92/82/87/92 % over seeds 1–4; nginx without burst 90/85/88/90 %).
 */
const minUtilisation = (kind: string, told: boolean) => (kind.startsWith("nginx") || !told ? 0.85 : 0.9);
const SEEDS = [1, 2, 3, 4];
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe.each([
  ["told nothing", undefined],
  ["told 2× too much", 2 * R],
])("%s, 30 callers, 10 req/s server, 120 s, latency seeds 1–4", (label, maxRate) => {
  test.each(Object.keys(servers))("%s: ≤ 3 % 429s (≤ 1 % in steady state), utilisation on target", async (kind) => {
    const runs: SimResult[] = [];
    for (const seed of SEEDS) {
      runs.push(await simulate({ server: servers[kind]!(), realRate: R, callers: 30, duration: 120_000, adaptive: { maxRate }, seed }));
    }
    const pct = (f: (r: SimResult) => number) => runs.map((r) => +(100 * f(r)).toFixed(1)).join("/");
    console.info(`${label} / ${kind}: 429 ${pct((r) => r.share429)} %, steady ${pct((r) => r.steady429)} %, ` +
      `utilisation ${pct((r) => r.utilisation)} %, 90 % of the rate at ${runs.map((r) => r.reached90At).join("/")} s`);
    expect(mean(runs.map((r) => r.share429))).toBeLessThanOrEqual(0.03);
    expect(mean(runs.map((r) => r.steady429))).toBeLessThanOrEqual(0.01);
    expect(mean(runs.map((r) => r.utilisation))).toBeGreaterThanOrEqual(minUtilisation(kind, maxRate !== undefined));
    for (const r of runs) {
      expect(r.share429).toBeLessThanOrEqual(0.04);
      for (const l of r.limiters) expect(l.rate).toBeLessThanOrEqual(maxRate ?? Infinity);
      if (kind.includes("headers")) expect(r.throttled).toBe(0); // the stated limit is used, not probed
    }
    // Time to 90 % of the rate: the 10-s target is met at the benchmark's latency (below), and
    // missed here, where each step waits for an answer up to 2 s away. Pinned as measured: told 2×
    // too much, 0–17 s over the seeds; told nothing, the best seed 4–15 s (nginx without burst, 27 s).
    if (maxRate !== undefined) for (const r of runs) expect(r.reached90At).toBeLessThanOrEqual(17);
    else expect(Math.min(...runs.map((r) => r.reached90At))).toBeLessThanOrEqual(kind.startsWith("nginx") ? 27 : 15);
  });
});

describe("told the right limit, adaptive costs nothing", () => {
  test.each(Object.keys(servers))("%s: no 429, the full rate", async (kind) => {
    const r = await simulate({ server: servers[kind]!(), realRate: R, callers: 30, duration: 60_000, adaptive: { maxRate: R } });
    expect(r.throttled).toBe(0);
    expect(r.utilisation).toBeGreaterThanOrEqual(kind.includes("headers") ? 0.95 : 0.99);
  });
});

describe("harder cases", () => {
  test("a faster server (50 req/s, 100 callers, 60 s): few 429s", async () => {
    const r = await simulate({ server: new SlidingLogServer({ limit: 50 }), realRate: 50, callers: 100, duration: 60_000 });
    console.info(`50 req/s sliding log: ${figures(r)}`);
    expect(r.share429).toBeLessThanOrEqual(0.03);
    expect(r.utilisation).toBeGreaterThanOrEqual(0.75); // slow start from 1 req/s takes ~6 s of the 60
  });

  test("three clients sharing one quota: together on target, few 429s", async () => {
    const r = await simulate({ server: new SlidingLogServer({ limit: R }), realRate: R, clients: 3, callers: 10, duration: 120_000 });
    console.info(`3 clients sharing a sliding log: ${figures(r)}`);
    expect(r.share429).toBeLessThanOrEqual(0.03);
    expect(r.steady429).toBeLessThanOrEqual(0.01);
    expect(r.utilisation).toBeGreaterThanOrEqual(0.9);
  });

  /** 4 clients (as 4 processes) of 10 callers through createThrottledFetch on one strict 20/s quota, 120 s. */
  const fleetOf4 = (seed: number, startAt?: readonly number[]) =>
    simulate({
      server: new SlidingLogServer({ limit: 20, headers: ["retry-after"] }),
      realRate: 20,
      clients: 4,
      callers: 10,
      duration: 120_000,
      latency: { min: 20, max: 80 },
      seed,
      viaFetch: true,
      ...(startAt !== undefined && { startAt }),
    });

  test("4 clients (as 4 processes) through createThrottledFetch on one 20/s quota, 120 s: few 429s, fair shares (Jain's index)", async () => {
    for (const seed of [1, 2, 3]) {
      const r = await fleetOf4(seed);
      console.info(`fleet of 4, seed ${seed}: ${figures(r)}, fairness ${r.fairness.toFixed(3)} (${r.perClient.join("/")})`);
      expect(r.share429).toBeLessThanOrEqual(0.01);
      expect(r.steady429).toBeLessThanOrEqual(0.01);
      expect(r.utilisation).toBeGreaterThanOrEqual(0.89);
      // Each client cuts on its own 429s and climbs back toward its own last good rate, which keeps
      // unequal shares unequal for a while: 0.89–0.98 over the seeds (1 = equal shares).
      expect(r.fairness).toBeGreaterThanOrEqual(0.89);
    }
  });

  test("4 clients starting 0.5–2 s apart on one 20/s quota, 120 s: few 429s, but unequal shares stay unequal (Jain's index 0.62–0.88, pinned: a known weakness)", async () => {
    // Until 2026-11-24 the real-time bench's fleet processes began as each finished loading (up to a
    // second apart) and measured 0.72–0.86; they now wait for a common start (0.90–0.99). This pins
    // the staggered case. A client that starts later slow-starts into a full quota,
    // and whichever ends its search highest keeps the larger share: past its known rate each client
    // probes along its own cubic curve (slowly: its K is 300 of its own requests, at most 60 s), so
    // growth is proportional to the rate and nothing pulls the shares together. Tried and rejected
    // (2026-11-24): a K that does not shrink with the rate (0.83–0.93 but 1.6–2.5 % 429s in
    // steady state), recovering a cut client to its old rate instead of a plateau (no change).
    const fairness: number[] = [];
    for (const seed of [1, 2, 3]) {
      const r = await fleetOf4(seed, [0, 500, 1000, 2000]);
      console.info(`fleet of 4 starting apart, seed ${seed}: ${figures(r)}, fairness ${r.fairness.toFixed(3)} (${r.perClient.join("/")})`);
      expect(r.share429).toBeLessThanOrEqual(0.01);
      expect(r.steady429).toBeLessThanOrEqual(0.005);
      expect(r.utilisation).toBeGreaterThanOrEqual(0.9);
      fairness.push(r.fairness);
    }
    // Pinned at today's figures: a change that makes the shares fairer fails here and updates the README.
    expect(Math.min(...fairness)).toBeGreaterThanOrEqual(0.6);
    expect(Math.min(...fairness)).toBeLessThan(0.7);
  });

  test("a raised limit is rediscovered (10 → 20 req/s at 60 s)", async () => {
    const r = await simulate({ server: new SlidingLogServer({ limit: R, changes: [{ at: 60_000, limit: 2 * R }] }), realRate: R, callers: 40, duration: 180_000 });
    console.info(`step up: 429 ${(100 * r.share429).toFixed(1)} %, accepted 120–180 s ${r.acceptedRate(120_000, 180_000).toFixed(1)}/s`);
    expect(r.share429).toBeLessThanOrEqual(0.01);
    expect(r.acceptedRate(120_000, 180_000)).toBeGreaterThanOrEqual(0.9 * 2 * R);
  });

  test("a lowered limit is followed (20 → 10 req/s at 60 s, token bucket) — 1.3 % 429s from 80 s on: misses the 1 % steady target", async () => {
    const r = await simulate({ server: new TokenBucketServer({ limit: 2 * R, changes: [{ at: 60_000, limit: R }] }), realRate: R, callers: 40, duration: 120_000 });
    console.info(`step down: 429 ${(100 * r.share429).toFixed(1)} %, after ${(100 * r.share429In(60_000, 120_000)).toFixed(1)} %, ` +
      `80–120 s ${(100 * r.share429In(80_000, 120_000)).toFixed(1)} %, accepted 70–120 s ${r.acceptedRate(70_000, 120_000).toFixed(1)}/s`);
    expect(r.share429).toBeLessThanOrEqual(0.035);
    expect(r.share429In(80_000, 120_000)).toBeLessThanOrEqual(0.0135);
    expect(r.acceptedRate(70_000, 120_000)).toBeGreaterThanOrEqual(0.9 * R);
  });

  test("one caller against one request per 2 s (fixed window) — 2.2 % 429s, over the 2 % this case had before window inference", async () => {
    const r = await simulate({ server: new FixedWindowServer({ limit: 1, interval: 2000, phase: "random" }), realRate: 0.5, callers: 1, duration: 600_000 });
    console.info(`1 caller, 0.5 req/s: ${figures(r)}`);
    expect(r.share429).toBeLessThanOrEqual(0.023);
    expect(r.utilisation).toBeGreaterThanOrEqual(0.8);
  });

  test("a per-minute window (60 a minute): the window is inferred from Retry-After, probes come once a window, ≤ 3 % 429s, ≤ 1 % once learned", async () => {
    const r = await simulate({ server: new FixedWindowServer({ limit: 60, interval: 60_000, phase: "random" }), realRate: 1, callers: 10, duration: 1_800_000 });
    console.info(`60/min fixed window: ${figures(r)}`);
    expect(r.limiters[0]!.controller.step).toBeGreaterThanOrEqual(30_000);
    expect(r.share429).toBeLessThanOrEqual(0.03);
    expect(r.steady429).toBeLessThanOrEqual(0.01);
    expect(r.utilisation).toBeGreaterThanOrEqual(0.9);
  });

  test("per-minute windows whose 429s name no delay: waits through the refusal run, infers the window from a second one, 84–100 % of the rate (31–85 % before)", async () => {
    // Before the refusal runs, each 429 of a window used up cut again (one cut per round trip,
    // down to the floor), and the cubic curve took minutes to climb back: 31–62 % of a fixed
    // window's rate at 20–80 ms of latency, 77–85 % of a sliding log's. Now the run is waited
    // through, its length is the window, and the next cut is sized by what one window accepted.
    // The 429s are mostly the first windows', while slow start overshoots and until the cuts (at
    // most to 3/4 of the rate each) reach the window's rate (pinned, not targets: 3–18 % over the
    // run, up to 2.5 % in the second half). A cut trusting a window's measure all the way down
    // refused fewer (4–11 %), but cut a sliding log's rate to the floor for half an hour.
    const cases = [
      ["60/min fixed window", (seed: number) => new FixedWindowServer({ limit: 60, interval: 60_000, phase: "random", seed, headers: [] }), 1, [{ min: 20, max: 80 }, { min: 0, max: 2000 }], 0.9],
      ["60/min sliding log", () => new SlidingLogServer({ limit: 60, interval: 60_000, headers: [] }), 1, [{ min: 20, max: 80 }, { min: 0, max: 2000 }], 0.8],
      ["600/min fixed window", (seed: number) => new FixedWindowServer({ limit: 600, interval: 60_000, phase: "random", seed, headers: [] }), 10, [{ min: 20, max: 80 }], 0.95],
    ] as const;
    for (const [name, make, realRate, latencies, share] of cases) {
      for (const latency of latencies) {
        for (const seed of [1, 2, 3]) {
          const r = await simulate({ server: make(seed), realRate, callers: 10, duration: 1_800_000, latency, seed, viaFetch: true, from: 60_000 });
          console.info(`${name}, no Retry-After, latency ${latency.min}–${latency.max} ms, seed ${seed}: ${figures(r)}`);
          expect(r.utilisation).toBeGreaterThanOrEqual(share);
          expect(r.share429).toBeLessThanOrEqual(0.19);
          expect(r.steady429).toBeLessThanOrEqual(0.03);
          // The window was inferred from a run (60 s, or a run nearly as long), not left at the probe step.
          expect(r.limiters[0]!.controller.step).toBeGreaterThanOrEqual(30_000);
        }
      }
    }
  });

  test("one run of bare 429s (a storm at startup, an outage) is no window: the rate is back within a minute, the probe step stays 1 s", async () => {
    // Review (2026-11-27): the first version read any run of 2 s or more as the server's window; a
    // 20-s storm then held a 10/s token bucket near 1/s for minutes (9–15 % of its rate after the
    // storm, probe step 16–50 s). A window shows itself again: it is read from a second run on.
    // The second review: an outage and a later short run must not confirm each other either (a
    // 3-s blip at startup and a 60-s outage at 10 min gave a 40–54-s step and 1–3/s for minutes).
    for (const c of [
      { name: "20-s storm at startup, told 50/s", outages: [[0, 20_000]], adaptive: { maxRate: 50 }, share: 0.9 },
      { name: "20-s storm at startup, told nothing", outages: [[0, 20_000]], adaptive: {}, share: 0.75 },
      { name: "60-s outage at 60 s, told nothing", outages: [[60_000, 60_000]], adaptive: {}, share: 0.85 },
      { name: "3-s blip at startup, 60-s outage at 10 min", outages: [[0, 3000], [600_000, 60_000]], adaptive: {}, share: 0.85 },
    ]) {
      for (const seed of [1, 2, 3]) {
        const bucket = new TokenBucketServer({ limit: 10, headers: [] });
        const h = resolveHeaders({ headers: [] });
        const down = (now: number) => c.outages.find(([at, len]) => now >= at! && now < at! + len!);
        const server: ServerModel = {
          decide: (now: number, cost?: number) => {
            const outage = down(now);
            return outage !== undefined
              ? decision(h, now, { allowed: false, retryAfterMs: outage[0]! + outage[1]! - now, limit: 10, remaining: 0, resetMs: 1000, windowMs: 1000 })
              : bucket.decide(now, cost);
          },
        };
        const last = c.outages.at(-1)!;
        const end = last[0]! + last[1]!;
        const r = await simulate({ server, realRate: 10, callers: 50, duration: end + 240_000, adaptive: c.adaptive, from: end, seed });
        console.info(`${c.name}, then a 10/s token bucket, seed ${seed}: ${figures(r)}`);
        expect(r.limiters[0]!.controller.step).toBe(1000);
        expect(r.utilisation).toBeGreaterThanOrEqual(c.share);
        expect(r.acceptedRate(end + 60_000, end + 240_000)).toBeGreaterThanOrEqual(9);
      }
    }
  });

  test("windows that state their policy and remaining quota (RateLimit-Policy + RateLimit): no 429, but 71–97 % of the rate (pinned: a known cost)", async () => {
    // Red-team, 2026-11-27: the remaining quota is a snapshot, and every request sent after it is
    // counted as spending it, with the refill counted only from now — on a window that frees slots
    // all the time (a sliding log), and with long latency, the client pauses for room that is there.
    // A policy stated without `RateLimit` gets the full rate (see redteam.test.ts).
    const utilisation: Record<string, number[]> = {};
    for (const [kind, make] of [
      ["sliding log", () => new SlidingLogServer({ limit: R, headers: ["ietf", "retry-after"] })],
      ["fixed window", () => new FixedWindowServer({ limit: R, phase: 0, headers: ["ietf", "retry-after"] })],
    ] as const) {
      for (const latency of [{ min: 20, max: 80 }, { min: 0, max: 2000 }]) {
        const r = await simulate({ server: make(), realRate: R, callers: 30, duration: 120_000, latency, seed: 1 });
        console.info(`${kind} stating policy + remaining, latency ${latency.min}–${latency.max} ms: ${figures(r)}`);
        expect(r.throttled).toBe(0);
        (utilisation[kind] ??= []).push(r.utilisation);
      }
    }
    expect(Math.min(...utilisation["sliding log"]!)).toBeGreaterThanOrEqual(0.7);
    expect(Math.max(...utilisation["sliding log"]!)).toBeLessThan(0.95);
    expect(Math.min(...utilisation["fixed window"]!)).toBeGreaterThanOrEqual(0.8);
  });

  test("a virtual hour (2 req/s, 10 callers) runs in virtual time", async () => {
    const started = performance.now();
    const r = await simulate({ server: new SlidingLogServer({ limit: 2 }), realRate: 2, callers: 10, duration: 3_600_000 });
    console.info(`virtual hour: ${figures(r)} in ${(performance.now() - started).toFixed(0)} ms`);
    expect(r.steady429).toBeLessThanOrEqual(0.01);
    expect(r.utilisation).toBeGreaterThanOrEqual(0.75);
  });
});

/**
 * The benchmark's scenarios (`npm run bench:adaptive`) in virtual time, through the wiring users get
 * (`createThrottledFetch({ adaptive })`, retries included): 20 req/s servers, 20 closed-loop
 * callers, latency 20–80 ms, 30 s, utilisation counted from 10 s. The targets of issue 11, asserted
 * as they are stated: ≤ 3 % 429s, ≥ 90 % of the server's rate, 90 % of it reached within 10 s, ≤ 1 %
 * 429s in the second half; told right, nothing refused.
 */
const B = 20;
const benchServers: Record<string, () => ServerModel> = {
  "strict rolling window": () => new SlidingLogServer({ limit: B, headers: ["retry-after"] }),
  "fixed window, unknown phase": () => new FixedWindowServer({ limit: B, phase: "random", seed: 7, headers: ["retry-after"] }),
  "nginx limit_req burst 5 nodelay": () => new LeakyBucketServer({ rate: B, burst: 5, nodelay: true, status: 429 }),
  "token bucket": () => new TokenBucketServer({ limit: B }),
};
/**
 * Where a scenario misses a target, the figure measured over the seeds (a pin, not a target):
 * - told nothing, a fixed window: 90 % of the rate at 11 s, not 10;
 * - told 2× too much, a fixed window: 89–91 % of the rate (the cut lands in a window of unknown
 *   phase). The first window's burst, once 2.9–5.2 % 429s here, is gone: until the server has
 *   accepted a second's worth at the told limit, adaptive paces it evenly (see
 *   `AdaptiveController.confirmed`), so 1.0–2.1 % now, and told right against nginx `limit_req`
 *   with burst 5 no 429 at all (was 2.8 %, 81–83 % of the rate).
 */
const benchMisses: Record<string, { share429?: number; steady429?: number; utilisation?: number; reached?: number }> = {
  "told nothing / fixed window, unknown phase": { reached: 11 },
  "told 2× too much / fixed window, unknown phase": { utilisation: 0.88 },
};
const bench = (server: () => ServerModel, maxRate: number | undefined, seed: number) =>
  simulate({ server: server(), realRate: B, callers: 20, duration: 30_000, latency: { min: 20, max: 80 }, adaptive: { maxRate }, seed, viaFetch: true });

describe.each([
  ["told nothing", undefined],
  ["told 2× too much", 2 * B],
  ["told right", B],
])("bench scenario in virtual time, %s (20 req/s, 20 callers, 30 s, seeds 1–3)", (label, maxRate) => {
  test.each(Object.keys(benchServers))("%s: on target", async (kind) => {
    const runs: SimResult[] = [];
    for (const seed of [1, 2, 3]) runs.push(await bench(benchServers[kind]!, maxRate, seed));
    const pct = (f: (r: SimResult) => number) => runs.map((r) => +(100 * f(r)).toFixed(1)).join("/");
    console.info(`bench ${label} / ${kind}: 429 ${pct((r) => r.share429)} %, steady ${pct((r) => r.steady429)} %, ` +
      `utilisation ${pct((r) => r.utilisation)} %, 90 % at ${runs.map((r) => r.reached90At).join("/")} s`);
    for (const r of runs) {
      for (const l of r.limiters) expect(l.rate).toBeLessThanOrEqual(maxRate ?? Infinity);
      if (maxRate === B) {
        // Told right: no change from today — nothing refused, the window limiter's full rate (and
        // against nginx with burst 5, where the told window's burst drew 429s, none now).
        expect(r.throttled).toBe(0);
        expect(r.utilisation).toBeGreaterThanOrEqual(0.94);
        continue;
      }
      const miss = benchMisses[`${label} / ${kind}`] ?? {};
      expect(r.share429).toBeLessThanOrEqual(miss.share429 ?? 0.03);
      expect(r.steady429).toBeLessThanOrEqual(miss.steady429 ?? 0.01);
      expect(r.utilisation).toBeGreaterThanOrEqual(miss.utilisation ?? 0.9);
      expect(r.reached90At).toBeLessThanOrEqual(miss.reached ?? 10);
    }
  });
});
