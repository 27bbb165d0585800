/**
 * `sluice/testing/msw`: sluice's throttled fetch — and the vendor profiles — calling the global
 * fetch, intercepted by msw and answered by a simulated server in virtual time.
 */
import { http } from "msw";
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { createThrottledFetch } from "../../src/index.ts";
import { FixedWindowServer, GitHubSimulator, ManualClock, OpenAISimulator, serveModel } from "../../src/testing.ts";
import { anthropicHandler, githubHandler, openaiHandler, simulatedHandler } from "../../src/testing-msw.ts";
import { github, openai } from "../../src/vendors.ts";

const msw = setupServer();
beforeAll(() => msw.listen({ onUnhandledFrame: "error" }));
afterEach(() => msw.resetHandlers());
afterAll(() => msw.close());

describe("simulatedHandler()", () => {
  test("40 requests at the documented limit of a fixed window with a random phase, zero 429s", async () => {
    const clock = new ManualClock();
    const { handler, fetch } = simulatedHandler(http, "https://api.example.com", {
      server: serveModel(new FixedWindowServer({ limit: 5, interval: 1000, phase: "random", seed: 9, headers: ["ietf", "retry-after"] })),
      clock,
      latency: { min: 10, max: 100 },
    });
    msw.use(handler);
    const api = createThrottledFetch({ limit: 5, interval: 1000, clock }); // no `fetch`: the global one, which msw intercepts
    const done = Promise.all(Array.from({ length: 40 }, (_, i) => api(`https://api.example.com/items/${i}`)));
    await clock.runAll();
    const responses = await done;
    expect(responses.map((r) => r.status)).toEqual(Array(40).fill(200));
    expect(fetch.stats.byStatus).toEqual({ 200: 40 });
    expect(responses[0]!.headers.get("ratelimit-policy")).toBe('"default";q=5;w=1');
  });

  test("a request its caller aborts mid-latency: the caller gets its AbortError and msw logs nothing (red-team, 2026-11-27: msw printed an unhandled handler exception)", async () => {
    const clock = new ManualClock();
    const { handler } = simulatedHandler(http, "https://api.example.com", { server: serveModel(new FixedWindowServer({ limit: 5 })), clock, latency: 100 });
    msw.use(handler);
    const logged: unknown[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void logged.push(args);
    try {
      const controller = new AbortController();
      const call = fetch("https://api.example.com/x", { signal: controller.signal }).then(() => "answered", (e: Error) => e.name);
      await clock.advance(10);
      controller.abort();
      expect(await call).toBe("AbortError");
      await clock.runAll();
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(logged).toEqual([]);
    } finally {
      console.error = original;
    }
  });

  test("answers only its origin; checks http and origin, naming them (and never quoting a URL that may hold credentials)", async () => {
    const clock = new ManualClock();
    const server = serveModel(new FixedWindowServer({ limit: 5, interval: 1000 }));
    const { handler, fetch } = simulatedHandler(http, "https://api.example.com/", { server, clock });
    msw.use(handler);
    expect((await globalThis.fetch("https://api.example.com/a?b=c", { method: "DELETE" })).status).toBe(200);
    await expect(globalThis.fetch("https://other.example.com/a")).rejects.toThrow();
    expect(fetch.stats.requests).toBe(1);
    expect(() => simulatedHandler({} as never, "https://x.test", { server, clock }))
      .toThrow(new TypeError('`http` must be msw\'s `http` namespace (import { http } from "msw"), got an object {}'));
    for (const origin of ["https://x.test/v1", "https://user:pw@x.test", "https://x.test?q=1", "not a url"]) {
      expect(() => simulatedHandler(http, origin, { server, clock }))
        .toThrow(new TypeError('`origin` must be an origin like "https://api.example.com" (no path, query or credentials), got a string that is not one'));
    }
    expect(() => simulatedHandler(http, 42 as never, { server, clock })).toThrow(/`origin` must be an origin .*got 42/);
    expect(() => simulatedHandler(http, "https://x.test", { server, clock, latency: -1 })).toThrow(/`latency` must be a non-negative integer/);
  });
});

describe("vendor handlers", () => {
  test("openaiHandler + openai(): 60 completions on the global fetch, no 429, answered by the simulator", async () => {
    const clock = new ManualClock();
    const vendor = openaiHandler(http, { clock, latency: 200, simulator: { defaultLimits: { rpm: 30, tpm: 20_000 } } });
    expect(vendor.simulator).toBeInstanceOf(OpenAISimulator);
    msw.use(vendor.handler);
    const api = createThrottledFetch({ ...openai({ rpm: 30, tpm: 20_000, clock }) });
    const calls = Array.from({ length: 60 }, (_, i) =>
      api("https://api.openai.com/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-4o-mini", max_tokens: 50, messages: [{ role: "user", content: `question ${i}` }] }),
      }).then(async (r) => [r.status, (await r.json() as { usage?: unknown }).usage !== undefined]));
    await clock.runAll();
    expect(await Promise.all(calls)).toEqual(Array(60).fill([200, true]));
    expect(vendor.fetch.stats.byStatus).toEqual({ 200: 60 });
    expect(clock.now()).toBeGreaterThanOrEqual(60_000); // 30 RPM: the second half waited for the next minute
  });

  test("githubHandler + github(): search exhausted on the server; core goes on, every search waits for the reset", async () => {
    const clock = new ManualClock();
    const vendor = githubHandler(http, { clock, latency: 20, simulator: { resources: { search: { limit: 2, interval: 60_000 } } } });
    expect(vendor.simulator).toBeInstanceOf(GitHubSimulator);
    msw.use(vendor.handler);
    const gh = createThrottledFetch({ ...github({ clock }), wallClock: () => Date.UTC(2026, 0, 1) + clock.now() });
    const ended: Record<string, number> = {};
    const call = (path: string) => gh(`https://api.github.com${path}`).then(async (r) => {
      await r.text();
      ended[path] = clock.now();
      return r.status;
    });
    const searches = [call("/search/issues?q=1"), call("/search/issues?q=2"), call("/search/issues?q=3")];
    await clock.advance(1_000);
    const core = call("/repos/o/r");
    await clock.runAll();
    expect(await Promise.all([...searches, core])).toEqual([200, 200, 200, 200]);
    expect(ended["/repos/o/r"]).toBe(1_020);
    // Refused at t = 0, its answer (Date: t = 0) arriving at 20 ms: the pause runs the reset (60 s from
    // that Date) + 1 s from the arrival, then the retry's latency.
    expect(ended["/search/issues?q=3"]).toBe(61_040);
    expect(vendor.fetch.stats.byStatus).toEqual({ 200: 4, 403: 1 });
  });

  test("anthropicHandler: a simulator you made, at another origin", async () => {
    const clock = new ManualClock();
    const vendor = anthropicHandler(http, { clock, origin: "https://claude.proxy.test" });
    msw.use(vendor.handler);
    const response = await globalThis.fetch("https://claude.proxy.test/v1/messages", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "claude-x", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("anthropic-ratelimit-requests-limit")).not.toBeNull();
    expect(() => openaiHandler(http, { clock, simulator: { defaultLimits: { rpm: 0, tpm: 1 } } })).toThrow(/rpm/);
    expect(() => githubHandler(http, 5 as never)).toThrow(/`options` must be an object/);
  });
});
