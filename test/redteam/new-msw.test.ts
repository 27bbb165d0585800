/**
 * Red team: `sluice/testing/msw` used as a user would — msw's own `http` and `setupServer`, the
 * global `fetch` — checking that headers, bodies and limits are those the simulators document.
 */
import { http } from "msw";
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { FixedWindowServer, ManualClock, serveModel } from "../../src/testing.ts";
import { anthropicHandler, githubHandler, openaiHandler, simulatedHandler } from "../../src/testing-msw.ts";

const server = setupServer();
beforeAll(() => server.listen());
afterEach(() => server.resetHandlers());
afterAll(() => server.close());

const chat = (content: string, max = 50) => ({
  method: "POST",
  headers: { "content-type": "application/json", authorization: "Bearer sk-test" },
  body: JSON.stringify({ model: "gpt-4o-mini", max_tokens: max, messages: [{ role: "user", content }] }),
});

test("openaiHandler: rpm 3 → three 200s with x-ratelimit-* (Go-duration resets), then a 429 with retry-after-ms and retry-after", async () => {
  const clock = new ManualClock();
  const openai = openaiHandler(http, { clock, simulator: { defaultLimits: { rpm: 3, tpm: 100_000 } } });
  server.use(openai.handler);
  const remaining: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await fetch("https://api.openai.com/v1/chat/completions", chat("hello"));
    expect(r.status).toBe(200);
    expect(r.headers.get("x-ratelimit-limit-requests")).toBe("3");
    expect(r.headers.get("x-ratelimit-limit-tokens")).toBe("100000");
    expect(r.headers.get("x-ratelimit-reset-requests")).toMatch(/^(\d+h)?(\d+m)?(\d+(\.\d+)?(ms|s))$/);
    remaining.push(r.headers.get("x-ratelimit-remaining-requests")!);
    const body = (await r.json()) as { usage?: { total_tokens?: number }; choices?: unknown[] };
    expect(body.usage?.total_tokens).toBeGreaterThan(0);
    expect(Array.isArray(body.choices)).toBe(true);
  }
  expect(remaining).toEqual(["2", "1", "0"]);
  const refused = await fetch("https://api.openai.com/v1/chat/completions", chat("hello"));
  expect(refused.status).toBe(429);
  const ms = Number(refused.headers.get("retry-after-ms"));
  expect(ms).toBeGreaterThan(0);
  expect(Number(refused.headers.get("retry-after"))).toBe(Math.ceil(ms / 1000));
  const err = (await refused.json()) as { error?: { type?: string } };
  expect(err.error?.type).toBeDefined();
  expect(openai.fetch.stats.byStatus).toEqual({ 200: 3, 429: 1 });
  // the bucket refills in virtual time: after retry-after-ms one more passes
  await clock.advance(ms);
  expect((await fetch("https://api.openai.com/v1/chat/completions", chat("hello"))).status).toBe(200);
});

test("anthropicHandler: rpm 2 → anthropic-ratelimit-* with RFC 3339 resets, then a 429 rate_limit_error with retry-after", async () => {
  const clock = new ManualClock();
  const anthropic = anthropicHandler(http, { clock, simulator: { limits: { rpm: 2, inputTpm: 100_000, outputTpm: 100_000 } } });
  server.use(anthropic.handler);
  const init = {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": "k", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 20, messages: [{ role: "user", content: "hi" }] }),
  };
  for (let i = 0; i < 2; i++) {
    const r = await fetch("https://api.anthropic.com/v1/messages", init);
    expect(r.status).toBe(200);
    expect(r.headers.get("anthropic-ratelimit-requests-limit")).toBe("2");
    expect(r.headers.get("anthropic-ratelimit-requests-reset")).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(r.headers.get("anthropic-ratelimit-input-tokens-limit")).toBe("100000");
    const body = (await r.json()) as { usage?: { input_tokens?: number; output_tokens?: number } };
    expect(body.usage?.input_tokens).toBeGreaterThan(0);
  }
  const refused = await fetch("https://api.anthropic.com/v1/messages", init);
  expect(refused.status).toBe(429);
  expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
  expect(await refused.json()).toMatchObject({ type: "error", error: { type: "rate_limit_error" } });
  expect(anthropic.fetch.stats.byStatus).toEqual({ 200: 2, 429: 1 });
});

