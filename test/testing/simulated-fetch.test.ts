/**
 * The fetch adapter in virtual time, and sluice's throttled fetch run against simulated servers:
 * server-side outcomes asserted from what the server saw.
 */
import { describe, expect, test } from "vitest";
import { createThrottledFetch } from "../../src/http/throttled-fetch.ts";
import { WindowLimiter } from "../../src/limiters/window.ts";
import {
  createSimulatedFetch, FixedWindowServer, LeakyBucketServer, ManualClock, OpenAISimulator, serveModel, SlidingLogServer, TokenBucketServer,
} from "../../src/testing.ts";
import { track } from "../helpers.ts";

const URL_A = "https://api.example.com/items";

describe("createSimulatedFetch", () => {
  test("answers after the seeded latency, through the clock's timers; the same seed gives the same times", async () => {
    const times = async (seed: number) => {
      const clock = new ManualClock();
      const fetch = createSimulatedFetch({ server: serveModel(new SlidingLogServer({ limit: 100 })), clock, latency: { min: 10, max: 90 }, seed });
      const outcomes = Array.from({ length: 10 }, () => track(clock, fetch(URL_A)));
      await clock.runAll();
      expect(clock.pendingTimers).toBe(0);
      return outcomes.map((o) => o.at!);
    };
    const first = await times(7);
    expect(first.every((t) => t >= 10 && t <= 90)).toBe(true);
    expect(new Set(first).size).toBeGreaterThan(3);
    expect(await times(7)).toEqual(first);
    expect(await times(8)).not.toEqual(first);
  });

  test("counts what the server saw: statuses, max in flight, per-window counts, and holds nginx-delayed requests", async () => {
    const clock = new ManualClock();
    const fetch = createSimulatedFetch({ server: serveModel(new LeakyBucketServer({ rate: 1, burst: 2 })), clock, latency: 5 });
    const outcomes = Array.from({ length: 4 }, () => track(clock, fetch(URL_A)));
    await clock.runAll();
    expect(outcomes.map((o) => [o.at, (o.value as Response).status])).toEqual([[5, 200], [1005, 200], [2005, 200], [5, 503]]);
    expect(await (outcomes[3]!.value as Response).text()).toBe("Service Temporarily Unavailable");
    expect(fetch.stats).toMatchObject({ requests: 4, byStatus: { 200: 3, 503: 1 }, maxInFlight: 4, inFlight: 0, refused: 1 });
    expect(fetch.stats.perWindow(1000)).toEqual([{ start: 0, allowed: 3, refused: 1 }]);
    expect(fetch.stats.arrivals[0]).toEqual({ at: 0, method: "GET", path: "/items", status: 200 });
  });

  test("an abort before the request reaches the server: rejected with the reason, never counted, no timer left", async () => {
    const clock = new ManualClock();
    const fetch = createSimulatedFetch({ server: serveModel(new TokenBucketServer({ limit: 5 })), clock, requestLatency: 100 });
    const controller = new AbortController();
    const outcome = track(clock, fetch(URL_A, { signal: controller.signal }));
    await clock.advance(50);
    controller.abort(new Error("stop"));
    await clock.runAll();
    expect(outcome.error).toEqual(new Error("stop"));
    expect(fetch.stats.requests).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  test("an abort during the latency rejects with the signal's reason and leaves no timer", async () => {
    const clock = new ManualClock();
    const fetch = createSimulatedFetch({ server: serveModel(new TokenBucketServer({ limit: 5 })), clock, latency: 100 });
    const controller = new AbortController();
    const outcome = track(clock, fetch(URL_A, { signal: controller.signal }));
    await clock.advance(50);
    controller.abort(new Error("stop"));
    await clock.advance(0);
    expect(outcome.error).toEqual(new Error("stop"));
    expect(clock.pendingTimers).toBe(0);
    expect(fetch.stats.inFlight).toBe(0);
  });

  test("its responses look fetched: url, statusText, type, immutable headers (clones too), no body for HEAD (red-team, 2026-11-27)", async () => {
    const clock = new ManualClock();
    const fetch = createSimulatedFetch({ server: serveModel(new SlidingLogServer({ limit: 1, headers: ["retry-after"] })), clock });
    const ok = await clock.runUntil(fetch(`${URL_A}?page=2`));
    expect([ok.status, ok.statusText, ok.url, ok.type]).toEqual([200, "OK", `${URL_A}?page=2`, "basic"]);
    expect(() => ok.headers.set("x-mine", "1")).toThrow(TypeError);
    expect(() => ok.clone().headers.append("x-mine", "1")).toThrow(TypeError);
    expect(ok.clone().url).toBe(`${URL_A}?page=2`);
    const refused = await clock.runUntil(fetch(URL_A, { method: "HEAD" }));
    expect([refused.status, refused.statusText, refused.body]).toEqual([429, "Too Many Requests", null]);
    expect(refused.headers.get("retry-after")).not.toBeNull();
  });

  test("like fetch, refuses a Request whose body was read; a server answering 1xx gets a clear error (red-team, 2026-11-27)", async () => {
    const clock = new ManualClock();
    const fetch = createSimulatedFetch({ server: serveModel(new SlidingLogServer({ limit: 10 })), clock });
    const used = new Request(URL_A, { method: "POST", body: "x" });
    await used.text();
    await expect(fetch(used)).rejects.toThrow(new TypeError("Request body is already used"));
    const informational = createSimulatedFetch({ server: { handle: () => ({ status: 103 }) }, clock });
    await expect(clock.runUntil(informational(URL_A))).rejects.toThrow("a simulated server must answer a final status (200–599), got 103");
  });

  test("validates its options", () => {
    const clock = new ManualClock();
    const server = serveModel(new TokenBucketServer({ limit: 5 }));
    expect(() => createSimulatedFetch({ server, clock, latency: -1 })).toThrow("`latency` must be a non-negative integer, got -1");
    expect(() => createSimulatedFetch({ server, clock, latency: { min: 5, max: 1 } })).toThrow("`latency.max` must be at least `latency.min` (5), got 1");
    expect(() => createSimulatedFetch({ server, clock, requestLatency: { min: 0, max: 1.5 } })).toThrow("`requestLatency.max` must be a non-negative integer, got 1.5");
    expect(() => createSimulatedFetch({ server: {} as never, clock })).toThrow(TypeError);
  });
});

describe("sluice's throttled fetch against simulated servers, in virtual time", () => {
  test("at the documented limit of a strict sliding log, with jittered latency: 300 requests, zero 429s", async () => {
    const clock = new ManualClock();
    const server = createSimulatedFetch({
      server: serveModel(new SlidingLogServer({ limit: 10, interval: 1000 })),
      clock,
      latency: { min: 0, max: 200 },
    });
    const api = createThrottledFetch({ limit: 10, interval: 1000, fetch: server, clock });
    const calls = Array.from({ length: 300 }, (_, i) => track(clock, api(`${URL_A}/${i}`)));
    await clock.runAll();
    expect(calls.every((c) => (c.value as Response | undefined)?.status === 200)).toBe(true);
    expect(server.stats.byStatus).toEqual({ 200: 300 });
    expect(server.stats.maxInWindow(1000)).toBe(10);
    expect(clock.now()).toBeGreaterThanOrEqual(29_000);
  });

  test("request jitter: windows counted from the grant overrun a strict server; counted from completion (the `limit` shorthand, or any window through the throttled fetch), never", async () => {
    const run = async (limiter: "grant" | "completion" | "user-built") => {
      const clock = new ManualClock();
      const server = createSimulatedFetch({
        server: serveModel(new SlidingLogServer({ limit: 5, interval: 1000 })),
        clock,
        requestLatency: { min: 0, max: 300 },
        latency: { min: 0, max: 300 },
        seed: 11,
      });
      const window = new WindowLimiter({ limit: 5, interval: 1000, clock }); // counted from the grant
      const api = limiter === "completion"
        ? createThrottledFetch({ limit: 5, interval: 1000, fetch: server, clock, retry: 0 })
        : limiter === "user-built"
        // The throttled fetch counts every attempt's slot from its response, whatever the window says.
        ? createThrottledFetch({ limiter: window, fetch: server, clock, retry: 0 })
        : (url: string) => window.schedule(() => server(url));
      const done = Promise.all(Array.from({ length: 100 }, () => api(URL_A)));
      await clock.runAll();
      await done;
      return server.stats.byStatus[429] ?? 0;
    };
    expect(await run("grant")).toBeGreaterThan(0);
    expect(await run("completion")).toBe(0);
    expect(await run("user-built")).toBe(0);
  });

  test("configured at twice the server's rate: Retry-After from the simulated server pauses every caller and all 60 calls succeed (the 429s counted are the baseline rate discovery must cut)", async () => {
    const clock = new ManualClock();
    const server = createSimulatedFetch({
      server: serveModel(new TokenBucketServer({ limit: 5, interval: 1000, burst: 5, headers: ["ietf", "retry-after"] })),
      clock,
      latency: { min: 5, max: 50 },
    });
    const api = createThrottledFetch({ limit: 10, interval: 1000, fetch: server, clock, retry: 5, random: () => 0.5 });
    const calls = Array.from({ length: 60 }, () => track(clock, api(URL_A)));
    await clock.runAll();
    expect(calls.map((c) => (c.value as Response).status)).toEqual(Array(60).fill(200));
    const refused = server.stats.byStatus[429] ?? 0;
    console.info(`2× too fast against a token bucket: ${refused} 429s for 60 calls, done at t = ${clock.now()} ms`);
    expect(refused).toBeGreaterThan(0);
  });

  test("a server whose limit steps down mid-run: no 429 before the step, 429s after it (what rate discovery must notice)", async () => {
    const clock = new ManualClock();
    const server = createSimulatedFetch({
      server: serveModel(new SlidingLogServer({ limit: 10, interval: 1000, changes: [{ at: 10_000, limit: 5 }], headers: ["retry-after"] })),
      clock,
      latency: { min: 5, max: 50 },
    });
    const api = createThrottledFetch({ limit: 10, interval: 1000, fetch: server, clock, retry: 0, random: () => 0.5 });
    const done = Promise.all(Array.from({ length: 200 }, () => api(URL_A)));
    await clock.runAll();
    await done;
    const refusedAt = server.stats.arrivals.filter((a) => a.status === 429).map((a) => a.at);
    expect(refusedAt.length).toBeGreaterThan(0);
    expect(Math.min(...refusedAt)).toBeGreaterThanOrEqual(10_000);
    console.info(`limit 10/s → 5/s at t = 10 s: ${refusedAt.length} 429s, all after the step`);
  });

  test("the same load without sluice: the simulated server refuses most of it", async () => {
    const clock = new ManualClock();
    const server = createSimulatedFetch({ server: serveModel(new FixedWindowServer({ limit: 10, phase: "random", seed: 4 })), clock, latency: 20 });
    await Promise.all([Array.from({ length: 300 }, () => server(URL_A)), clock.runAll()].flat());
    expect(server.stats.byStatus[429]).toBe(290);
  });

  test("a virtual hour against the simulated OpenAI at its documented RPM: 1,200 requests, zero 429s, in well under a second", async () => {
    const clock = new ManualClock();
    const openai = new OpenAISimulator({ models: { "gpt-4o-mini": { rpm: 20, tpm: 150_000 } } });
    const server = createSimulatedFetch({ server: openai, clock, latency: { min: 200, max: 2000 } });
    const api = createThrottledFetch({ limit: 20, interval: 60_000, fetch: server, clock });
    const body = JSON.stringify({ model: "gpt-4o-mini", max_tokens: 100, messages: [{ role: "user", content: "Summarise this." }] });
    const started = performance.now();
    const calls = Array.from({ length: 1200 }, () => api("https://api.openai.com/v1/chat/completions", { method: "POST", body }));
    const all = Promise.all(calls);
    await clock.runAll(1_000_000);
    const responses = await all;
    const elapsed = performance.now() - started;
    expect(responses.every((r) => r.status === 200)).toBe(true);
    expect(server.stats.byStatus).toEqual({ 200: 1200 });
    expect(clock.now()).toBeGreaterThan(59 * 60_000);
    expect(clock.now()).toBeLessThan(62 * 60_000);
    console.info(`a virtual hour (1200 requests, OpenAI simulator): ${elapsed.toFixed(0)} ms real time`);
  });
});
