/**
 * The vendor simulators against the facts in /work/shared/notes/vendors.md: header names and
 * formats, what is charged when, error bodies.
 */
import { describe, expect, test } from "vitest";
import {
  AnthropicSimulator, createSimulatedFetch, DEFAULT_EPOCH_MS, estimateTokens, GitHubSimulator, goDuration, ManualClock, OpenAISimulator, serveModel,
} from "../../src/testing.ts";

const chat = (extra: Record<string, unknown> = {}) => ({ model: "gpt-4o-mini", messages: [{ role: "user", content: "x".repeat(40) }], ...extra });
const parse = (body: string | undefined) => JSON.parse(body ?? "") as Record<string, any>;

test("goDuration prints Go's time.Duration format, rounded up to the ms", () => {
  expect([0, 0.2, 12, 999, 1000, 1500, 60_000, 360_000, 3_723_400, 3_600_000].map(goDuration))
    .toEqual(["0s", "1ms", "12ms", "999ms", "1s", "1.5s", "1m0s", "6m0s", "1h2m3.4s", "1h0m0s"]);
  expect(estimateTokens("Hello, world")).toBe(3);
});

describe("OpenAISimulator", () => {
  test("a success: x-ratelimit-* per model with Go-duration resets (time to full refill), usage in the body", () => {
    const openai = new OpenAISimulator({ completionTokens: () => 7 });
    const reply = openai.chat(0, chat({ max_tokens: 100 }));
    expect(reply.status).toBe(200);
    expect(reply.headers).toMatchObject({
      "x-ratelimit-limit-requests": "60",
      "x-ratelimit-limit-tokens": "150000",
      "x-ratelimit-remaining-requests": "59",
      "x-ratelimit-remaining-tokens": "149900", // charged max(max_tokens, ⌈40/4⌉) = 100 up front
      "x-ratelimit-reset-requests": "1s", // one request refills in 1 s at 60/min
      "x-ratelimit-reset-tokens": "40ms", // 100 tokens at 2,500/s
      date: "Thu, 01 Jan 2026 00:00:00 GMT",
      "content-type": "application/json",
    });
    const body = parse(reply.body);
    expect(body).toMatchObject({ object: "chat.completion", model: "gpt-4o-mini", created: DEFAULT_EPOCH_MS / 1000 });
    expect(body.choices[0]).toMatchObject({ index: 0, message: { role: "assistant" }, finish_reason: "stop" });
    expect(body.usage).toEqual({ prompt_tokens: 10, completion_tokens: 7, total_tokens: 17 });
  });

  test("the up-front charge is the character estimate when it exceeds max_tokens · n", () => {
    const openai = new OpenAISimulator();
    const long = { messages: [{ role: "user", content: [{ type: "text", text: "y".repeat(4000) }] }] };
    expect(openai.chat(0, chat({ ...long, max_tokens: 10, n: 2 })).headers!["x-ratelimit-remaining-tokens"]).toBe("149000");
    expect(openai.chat(0, chat({ max_tokens: 300, n: 2 })).headers!["x-ratelimit-remaining-tokens"]).toBe("148400");
  });

  test("RPM exhausted: 429 with retry-after-ms, retry-after and OpenAI's error envelope; the exact wait passes", () => {
    const openai = new OpenAISimulator({ defaultLimits: { rpm: 3, tpm: 150_000 } });
    for (let i = 0; i < 3; i++) expect(openai.chat(0, chat()).status).toBe(200);
    const refused = openai.chat(0, chat());
    expect(refused.status).toBe(429);
    expect(refused.headers).toMatchObject({ "retry-after-ms": "20000", "retry-after": "20", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1m0s" });
    expect(parse(refused.body).error).toMatchObject({ type: "requests", code: "rate_limit_exceeded", param: null });
    expect(parse(refused.body).error.message).toContain("requests per min (RPM): Limit 3, Used 3, Requested 1");
    expect(openai.chat(19_999, chat()).status).toBe(429);
    expect(openai.chat(20_000, chat()).status).toBe(200);
  });

  test("TPM exhausted: refused with the wait for both buckets; a request over the TPM limit can never pass", () => {
    const openai = new OpenAISimulator();
    expect(openai.chat(0, chat({ max_tokens: 100_000 })).status).toBe(200);
    const refused = openai.chat(0, chat({ max_tokens: 100_000 }));
    expect(refused.headers).toMatchObject({ "retry-after-ms": "20000", "x-ratelimit-remaining-tokens": "50000" });
    expect(parse(refused.body).error).toMatchObject({ type: "tokens", code: "rate_limit_exceeded" });
    const tooLarge = openai.chat(0, chat({ max_tokens: 200_000 }));
    expect(tooLarge.status).toBe(429);
    expect(tooLarge.headers).toMatchObject({ "x-should-retry": "false" });
    expect(tooLarge.headers!["retry-after"]).toBeUndefined();
    expect(parse(tooLarge.body).error.message).toContain("Request too large for gpt-4o-mini");
  });

  test("limits are per model", () => {
    const openai = new OpenAISimulator({ models: { a: { rpm: 1, tpm: 1000 } }, defaultLimits: { rpm: 2, tpm: 1000 } });
    expect([openai.chat(0, chat({ model: "a" })).status, openai.chat(0, chat({ model: "a" })).status]).toEqual([200, 429]);
    expect(openai.chat(0, chat({ model: "b" })).headers!["x-ratelimit-limit-requests"]).toBe("2");
  });

  test("streaming: server-sent events ending with a usage chunk (with include_usage) and [DONE]", () => {
    const openai = new OpenAISimulator({ completionTokens: () => 5 });
    const events = (body: string | undefined) => body!.split("\n\n").filter(Boolean).map((e) => e.replace(/^data: /, ""));
    const withUsage = openai.chat(0, chat({ stream: true, stream_options: { include_usage: true } }));
    expect(withUsage.headers!["content-type"]).toBe("text/event-stream");
    const e = events(withUsage.body);
    expect(e.at(-1)).toBe("[DONE]");
    const chunks = e.slice(0, -1).map((c) => JSON.parse(c));
    expect(chunks.every((c) => c.object === "chat.completion.chunk")).toBe(true);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(chunks.at(-2).choices[0].finish_reason).toBe("stop");
    const without = events(openai.chat(0, chat({ stream: true })).body).slice(0, -1).map((c) => JSON.parse(c));
    expect(without.some((c) => "usage" in c)).toBe(false);
  });

  test("refundUnused settles the TPM charge to the actual total when the response is delivered", async () => {
    for (const refundUnused of [false, true]) {
      const clock = new ManualClock();
      const openai = new OpenAISimulator({ refundUnused, completionTokens: () => 20 });
      const fetch = createSimulatedFetch({ server: openai, clock });
      const response = await fetch("https://api.openai.com/v1/chat/completions", { method: "POST", body: JSON.stringify(chat({ max_tokens: 1000 })) });
      expect(response.headers.get("x-ratelimit-remaining-tokens")).toBe("149000"); // max_tokens charged up front
      expect((await response.json()).usage.total_tokens).toBe(30);
      expect(openai.remaining("gpt-4o-mini", 0).tokens).toBe(refundUnused ? 149_970 : 149_000);
    }
  });

  test("output past the up-front charge (no max_tokens) is counted on delivery, refund or not (red-team, 2026-11-27: it never was without refundUnused)", async () => {
    for (const refundUnused of [false, true]) {
      const clock = new ManualClock();
      const openai = new OpenAISimulator({ refundUnused, completionTokens: () => 400 });
      const fetch = createSimulatedFetch({ server: openai, clock });
      const response = await fetch("https://api.openai.com/v1/chat/completions", { method: "POST", body: JSON.stringify(chat()) });
      expect(response.headers.get("x-ratelimit-remaining-tokens")).toBe("149990"); // the prompt's 10 up front
      expect((await response.json()).usage.total_tokens).toBe(410);
      expect(openai.remaining("gpt-4o-mini", 0).tokens).toBe(149_590); // the 400 of output too
    }
  });

  test("unknown paths and bad bodies are answered like OpenAI: JSON errors", async () => {
    const clock = new ManualClock();
    const fetch = createSimulatedFetch({ server: new OpenAISimulator(), clock });
    expect((await fetch("https://api.openai.com/v1/nope")).status).toBe(404);
    const bad = await fetch("https://api.openai.com/v1/chat/completions", { method: "POST", body: "{" });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.type).toBe("invalid_request_error");
  });
});

describe("AnthropicSimulator", () => {
  const message = (extra: Record<string, unknown> = {}) => ({ model: "claude-sonnet", max_tokens: 1000, messages: [{ role: "user", content: "x".repeat(400) }], ...extra });

  test("limits per model class: a family's versions share them, another family has its own (red-team, 2026-11-27: one set was shared by every model)", () => {
    const anthropic = new AnthropicSimulator({ limits: { rpm: 1, inputTpm: 100_000, outputTpm: 100_000 }, outputTokens: () => 5 });
    const ask = (model: string) => anthropic.messages(0, message({ model })).status;
    expect(ask("claude-sonnet-4-5")).toBe(200);
    expect(ask("claude-sonnet-4-6")).toBe(429); // Sonnet 4.x is one budget
    expect(ask("claude-haiku-4-5")).toBe(200);
    expect(ask("claude-opus-4-1")).toBe(200);
    const own = new AnthropicSimulator({ limits: { rpm: 1, inputTpm: 100_000, outputTpm: 100_000 }, modelClass: (m) => m });
    expect([own.messages(0, message({ model: "a" })).status, own.messages(0, message({ model: "b" })).status]).toEqual([200, 200]);
  });

  test("three buckets with anthropic-ratelimit-* headers; resets are RFC 3339 times when the bucket is full again", () => {
    const anthropic = new AnthropicSimulator({ outputTokens: () => 50 });
    const reply = anthropic.messages(0, message());
    expect(reply.status).toBe(200);
    expect(reply.headers).toMatchObject({
      "anthropic-ratelimit-requests-limit": "50",
      "anthropic-ratelimit-requests-remaining": "49",
      "anthropic-ratelimit-requests-reset": "2026-01-01T00:00:02Z", // 1.2 s to refill one request at 50/min, rounded up
      "anthropic-ratelimit-input-tokens-limit": "30000",
      "anthropic-ratelimit-input-tokens-remaining": "29900",
      "anthropic-ratelimit-input-tokens-reset": "2026-01-01T00:00:01Z", // 100 tokens at 500/s = 0.2 s
      "anthropic-ratelimit-output-tokens-limit": "8000",
      "anthropic-ratelimit-output-tokens-remaining": "7000", // max_tokens reserved up front
      "anthropic-ratelimit-output-tokens-reset": "2026-01-01T00:00:08Z", // 1000 at 133.3/s = 7.5 s
      "anthropic-ratelimit-tokens-limit": "8000", // the most restrictive: output, with 7000 left
      "anthropic-ratelimit-tokens-remaining": "7000",
    });
    expect(parse(reply.body)).toMatchObject({ type: "message", role: "assistant", stop_reason: "end_turn", usage: { input_tokens: 100, output_tokens: 50 } });
    reply.onDelivered!(0); // the unused 950 output tokens come back: 7950, then the next reserves 1000
    expect(anthropic.messages(0, message()).headers!["anthropic-ratelimit-output-tokens-remaining"]).toBe("6950");
  });

  test("a 429 is a rate_limit_error with retry-after in seconds; outputCharge 'actual' charges output only on delivery", () => {
    const anthropic = new AnthropicSimulator({ limits: { rpm: 50, inputTpm: 30_000, outputTpm: 1500 }, outputTokens: () => 10 });
    expect(anthropic.messages(0, message()).status).toBe(200);
    const refused = anthropic.messages(0, message());
    expect(refused.status).toBe(429);
    expect(refused.headers!["retry-after"]).toBe("20"); // 500 more output tokens at 25/s
    expect(parse(refused.body)).toEqual({ type: "error", error: { type: "rate_limit_error", message: expect.stringContaining("1500 output tokens per minute") } });
    const actual = new AnthropicSimulator({ limits: { rpm: 50, inputTpm: 30_000, outputTpm: 1500 }, outputCharge: "actual", outputTokens: () => 10 });
    const first = actual.messages(0, message());
    expect(first.headers!["anthropic-ratelimit-output-tokens-remaining"]).toBe("1500");
    first.onDelivered!(100);
    expect(actual.messages(100, message()).headers!["anthropic-ratelimit-output-tokens-remaining"]).toBe("1490");
  });

  test("streaming: message_start carries the input usage, message_delta the final output usage", () => {
    const anthropic = new AnthropicSimulator({ outputTokens: () => 42 });
    const reply = anthropic.messages(0, message({ stream: true }));
    expect(reply.headers!["content-type"]).toBe("text/event-stream");
    const events = reply.body!.split("\n\n").filter(Boolean).map((e) => {
      const [type, data] = e.split("\n");
      return { event: type!.replace("event: ", ""), data: JSON.parse(data!.replace("data: ", "")) };
    });
    expect(events.map((e) => e.event)).toEqual(["message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]);
    expect(events.every((e) => e.data.type === e.event)).toBe(true);
    expect(events[0]!.data.message.usage).toEqual({ input_tokens: 100, output_tokens: 1 });
    expect(events[4]!.data).toMatchObject({ delta: { stop_reason: "end_turn" }, usage: { output_tokens: 42 } });
  });

  test("overload() answers 529 overloaded_error, charging nothing and sending no rate-limit headers", () => {
    const anthropic = new AnthropicSimulator();
    anthropic.overload(1000, 2000);
    const reply = anthropic.messages(1500, message());
    expect(reply.status).toBe(529);
    expect(parse(reply.body)).toEqual({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } });
    expect(Object.keys(reply.headers!).some((h) => h.startsWith("anthropic-ratelimit"))).toBe(false);
    expect(anthropic.messages(2000, message()).headers!["anthropic-ratelimit-requests-remaining"]).toBe("49");
  });
});

describe("GitHubSimulator", () => {
  test("code search is a resource of its own, 10 a minute; a secondary refusal can come without retry-after (red-team, 2026-11-27)", () => {
    const github = new GitHubSimulator();
    const codes = Array.from({ length: 11 }, () => github.request(0, { method: "GET", path: "/search/code" }));
    expect(codes.map((r) => r.status)).toEqual([...Array(10).fill(200), 403]);
    expect(codes[0]!.headers!["x-ratelimit-resource"]).toBe("code_search");
    expect(github.request(0, { method: "GET", path: "/search/issues" }).headers).toMatchObject({ "x-ratelimit-resource": "search", "x-ratelimit-remaining": "29" });
    const quiet = new GitHubSimulator({ secondaryRetryAfter: false, secondaryLimit: () => 5000 });
    const refused = quiet.request(0, { method: "POST", path: "/repos/o/r/issues" });
    expect(refused.status).toBe(403);
    expect(refused.headers!["retry-after"]).toBeUndefined();
    expect(() => new GitHubSimulator({ secondaryRetryAfter: "no" as never })).toThrow(TypeError);
  });

  test("primary quota per resource with x-ratelimit-{limit,remaining,used,reset,resource}; exhausted is 403 (or 429)", () => {
    const github = new GitHubSimulator({ resources: { core: { limit: 2, interval: 3_600_000 } } });
    const first = github.request(10_000, { method: "GET", path: "/repos/o/r" });
    expect(first.headers).toMatchObject({
      "x-ratelimit-limit": "2", "x-ratelimit-remaining": "1", "x-ratelimit-used": "1",
      "x-ratelimit-reset": String(DEFAULT_EPOCH_MS / 1000 + 3610), "x-ratelimit-resource": "core",
    });
    github.request(20_000, { method: "GET", path: "/user" });
    const refused = github.request(30_000, { method: "GET", path: "/user" });
    expect(refused.status).toBe(403);
    expect(refused.headers).toMatchObject({ "x-ratelimit-remaining": "0", "x-ratelimit-used": "2" });
    expect(parse(refused.body).message).toContain("API rate limit exceeded");
    expect(github.request(30_000, { method: "GET", path: "/search/issues" }).headers).toMatchObject({ "x-ratelimit-resource": "search", "x-ratelimit-limit": "30" });
    expect(github.request(3_610_000, { method: "GET", path: "/user" }).status).toBe(200);
    const strict = new GitHubSimulator({ resources: { core: { limit: 1, interval: 60_000 } }, primaryStatus: 429 });
    strict.request(0, { method: "GET", path: "/a" });
    expect(strict.request(1, { method: "GET", path: "/a" }).status).toBe(429);
  });

  test("secondary: more than 100 concurrent requests is a 403 'secondary rate limit' with retry-after", () => {
    const github = new GitHubSimulator();
    expect(github.request(0, { method: "GET", path: "/a", inFlight: 100 }).status).toBe(200);
    const refused = github.request(0, { method: "GET", path: "/a", inFlight: 101 });
    expect(refused.status).toBe(403);
    expect(refused.headers!["retry-after"]).toBe("60");
    expect(parse(refused.body).message).toMatch(/secondary rate limit/);
  });

  test("secondary: 80 content-generating requests per minute and 500 per hour, exact waits; refused ones are not counted", () => {
    const github = new GitHubSimulator({ secondaryStatus: 429 });
    for (let i = 0; i < 80; i++) expect(github.request(i * 10, { method: "POST", path: "/repos/o/r/issues" }).status).toBe(200);
    const refused = github.request(1000, { method: "POST", path: "/repos/o/r/issues" });
    expect(refused.status).toBe(429);
    expect(refused.headers!["retry-after"]).toBe("59"); // the first POST (t = 0) leaves the minute at 60 s
    expect(github.request(1000, { method: "GET", path: "/repos/o/r" }).headers!["x-ratelimit-used"]).toBe("81");
    let t = 60_000;
    let created = 80;
    while (created < 500) {
      if (github.request(t, { method: "PATCH", path: "/repos/o/r/issues/1" }).status === 200) created++;
      else t += 1000;
    }
    const hourly = github.request(t, { method: "DELETE", path: "/repos/o/r/issues/1" });
    expect(hourly.status).toBe(429);
    expect(Number(hourly.headers!["retry-after"])).toBe(Math.ceil((3_600_000 - t) / 1000));
  });

  test("secondaryLimit refuses what it returns a delay for (any resource), and is checked", () => {
    const seen: unknown[] = [];
    const github = new GitHubSimulator({
      secondaryLimit: (r) => (seen.push(r), r.resource === "search" && r.now < 1000 ? 2500 : undefined),
    });
    const refused = github.request(0, { method: "get", path: "/search/issues" });
    expect(refused.status).toBe(403);
    expect(refused.headers).toMatchObject({ "retry-after": "3", "x-ratelimit-resource": "search", "x-ratelimit-used": "0" });
    expect(parse(refused.body).message).toMatch(/secondary rate limit/);
    expect(github.request(0, { method: "GET", path: "/repos/o/r" }).status).toBe(200);
    expect(github.request(1000, { method: "GET", path: "/search/issues" }).status).toBe(200);
    expect(seen[0]).toEqual({ method: "GET", path: "/search/issues", resource: "search", now: 0 });
    expect(() => new GitHubSimulator({ secondaryLimit: 5 as never })).toThrow(/`secondaryLimit` must be a function, got 5/);
    const bad = new GitHubSimulator({ secondaryLimit: () => -1 });
    expect(() => bad.request(0, { method: "GET", path: "/a" })).toThrow(/`secondaryLimit` must return a non-negative number of ms or undefined, got -1/);
  });

  test("through fetch: concurrency is counted by the adapter", async () => {
    const clock = new ManualClock();
    const fetch = createSimulatedFetch({ server: new GitHubSimulator({ maxConcurrent: 2, respond: () => ({ id: 1 }) }), clock, latency: 100 });
    const responses = Promise.all([1, 2, 3].map(() => fetch("https://api.github.com/repos/o/r")));
    await clock.advance(100);
    const [a, , c] = await responses;
    expect(await a!.json()).toEqual({ id: 1 });
    expect(c!.status).toBe(403);
    expect(fetch.stats.maxInFlight).toBe(3);
  });
});

describe("the simulators refuse options they would silently ignore (red-team, 2026-11-27)", () => {
  test("GitHubSimulator: a resource name GitHub does not use (`codeSearch`, the github() profile's spelling) is a TypeError, not a default left in place", () => {
    expect(() => new GitHubSimulator({ resources: { codeSearch: { limit: 2, interval: 60_000 } } as never }))
      .toThrow(new TypeError("`codeSearch` is not an option of GitHubSimulator's `resources` (did you mean `code_search`?)"));
    expect(new GitHubSimulator({ resources: { code_search: { limit: 2, interval: 60_000 } } }).request(0, { method: "GET", path: "/search/code" }).headers)
      .toMatchObject({ "x-ratelimit-limit": "2" });
  });

  test("OpenAISimulator: `refundUnused` must be a boolean (\"false\" turned refunds on)", () => {
    expect(() => new OpenAISimulator({ refundUnused: "false" as never })).toThrow(new TypeError('`refundUnused` must be a boolean, got "false"'));
  });

  test("serveModel: a value without `decide` fails at creation, naming it, not at the first request", () => {
    expect(() => serveModel(null as never)).toThrow(new TypeError("`model` must be a server model (with a decide method), got null"));
    expect(() => serveModel({} as never)).toThrow(new TypeError("`model` must be a server model (with a decide method), got an object {}"));
  });
});
