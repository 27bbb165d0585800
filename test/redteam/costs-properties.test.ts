/**
 * Red team (costs): seeded random sequences of reserve/acquire/settle/cancel on each limiter, checked
 * against this file's own conformance models of what was ACTUALLY used (a settled reservation counts
 * its actual cost at its grant time — as if it had reserved that — and only debt counts at the settle):
 * - WindowLimiter: with no settle above its reservation, actual use in any rolling window ≤ limit
 *   (README: "what was actually used never exceeds `limit` in any window while nobody goes over
 *   their reservation").
 * - FixedWindowLimiter: the same per fixed window.
 * - SmoothLimiter: the actual use conforms to the token bucket (rate limit/interval, `burst` stored)
 *   that the limiter is — a refund never gives back more than exact.
 * Each property counts the refunds it made, so it is known to reach the settle branch.
 */
import { describe, expect, test } from "vitest";
import { FixedWindowLimiter, ManualClock, type Reservation, SmoothLimiter, WindowLimiter } from "../../src/index.ts";

/** mulberry32: own seeded generator. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Use { at: number; amount: number; seq: number; grant: boolean }

/**
 * Runs a random scenario: callers arrive at random times and reserve 1..maxAsk; each granted
 * reservation is settled (to 0..reserved, or above it when `debt`) or cancelled after a random delay,
 * or never (counted as reserved). Returns the actual uses.
 */
async function scenario(limiter: { reserve(n: number): Promise<Reservation> }, clock: ManualClock, random: () => number, o: { maxAsk: number; debt: boolean; span: number; calls: number }) {
  const uses: Use[] = [];
  let refunds = 0;
  let debts = 0;
  const pending: Array<Promise<void>> = [];
  let seq = 0;
  for (let i = 0; i < o.calls; i++) {
    const at = Math.floor(random() * o.span);
    const ask = 1 + Math.floor(random() * o.maxAsk);
    const hold = Math.floor(random() * 500);
    const fate = random();
    const actualDraw = random();
    pending.push(new Promise<void>((resolve) => {
      clock.setTimeout(() => {
        void limiter.reserve(ask).then((r) => {
          const grantedAt = clock.now();
          const grantSeq = seq++;
          clock.setTimeout(() => {
            if (fate < 0.1) {
              uses.push({ at: grantedAt, amount: ask, seq: grantSeq, grant: true }); // never settled: counts in full
            } else if (fate < 0.2) {
              r.cancel();
              uses.push({ at: grantedAt, amount: 0, seq: grantSeq, grant: true });
              refunds++;
            } else if (o.debt && fate > 0.85) {
              const actual = ask + 1 + Math.floor(actualDraw * 5);
              r.settle(actual);
              uses.push({ at: grantedAt, amount: ask, seq: grantSeq, grant: true }, { at: clock.now(), amount: actual - ask, seq: seq++, grant: false });
              debts++;
            } else {
              const actual = Math.floor(actualDraw * (ask + 1));
              r.settle(actual);
              if (actual < ask) refunds++;
              uses.push({ at: grantedAt, amount: actual, seq: grantSeq, grant: true });
            }
            resolve();
          }, hold);
        });
      }, at);
    }));
  }
  let finished = false;
  void Promise.all(pending).then(() => { finished = true; });
  for (let guard = 0; guard < 1000 && !finished; guard++) await clock.advance(1000);
  expect(finished).toBe(true);
  return { uses, refunds, debts };
}

describe("red team properties: refunds never let actual use exceed the limit", () => {
  test("WindowLimiter (limit 10 / 1000 ms): 200 seeds × 60 calls — no rolling window holds more than 10 actually used", async () => {
    let refunds = 0;
    for (let seed = 1; seed <= 200; seed++) {
      const clock = new ManualClock();
      const limiter = new WindowLimiter({ limit: 10, interval: 1000, clock });
      const r = await scenario(limiter, clock, rng(seed), { maxAsk: 6, debt: false, span: 5000, calls: 60 });
      refunds += r.refunds;
      const times = [...new Set(r.uses.map((u) => u.at))].sort((a, b) => a - b);
      for (const t of times) {
        // Window (t − 1000, t] ending at each use: what a sliding-log server counts.
        const inWindow = r.uses.filter((u) => u.at > t - 1000 && u.at <= t).reduce((s, u) => s + u.amount, 0);
        expect(inWindow, `seed ${seed}, window ending ${t}`).toBeLessThanOrEqual(10);
      }
    }
    expect(refunds).toBeGreaterThan(1000);
  });

  test("FixedWindowLimiter (limit 10 / 1000 ms): 200 seeds — no fixed window holds more than 10 actually used", async () => {
    let refunds = 0;
    for (let seed = 1; seed <= 200; seed++) {
      const clock = new ManualClock();
      const limiter = new FixedWindowLimiter({ limit: 10, interval: 1000, clock });
      const r = await scenario(limiter, clock, rng(seed), { maxAsk: 6, debt: false, span: 5000, calls: 60 });
      refunds += r.refunds;
      const byWindow = new Map<number, number>();
      for (const u of r.uses) byWindow.set(Math.floor(u.at / 1000), (byWindow.get(Math.floor(u.at / 1000)) ?? 0) + u.amount);
      for (const [w, n] of byWindow) expect(n, `seed ${seed}, window ${w}`).toBeLessThanOrEqual(10);
    }
    expect(refunds).toBeGreaterThan(1000);
  });

  for (const burst of [0, 5]) {
    test(`SmoothLimiter (10/s, burst ${burst}), refunds and debt: actual use conforms to the token bucket it describes (200 seeds)`, async () => {
      let refunds = 0;
      let debts = 0;
      for (let seed = 1; seed <= 200; seed++) {
        const clock = new ManualClock();
        const limiter = new SmoothLimiter({ limit: 10, interval: 1000, burst, clock });
        const r = await scenario(limiter, clock, rng(seed), { maxAsk: 4, debt: true, span: 8000, calls: 50 });
        refunds += r.refunds;
        debts += r.debts;
        // Token bucket with future debt: a grant needs a level ≥ 0 (nothing owed), then takes its
        // amount (the level may go negative); the level refills 1 per 100 ms up to `burst`, starting
        // at `burst` (initialPermits defaults to burst). Debt settles count at their own time.
        // A grant's reservation resolves in a later microtask than the grant itself, so grants at one
        // instant are ordered by when their promises resolved (seq): the grant order.
        const events = [...r.uses].sort((a, b) => a.at - b.at || a.seq - b.seq);
        let level = burst;
        let last = 0;
        for (let i = 0; i < events.length; i++) {
          const e = events[i]!;
          level = Math.min(burst, level + (e.at - last) / 100);
          last = e.at;
          if (e.grant) expect(level, `seed ${seed}, grant at ${e.at}`).toBeGreaterThanOrEqual(-1e-9);
          level -= e.amount;
        }
      }
      expect(refunds).toBeGreaterThan(500);
      expect(debts).toBeGreaterThan(200);
    });
  }
});
