/**
 * A retry keeps its place: a retried attempt queues at its call's first arrival, not behind every
 * caller that arrived since (virtual time).
 */
import { expect, test } from "vitest";
import { createThrottledFetch, ManualClock, SmoothLimiter } from "../../src/index.ts";

async function completionOfRetried(later: number): Promise<number> {
  const clock = new ManualClock();
  const limiter = new SmoothLimiter({ limit: 10, interval: 1000, clock }); // one per 100 ms
  let first = true;
  const api = createThrottledFetch({
    limiter,
    fetch: async (input) => {
      if (String(input).endsWith("/flaky") && first) {
        first = false;
        return new Response("busy", { status: 503 }); // no Retry-After: our backoff (0 with random 0)
      }
      return new Response("ok");
    },
    random: () => 0,
    retry: { limit: 1, budget: false },
  });
  let doneAt = -1;
  const call = api("https://api.test/flaky").then(() => (doneAt = clock.now()));
  const others = Array.from({ length: later }, (_, i) => api(`https://api.test/other/${i}`));
  await clock.runAll();
  await Promise.all([call, ...others]);
  return doneAt;
}

test("a retried call completes at the same time with or without 500 later arrivals queued", async () => {
  const alone = await completionOfRetried(0);
  const crowded = await completionOfRetried(500);
  expect(alone).toBe(100); // first attempt at 0 (503), retry at the next slot
  expect(crowded).toBe(100); // before: 50 100 — behind the 500 that arrived after it
});

test("a retry behind earlier callers still waits for them (FIFO by arrival), and takes permits", async () => {
  const clock = new ManualClock();
  const limiter = new SmoothLimiter({ limit: 10, interval: 1000, clock });
  const sent: Array<[number, string]> = [];
  let failed = false;
  const api = createThrottledFetch({
    limiter,
    fetch: async (input) => {
      const path = new URL(String(input)).pathname;
      sent.push([clock.now(), path]);
      if (path === "/b" && !failed) {
        failed = true;
        return new Response("busy", { status: 503 });
      }
      return new Response("ok");
    },
    random: () => 0,
    retry: { limit: 1, budget: false },
  });
  const calls = ["/a", "/b", "/c", "/d"].map((p) => api(`https://api.test${p}`));
  await clock.runAll();
  await Promise.all(calls);
  // b (sent at 100) is retried in b's place: after a (done), before c and d.
  expect(sent).toEqual([[0, "/a"], [100, "/b"], [200, "/b"], [300, "/c"], [400, "/d"]]);
});
