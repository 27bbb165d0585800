/**
 * The retry budget's bound, retries ≤ reserve + ratio × calls, holds for calls made at once too — and
 * is reached: before, the deposits of 200 concurrent calls were cut to the reserve (10 retries).
 */
import { expect, test } from "vitest";
import { createThrottledFetch, ManualClock } from "../../src/index.ts";

test("200 calls made at once against a failing server retry 10 + 0.2 × 200 of them, as the README's bound says", async () => {
  for (const calls of [200, 2000]) {
    const clock = new ManualClock();
    const seen = new Set<string>();
    let requests = 0;
    // Each URL fails once (500), then succeeds: every call wants one retry.
    const fetch = async (input: RequestInfo | URL) => {
      requests++;
      const url = String(input instanceof Request ? input.url : input);
      if (seen.has(url)) return new Response("ok");
      seen.add(url);
      return new Response("down", { status: 500 });
    };
    const api = createThrottledFetch({ fetch, clock, limit: 1e6, interval: 1000 });
    const done = Promise.all(Array.from({ length: calls }, (_, i) => api(`https://api.example.com/items/${i}`).then((r) => r.status)));
    const statuses = await clock.runUntil(done, 600_000);
    const retries = requests - calls;
    expect(retries, `${calls} calls`).toBe(10 + 0.2 * calls);
    expect(statuses.filter((s) => s === 200).length).toBe(retries);
  }
});

test("a total outage answered '503 Retry-After: 0' (or a 429 with 0) spends the budget: nothing was paused, so nothing else bounds the retries (2,000 callers sent 6,000 requests)", async () => {
  for (const [status, retryAfter] of [[503, "0"], [429, "0"], [503, "0.001"]] as const) {
    const clock = new ManualClock();
    let requests = 0;
    const fetch = async () => {
      requests++;
      return new Response("down", { status, headers: { "retry-after": retryAfter } });
    };
    const api = createThrottledFetch({ fetch, clock, limit: 1e6, interval: 1000 });
    await clock.runUntil(Promise.all(Array.from({ length: 2000 }, () => api("https://api.example.com/").then((r) => r.body?.cancel()))), 1e9);
    expect(requests - 2000, `${status} Retry-After: ${retryAfter}`).toBe(10 + 0.2 * 2000);
  }
});

test("the ratio is rounded down to a millionth, never up: two calls at 0.4999997 earn no retry (the bound allows 0.9999994)", async () => {
  const { RetryBudget } = await import("../../src/index.ts");
  const budget = new RetryBudget({ ratio: 0.4999997, reserve: 0 });
  budget.deposit();
  budget.deposit();
  expect(budget.tryWithdraw()).toBe(false);
  budget.deposit(); // 1.4999991: one retry now
  expect(budget.tryWithdraw()).toBe(true);
  expect(budget.tryWithdraw()).toBe(false);
});

test("a ratio that is a whole number of millionths keeps it, float error aside: 0.0157 × 10,000 calls in progress earn 157 retries, not 156 (review, 2026-11-27)", async () => {
  const { RetryBudget } = await import("../../src/index.ts");
  for (const [ratio, retries] of [[0.0157, 157], [0.2512, 2512], [0.1251, 1251], [0.2, 2000]] as const) {
    const budget = new RetryBudget({ ratio, reserve: 0 });
    const ends = Array.from({ length: 10_000 }, () => budget.start());
    let granted = 0;
    while (budget.tryWithdraw()) granted++;
    expect({ ratio, granted }).toEqual({ ratio, granted: retries });
    for (const end of ends) end();
  }
});
