/**
 * Regressions from a red-team pass over `adaptive` (2026-11-27): each failed before its fix.
 */
import { expect, test } from "vitest";
import { AdaptiveRates, createThrottledFetch, ManualClock, WindowLimiter } from "../../src/index.ts";
import { AdaptiveLimiter } from "../../src/adaptive/limiter.ts";
import { createSimulatedFetch, LeakyBucketServer, serveModel, SlidingLogServer } from "../../src/testing.ts";

/** A simulated API that accepts everything, 30 ms away. */
function openApi(clock: ManualClock) {
  return createSimulatedFetch({ server: { handle: () => ({ status: 200 }) }, clock, latency: 30 });
}

test("a told limit below the default floor (50 an hour, 1 per 2 minutes, 10 a day) or above 1e6/s works, and is never exceeded", async () => {
  const cases: [string, (clock: ManualClock) => Record<string, unknown>, number][] = [
    ["50 an hour", () => ({ limit: 50, interval: 3_600_000 }), 50 / 3600],
    ["1 per 2 minutes", () => ({ limit: 1, interval: 120_000 }), 1 / 120],
    ["a WindowLimiter of 10 a day", (clock) => ({ limiter: new WindowLimiter({ limit: 10, interval: 86_400_000, clock }) }), 10 / 86_400],
    ["2e6 a second", () => ({ limit: 2_000_000, interval: 1000 }), 1e6],
  ];
  for (const [name, told, ceiling] of cases) {
    const clock = new ManualClock();
    const fetch = openApi(clock);
    const rates = new AdaptiveRates({ clock, wallClock: () => clock.now() });
    const api = createThrottledFetch({ adaptive: rates, ...told(clock), fetch, clock, wallClock: () => clock.now() });
    // Before: every call rejected with "`minRate` must be at most `maxRate`" (or `maxRate` above 1e6).
    const statuses = Promise.all([api("https://a.example/1"), api("https://a.example/2")].map((p) => p.then((r) => r.status)));
    await clock.runAll(10_000);
    expect(await statuses, name).toEqual([200, 200]);
    expect(rates.rate("https://a.example"), name).toBeLessThanOrEqual(ceiling);
  }
  // The same through setLimit on a limiter of its own: the told limit is kept, not refused.
  const limiter = new AdaptiveLimiter({ clock: new ManualClock() });
  limiter.setLimit({ limit: 1, interval: 3_600_000 });
  expect(limiter.rate).toBeCloseTo(1 / 3600, 10);
  limiter.setLimit({ limit: 2e6 });
  expect(limiter.rate).toBe(1e6);
});

test("an onChange that throws fails the call whose answer made the change — no request is sent again", async () => {
  const clock = new ManualClock();
  const fetch = openApi(clock);
  let changes = 0;
  const api = createThrottledFetch({
    adaptive: { onChange: () => { changes++; throw new Error("boom in onChange"); } }, fetch, clock, wallClock: () => clock.now(),
  });
  const outcomes: string[] = [];
  const callers = Array.from({ length: 10 }, async () => {
    for (let i = 0; i < 10; i++) {
      try {
        const response = await api("https://a.example/");
        await response.arrayBuffer();
        outcomes.push(String(response.status));
      } catch (error) {
        outcomes.push((error as Error).message);
      }
    }
  });
  await clock.runAll(100_000);
  await Promise.all(callers);
  expect(changes).toBeGreaterThan(0);
  // Before: 108 requests reached the server for 100 calls (the throw was taken for a failed attempt).
  expect(fetch.stats.requests).toBe(100);
  expect(outcomes.filter((o) => o === "boom in onChange")).toHaveLength(changes);
  expect(outcomes.filter((o) => o === "200")).toHaveLength(100 - changes);
});

test("reading a key's rate or last change is a look, not a use: an idle key is still forgotten", async () => {
  const clock = new ManualClock();
  const fetch = openApi(clock);
  const rates = new AdaptiveRates({ clock, wallClock: () => clock.now() });
  const api = createThrottledFetch({ adaptive: rates, fetch, clock, wallClock: () => clock.now() });
  const hosts = ["https://a.example", "https://b.example", "https://c.example"];
  const calls = Promise.all(hosts.map((h) => api(`${h}/`).then((r) => r.arrayBuffer())));
  await clock.advance(1000);
  await calls;
  for (let minute = 0; minute < 30; minute++) {
    await clock.advance(60_000);
    for (const h of hosts) expect(rates.rate(h)).toBeGreaterThan(0); // a dashboard, every minute
    for (const h of hosts) rates.lastChange(h);
  }
  expect(rates.prune()).toBe(3); // before: 0, every read counted as a use
  expect(rates.rate(hosts[0]!)).toBeUndefined();
});