test("githubHandler: search quota 2 → x-ratelimit-resource search; the 3rd is a 403 'API rate limit exceeded' with remaining 0; core goes on", async () => {
  const clock = new ManualClock();
  const github = githubHandler(http, { clock, simulator: { resources: { search: { limit: 2, interval: 60_000 } } } });
  server.use(github.handler);
  for (let i = 0; i < 2; i++) {
    const r = await fetch("https://api.github.com/search/issues?q=sluice");
    expect(r.status).toBe(200);
    expect(r.headers.get("x-ratelimit-resource")).toBe("search");
    expect(r.headers.get("x-ratelimit-limit")).toBe("2");
    expect(r.headers.get("x-ratelimit-used")).toBe(String(i + 1));
    expect(Number(r.headers.get("x-ratelimit-reset"))).toBeGreaterThan(1_700_000_000);
  }
  const refused = await fetch("https://api.github.com/search/issues?q=sluice");
  expect(refused.status).toBe(403);
  expect(refused.headers.get("x-ratelimit-remaining")).toBe("0");
  expect(await refused.text()).toMatch(/API rate limit exceeded/);
  const core = await fetch("https://api.github.com/repos/o/r");
  expect(core.status).toBe(200);
  expect(core.headers.get("x-ratelimit-resource")).toBe("core");
});

test("githubHandler: a secondary limit answers 403 'secondary rate limit' with retry-after in seconds, naming the resource", async () => {
  const clock = new ManualClock();
  const github = githubHandler(http, { clock, simulator: { secondaryLimit: ({ resource }) => (resource === "search" ? 30_000 : undefined) } });
  server.use(github.handler);
  const r = await fetch("https://api.github.com/search/issues?q=x");
  expect(r.status).toBe(403);
  expect(r.headers.get("retry-after")).toBe("30");
  expect(r.headers.get("x-ratelimit-resource")).toBe("search");
  expect(await r.text()).toMatch(/secondary rate limit/);
});

test("simulatedHandler on a custom origin: a fixed window of 2 refuses the 3rd with 429; other origins are not answered", async () => {
  const clock = new ManualClock();
  const model = serveModel(new FixedWindowServer({ limit: 2, interval: 1000, headers: ["ietf", "retry-after"] }));
  const custom = simulatedHandler(http, "https://api.example.com/", { server: model, clock });
  // a catch-all after it: what the simulated origin does not answer falls through to it (no network)
  server.use(custom.handler, http.all("*", () => new Response("fallthrough", { status: 418 })));
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) statuses.push((await fetch("https://api.example.com/items?page=" + i)).status);
  expect(statuses).toEqual([200, 200, 429]);
  expect(custom.fetch.stats.byStatus).toEqual({ 200: 2, 429: 1 });
  expect((await fetch("https://api.example.org/items")).status).toBe(418);
  expect(custom.fetch.stats.byStatus).toEqual({ 200: 2, 429: 1 });
});

test("bad inputs: TypeError naming the option; an origin's credentials are never quoted", () => {
  const clock = new ManualClock();
  const model = serveModel(new FixedWindowServer({ limit: 2, interval: 1000 }));
  expect(() => simulatedHandler({} as never, "https://a.example", { server: model, clock })).toThrow(/`http`/);
  let message = "";
  try {
    simulatedHandler(http, "https://user:Sup3rS3cret@api.example.com", { server: model, clock });
  } catch (e) {
    message = (e as Error).message;
    expect(e).toBeInstanceOf(TypeError);
  }
  expect(message).toMatch(/`origin`/);
  expect(message).not.toContain("Sup3rS3cret");
  expect(() => simulatedHandler(http, "https://api.example.com/v1", { server: model, clock })).toThrow(/`origin`/);
  expect(() => openaiHandler(http, { clock, origin: "https://x.example/?k=secretq" })).toThrow(/`origin`/);
  try {
    openaiHandler(http, { clock, origin: "https://x.example/?k=secretq" });
  } catch (e) {
    expect((e as Error).message).not.toContain("secretq");
  }
});
