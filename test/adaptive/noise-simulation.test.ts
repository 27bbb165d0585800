/**
 * Refusals at random (noise) against the adaptive rate, in virtual time through the fetch, the
 * server's own log as the judge. Pinned as measured: a known weakness (README, "Adaptive rate").
 *
 * An outside red team (2026-11-27) found that 1 % of bare 429s against no limit at all drag the
 * learned rate down for good: each cuts, and a cut at or below the rate believed to work lowers that
 * belief. Reading refusals that come alone, cut after cut, as noise was built and withdrawn the same
 * night: it gave 64–80/s here, but a second red team showed several processes sharing one bare quota
 * read each other's growth the same way — keys turned "noisy", the server saw 2–3× the 429s, and
 * some processes were starved to 0–2 % of the quota. No client-side signal told the two apart.
 */
import { expect, test } from "vitest";
import { decision, resolveHeaders, type ServerModel } from "../../src/testing/decision.ts";
import { SeededRandom } from "../../src/testing.ts";
import { describe as figures, simulate } from "./simulation.ts";

/** `inner`, but a share `p` of the requests (drawn with `seed`) refused with a bare 429. */
function noisy(inner: ServerModel, p: number, seed: number): ServerModel {
  const random = new SeededRandom(seed);
  const refusal = resolveHeaders({ headers: [] });
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

test("no limit, 1 % of bare 429s at random, 10 callers at ~100 ms: the rate is dragged down to 2–4/s of ~100/s demand (pinned: a known weakness)", async () => {
  const rates: number[] = [];
  for (const seed of [1, 2, 3]) {
    const r = await simulate({ server: noisy(unlimited, 0.01, seed), realRate: 100, callers: 10, duration: 360_000, latency: { min: 80, max: 120 }, seed, viaFetch: true, from: 240_000 });
    const rate = r.acceptedRate(240_000, 360_000);
    console.info(`no limit, 1 % bare 429s at random, seed ${seed}: ${rate.toFixed(1)}/s accepted in minutes 4–6, ${figures(r)}`);
    rates.push(rate);
  }
  // Pinned at today's figures (2.4–4.1/s): a change that handles noise fails here and updates the README.
  expect(Math.max(...rates)).toBeLessThan(6);
  expect(Math.min(...rates)).toBeGreaterThan(1.5);
});
