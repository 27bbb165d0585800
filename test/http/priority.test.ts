/**
 * Priorities in the throttled fetch: `init.priority` and the `priority(request)` option reach the
 * limiter's queue (virtual time).
 */
import { expect, test } from "vitest";
import { combine, createThrottledFetch, ManualClock, SmoothLimiter } from "../../src/index.ts";

function setup(priority?: (request: Request) => number, named = false) {
  const clock = new ManualClock();
  const rate = new SmoothLimiter({ limit: 10, interval: 1000, clock });
  const sent: string[] = [];
  const api = createThrottledFetch({
    limiter: named ? combine({ requests: rate }) : rate,
    fetch: async (input) => (sent.push(new URL(String(input)).pathname), new Response("ok")),
    ...(priority && { priority }),
    ...(named && { cost: { requests: 1 } }),
  });
  return { api, clock, sent };
}

test("init.priority: 'high' goes before the default, 'low' after it; FIFO within a priority", async () => {
  const { api, clock, sent } = setup();
  const calls = [
    api("https://x.test/first"),
    api("https://x.test/low", { priority: "low" }),
    api("https://x.test/auto", { priority: "auto" }),
    api("https://x.test/high1", { priority: "high" }),
    api("https://x.test/high2", { priority: "high" }),
  ];
  await clock.runAll();
  await Promise.all(calls);
  expect(sent).toEqual(["/first", "/high1", "/high2", "/auto", "/low"]);
});

test("priority(request) overrides init.priority, also for reservations (cost)", async () => {
  for (const named of [false, true]) {
    const { api, clock, sent } = setup((r) => (r.headers.get("x-vip") === "1" ? 5 : 0), named);
    const calls = [
      api("https://x.test/first"),
      api("https://x.test/plain", { priority: "high" }), // ignored: the function decides
      api("https://x.test/vip", { headers: { "x-vip": "1" } }),
    ];
    await clock.runAll();
    await Promise.all(calls);
    expect(sent).toEqual(["/first", "/vip", "/plain"]);
  }
});

test("a priority function returning a non-number rejects the call, naming the option", async () => {
  const { api } = setup(() => "high" as unknown as number);
  await expect(api("https://x.test/")).rejects.toThrow(new TypeError('`priority` must return a finite number, got "high"'));
});
