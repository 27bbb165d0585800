/**
 * Refusals at random (noise) against the adaptive rate, in virtual time through the fetch, the
 * server's own log as the judge. An outside red team (2026-11-27) found that 1 % of bare 429s against
 * no limit at all dragged the learned rate down for good: 400/s of demand held at 1–2/s. Refusals
 * that come alone, cut after cut dragging the rate down, are now read as noise (`LoneRefusals`); the
 * limits that drop, and the servers that refuse in earnest, must never be read so.
 */
import { describe, expect, test } from "vitest";
import { LeakyBucketServer } from "../../src/testing/leaky-bucket.ts";
import { TokenBucketServer } from "../../src/testing/token-bucket.ts";
import { decision, resolveHeaders, type ServerModel } from "../../src/testing/decision.ts";
import { SeededRandom } from "../../src/testing.ts";
import { describe as figures, simulate } from "./simulation.ts";

/** `inner`, but a share `p` of the requests (drawn with `seed`) refused with a bare `status`. */
function noisy(inner: ServerModel, p: number, seed: number, status = 429): ServerModel {
  const random = new SeededRandom(seed);
  const refusal = resolveHeaders({ headers: [], status });
  return {
    decide: (now, cost) =>
      random.next() < p
        ? decision(refusal, now, { allowed: false, retryAfterMs: 0, limit: 1, remaining: 0, resetMs: 1000, windowMs: 1000 })
        : inner.decide(now, cost),
  };
}

/** No limit at all: every request accepted, no headers. */
const unlimited: ServerModel = {
  decide: (now) => decision(resolveHeaders({ headers: [] }), now, { allowed: true, retryAfterMs: 0, limit: 1e9, remaining: 1e9, resetMs: 0, windowMs: 1000 }),
};

/** `make(limit)` for each stretch: the limit from each `[at, limit]` on. */
function stepped(make: (limit: number) => ServerModel, steps: readonly (readonly [number, number])[]): ServerModel {
  const servers = steps.map(([at, limit]) => [at, make(limit)] as const);
  return { decide: (now, cost) => servers.findLast(([at]) => now >= at)![1].decide(now, cost) };
}

describe("refusals at random are noise, not a limit", () => {
  test("no limit, 1 % of bare 429s or 503s at random, 10 callers at ~100 ms: the rate is not dragged down (64–80/s of ~100/s demand in minutes 4–6; 2.4–4.1/s before)", async () => {
    const runs: [number, number][] = [[429, 1], [429, 2], [429, 3], [503, 1]];
    for (const [status, seed] of runs) {
      const r = await simulate({ server: noisy(unlimited, 0.01, seed, status), realRate: 100, callers: 10, duration: 360_000, latency: { min: 80, max: 120 }, seed, viaFetch: true, from: 240_000 });
      const rate = r.acceptedRate(240_000, 360_000);
      console.info(`no limit, 1 % bare ${status}s at random, seed ${seed}: ${rate.toFixed(1)}/s accepted in minutes 4–6, ${figures(r)}`);
      expect(r.limiters[0]!.controller.noisy).toBe(true);
      expect(rate).toBeGreaterThanOrEqual(60);
      // The refusals are the server's 1 %: the client adds none of its own.
      expect(r.share429).toBeLessThanOrEqual(0.012);
    }
  });

  test("a 10/s token bucket behind 1 % of bare 429s at random, 15 min: found noisy on every seed, 37–93 % of the rate from minute 2 (30–63 % before)", async () => {
    const utilisation: number[] = [];
    for (const seed of [1, 2, 3]) {
      const r = await simulate({ server: noisy(new TokenBucketServer({ limit: 10, headers: [] }), 0.01, seed), realRate: 10, callers: 30, duration: 900_000, latency: { min: 20, max: 80 }, seed, viaFetch: true, from: 120_000 });
      console.info(`10/s token bucket + 1 % bare 429s, seed ${seed}: ${figures(r)}`);
      expect(r.limiters[0]!.controller.noisy).toBe(true);
      expect(r.steady429).toBeLessThanOrEqual(0.02);
      utilisation.push(r.utilisation);
    }
    // Pinned: at a few requests a second the refusals that show noise come minutes apart, and a
    // limit's own refusals end each sequence of them (seed 2 is found only after 11 minutes).
    expect(Math.min(...utilisation)).toBeGreaterThanOrEqual(0.35);
    expect(utilisation.reduce((a, b) => a + b, 0) / utilisation.length).toBeGreaterThanOrEqual(0.7);
  });
});

describe("limits are never read as noise", () => {
  const tokenBucket = (limit: number): ServerModel => new TokenBucketServer({ limit, headers: [] });
  const nginx = (rate: number): ServerModel => new LeakyBucketServer({ rate, status: 429 });
  const declining = Array.from({ length: 15 }, (_, i) => [i * 20_000, Math.round(20 * 0.95 ** i)] as const);
  test.each([
    ["a bare token bucket lowered 20 → 10 → 5/s (at 1 and 2 min)", () => stepped(tokenBucket, [[0, 20], [60_000, 10], [120_000, 5]]), 5, 300_000, { min: 20, max: 80 }, 150_000, true, 0.95, 0.015],
    ["a bare token bucket lowered 5 % every 20 s (20 → 10/s)", () => stepped(tokenBucket, declining), 10, 300_000, { min: 20, max: 80 }, 280_000, true, 0.95, 0.015],
    ["nginx limit_req (429, no burst) lowered 5 % every 20 s, latency 0–2 s", () => stepped(nginx, declining), 10, 300_000, { min: 0, max: 2000 }, 280_000, false, 0.85, 0.02],
    ["nginx limit_req (429, no burst) at 10/s, latency 0–2 s, 30 min", () => nginx(10), 10, 1_800_000, { min: 0, max: 2000 }, 60_000, false, 0.9, 0.01],
  ] as const)("%s", async (_name, make, realRate, duration, latency, from, viaFetch, share, steady) => {
    for (const seed of [1, 2]) {
      const r = await simulate({ server: make(), realRate, callers: 30, duration, latency, seed, viaFetch, from });
      console.info(`${_name}, seed ${seed}: ${figures(r)}`);
      expect(r.limiters[0]!.controller.noisy).toBe(false);
      expect(r.utilisation).toBeGreaterThanOrEqual(share);
      // As before noise was told apart (the same figures: these runs never reach it).
      expect(r.steady429).toBeLessThanOrEqual(steady);
    }
  });
});