test("LeakyBucketServer states its sustained rate in its headers, and an adaptive client told nothing reaches it", async () => {
  const server = new LeakyBucketServer({ rate: 10, headers: ["ietf"] });
  // Before: q=1;w=1 (burst + 1 per interval), one tenth of the real rate.
  expect(server.decide(0).headers["ratelimit-policy"]).toBe('"default";q=10;w=1');
  const clock = new ManualClock();
  const fetch = createSimulatedFetch({ server: serveModel(new LeakyBucketServer({ rate: 10, burst: 2, nodelay: true, status: 429, headers: ["ietf"] })), clock, latency: { min: 20, max: 80 } });
  const api = createThrottledFetch({ adaptive: true, fetch, clock, wallClock: () => clock.now() });
  let accepted = 0;
  const callers = Array.from({ length: 10 }, async () => {
    while (clock.now() < 60_000) {
      const response = await api("https://a.example/");
      if (response.status === 200) accepted++;
      await response.arrayBuffer();
    }
  });
  await clock.runAll(1_000_000);
  await Promise.all(callers);
  expect(accepted / 60).toBeGreaterThan(9); // before: 1 a second
});

test("adaptive options: an array or a null value is refused, naming the option", () => {
  expect(() => createThrottledFetch({ adaptive: [] as never })).toThrow(new TypeError("`adaptive` must be an object, got an array"));
  expect(() => createThrottledFetch({ adaptive: { decrease: null } as never })).toThrow(new TypeError("`decrease` must be a number, got null"));
  expect(() => new AdaptiveLimiter({ minRate: null } as never)).toThrow(TypeError);
  expect(() => new SlidingLogServer([] as never)).toThrow(TypeError);
});

test("a RateLimit-Policy stated alone (no RateLimit field) is the rate and the ceiling: no probing above it", async () => {
  const { FixedWindowServer } = await import("../../src/testing.ts");
  const clock = new ManualClock();
  const model = new FixedWindowServer({ limit: 10, phase: 0, headers: ["ietf", "retry-after"] });
  const server = {
    handle(_request: Request, { now }: { now: number }) {
      const d = model.decide(now, 1);
      const headers: Record<string, string> = { ...d.headers };
      delete headers["ratelimit"]; // the policy only: RateLimit-Policy: "default";q=10;w=1
      return { status: d.status, headers };
    },
  };
  const fetch = createSimulatedFetch({ server, clock, latency: { min: 20, max: 80 }, seed: 1 });
  let highest = 0;
  const rates = new AdaptiveRates({ clock, wallClock: () => clock.now(), onChange: (c) => void (highest = Math.max(highest, c.rate)) });
  const api = createThrottledFetch({ adaptive: rates, fetch, clock, wallClock: () => clock.now() });
  const callers = Array.from({ length: 30 }, async () => {
    while (clock.now() < 120_000) await (await api("https://a.example/")).arrayBuffer();
  });
  await clock.runAll(Infinity);
  await Promise.all(callers);
  // Before: the policy was ignored without a RateLimit field; slow start reached 16/s, 4 × 429.
  expect(highest).toBe(10);
  expect(fetch.stats.byStatus[429] ?? 0).toBe(0);
});

test("parseRateLimitPolicy: the most restrictive policy that states a quota and a window", async () => {
  const { parseRateLimitPolicy } = await import("../../src/http/ratelimit-headers.ts");
  const read = (value: string) => parseRateLimitPolicy(new Headers({ "ratelimit-policy": value }));
  expect(read('"burst";q=100;w=60, "day";q=1000;w=86400')).toEqual({ limit: 1000, windowMs: 86_400_000 });
  expect(read('"default";q=10;w=1;qu="requests"')).toEqual({ limit: 10, windowMs: 1000, quotaUnit: "requests" });
  expect(read("10;w=1, 100;w=60")).toEqual({ limit: 100, windowMs: 60_000 }); // draft-07 items
  // A quota of another unit is not a request rate: the request policy beside it is the one (review, 2026-11-27).
  expect(read('"req";q=10;w=1, "bytes";q=5;w=1;qu="content-bytes"')).toEqual({ limit: 10, windowMs: 1000 });
  expect(read('"nowindow";q=10')).toBeUndefined();
  expect(read('"zero";q=0;w=1')).toBeUndefined();
  expect(read("not a list(")).toBeUndefined();
  expect(parseRateLimitPolicy(new Headers({ "ratelimit-policy": '"d";q=10;w=1', age: "3" }))).toBeUndefined(); // from a cache
});
