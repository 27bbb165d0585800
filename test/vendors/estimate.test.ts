import { describe, expect, test } from "vitest";
import {
  estimateAnthropicRequest,
  estimateOpenAIRequest,
  parseJsonBody,
  readAnthropicUsage,
  readJsonUsage,
  readOpenAIUsage,
} from "../../src/vendors/index.ts";

const json = (value: unknown): string => JSON.stringify(value);

describe("parseJsonBody", () => {
  test.each<[string, unknown, unknown]>([
    ["a string", '{"a":1}', { a: 1 }],
    ["bytes", new TextEncoder().encode('{"a":"é"}'), { a: "é" }],
    ["an ArrayBuffer", new TextEncoder().encode('{"a":1}').buffer, { a: 1 }],
    ["a DataView over part of a buffer", new DataView(new TextEncoder().encode('xx{"a":1}yy').buffer, 2, 7), { a: 1 }],
    ["not JSON", "{", undefined],
    ["JSON that is no object", "[1]", undefined],
    ["null", "null", undefined],
    ["a stream is not read", new ReadableStream(), undefined],
    ["a Blob is not read", new Blob(["{}"]), undefined],
    ["absent", undefined, undefined],
  ])("%s", (_name, body, expected) => {
    expect(parseJsonBody(body)).toEqual(expected);
  });
});

describe("estimateOpenAIRequest", () => {
  test.each<[string, unknown, object, unknown]>([
    ["chat: 20 chars / 4 + 3 per message + 3, max_completion_tokens × n", json({
      model: "gpt-4o-mini", n: 2, max_completion_tokens: 100, messages: [{ role: "user", content: "Say hello in French." }],
    }), {}, { model: "gpt-4o-mini", inputTokens: 11, outputTokens: 100, choices: 2, tokens: 211 }],
    ["chat: max_tokens when max_completion_tokens is absent; content parts; images skipped", json({
      model: "gpt-4o", max_tokens: 50, messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo" } }] },
      ],
    }), {}, { model: "gpt-4o", inputTokens: Math.ceil(22 / 4) + 9, outputTokens: 50, choices: 1, tokens: 15 + 50 }],
    ["chat without a maximum: no output reserved (the server counts none up front)", json({
      model: "gpt-4o", messages: [{ role: "user", content: "abcd" }],
    }), {}, { model: "gpt-4o", inputTokens: 1 + 6, outputTokens: 0, choices: 1, tokens: 7 }],
    ["… unless a default is given", json({ messages: [{ role: "user", content: "abcd" }] }), { defaultMaxOutputTokens: 500 },
      { inputTokens: 7, outputTokens: 500, choices: 1, tokens: 507 }],
    ["tools count as their JSON", json({ messages: [], tools: [{ type: "function", function: { name: "f" } }] }), {},
      { inputTokens: 3 + Math.ceil(47 / 4), outputTokens: 0, choices: 1, tokens: 15 }],
    ["responses API: input, instructions, max_output_tokens", json({
      model: "gpt-4.1", instructions: "Be brief.", input: "Tell me a joke.", max_output_tokens: 300,
    }), {}, { model: "gpt-4.1", inputTokens: Math.ceil(24 / 4), outputTokens: 300, choices: 1, tokens: 306 }],
    ["legacy completions: max_tokens defaults to 16; best_of above n", json({ model: "gpt-3.5-turbo-instruct", prompt: "abcdefgh", n: 2, best_of: 3 }), {},
      { model: "gpt-3.5-turbo-instruct", inputTokens: 2, outputTokens: 16, choices: 3, tokens: 50 }],
    ["embeddings: a batch of strings", json({ model: "text-embedding-3-small", input: ["abcd", "efghijkl"] }), {},
      { model: "text-embedding-3-small", inputTokens: 3, outputTokens: 0, choices: 1, tokens: 3 }],
    ["embeddings: token ids count exactly", json({ model: "text-embedding-3-small", input: [[1, 2, 3], [4, 5]] }), {},
      { model: "text-embedding-3-small", inputTokens: 5, outputTokens: 0, choices: 1, tokens: 5 }],
    ["charsPerToken", json({ input: "abcdefgh" }), { charsPerToken: 2 }, { inputTokens: 4, outputTokens: 0, choices: 1, tokens: 4 }],
    ["invalid maxima and n are ignored", json({ input: "abcd", max_tokens: -5, max_output_tokens: "9", n: 0 }), {},
      { inputTokens: 1, outputTokens: 0, choices: 1, tokens: 1 }],
    ["not JSON", "model=gpt-4o", {}, undefined],
  ])("%s", (_name, body, options, expected) => {
    expect(estimateOpenAIRequest(body, options)).toEqual(expected);
  });

  test("options are validated, naming the option and the value", () => {
    expect(() => estimateOpenAIRequest("{}", { charsPerToken: 0 })).toThrow(new RangeError("`charsPerToken` must be a positive finite number, got 0"));
    expect(() => estimateOpenAIRequest("{}", { defaultMaxOutputTokens: 1.5 })).toThrow(new RangeError("`defaultMaxOutputTokens` must be a non-negative integer, got 1.5"));
    expect(() => estimateOpenAIRequest("{}", { charsPerToken: "4" as unknown as number })).toThrow(new TypeError('`charsPerToken` must be a number, got "4"'));
  });

  test("a deeply nested hostile body costs bounded work and does not throw", () => {
    const deep = `${"[".repeat(5_000)}"x"${"]".repeat(5_000)}`;
    // Text below 64 levels is not walked; tools too deep to serialise count as nothing.
    expect(estimateOpenAIRequest(`{"input":${deep}}`)?.inputTokens).toBe(0);
    expect(estimateOpenAIRequest(`{"tools":${"[".repeat(50_000)}${"]".repeat(50_000)}}`)).toBeDefined();
  });
});

describe("estimateAnthropicRequest", () => {
  test.each<[string, unknown, object, unknown]>([
    ["system and text blocks at 3.5 chars a token; max_tokens", json({
      model: "claude-sonnet-4-5", max_tokens: 1024, system: "Be brief.",
      messages: [{ role: "user", content: [{ type: "text", text: "Hello, Claude" }] }],
    }), {}, { model: "claude-sonnet-4-5", inputTokens: 7, outputTokens: 1024 }],
    ["string content, system blocks, tool use and results; base64 images skipped", json({
      max_tokens: 10,
      system: [{ type: "text", text: "abcdefg", cache_control: { type: "ephemeral" } }],
      messages: [
        { role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgoAAAA" } }, { type: "text", text: "abc" }] },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "get", input: { city: "Paris" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "sunny" }] },
      ],
    }), { charsPerToken: 1 }, { inputTokens: 7 + 3 + 2 + 3 + 5 + 2 + 5, outputTokens: 10 }],
    ["no max_tokens: the default", json({ messages: [] }), { defaultMaxOutputTokens: 4096 }, { inputTokens: 0, outputTokens: 4096 }],
    ["not an object", "[]", {}, undefined],
  ])("%s", (_name, body, options, expected) => {
    expect(estimateAnthropicRequest(body, options)).toEqual(expected);
  });

  test("options are validated", () => {
    expect(() => estimateAnthropicRequest("{}", { charsPerToken: Number.POSITIVE_INFINITY })).toThrow(RangeError);
  });
});

describe("usage readers", () => {
  test.each<[string, unknown, unknown]>([
    ["chat completion", { usage: { prompt_tokens: 9, completion_tokens: 12, total_tokens: 21, prompt_tokens_details: { cached_tokens: 0 } } },
      { inputTokens: 9, outputTokens: 12, cachedInputTokens: 0, totalTokens: 21 }],
    ["embeddings", { usage: { prompt_tokens: 8, total_tokens: 8 } }, { inputTokens: 8, outputTokens: 0, totalTokens: 8 }],
    ["responses API", { usage: { input_tokens: 36, input_tokens_details: { cached_tokens: 4 }, output_tokens: 87, total_tokens: 123 } },
      { inputTokens: 36, outputTokens: 87, cachedInputTokens: 4, totalTokens: 123 }],
    ["streamed response.completed", { type: "response.completed", response: { usage: { input_tokens: 3, output_tokens: 4, total_tokens: 7 } } },
      { inputTokens: 3, outputTokens: 4, totalTokens: 7 }],
    ["streamed response.incomplete (red-team, 2026-11-27)", { type: "response.incomplete", response: { usage: { input_tokens: 3, output_tokens: 9, total_tokens: 12 } } },
      { inputTokens: 3, outputTokens: 9, totalTokens: 12 }],
    ["streamed response.failed", { type: "response.failed", response: { usage: { input_tokens: 5, output_tokens: 1, total_tokens: 6 } } },
      { inputTokens: 5, outputTokens: 1, totalTokens: 6 }],
    ["total computed when absent", { usage: { prompt_tokens: 3, completion_tokens: 4 } }, { inputTokens: 3, outputTokens: 4, totalTokens: 7 }],
    ["a streamed chunk without usage", { choices: [{ delta: { content: "hi" } }], usage: null }, undefined],
    ["malformed counts", { usage: { prompt_tokens: "9" } }, undefined],
  ])("OpenAI: %s", (_name, body, expected) => {
    expect(readOpenAIUsage(body)).toEqual(expected);
  });

  test.each<[string, unknown, unknown]>([
    ["a message", { usage: { input_tokens: 25, output_tokens: 140, cache_creation_input_tokens: 0, cache_read_input_tokens: 1000 } },
      { inputTokens: 25, outputTokens: 140, cacheCreationInputTokens: 0, cacheReadInputTokens: 1000, totalTokens: 1165 }],
    ["a message_start event", { type: "message_start", message: { usage: { input_tokens: 472, output_tokens: 2 } } },
      { inputTokens: 472, outputTokens: 2, totalTokens: 474 }],
    ["no usage", { type: "ping" }, undefined],
    ["not an object", null, undefined],
  ])("Anthropic: %s", (_name, body, expected) => {
    expect(readAnthropicUsage(body)).toEqual(expected);
  });
});

describe("readJsonUsage", () => {
  const body = JSON.stringify({ id: "chatcmpl-1", choices: [], usage: { prompt_tokens: 9, completion_tokens: 12, total_tokens: 21 } });

  test("reads usage from a clone; the caller's body stays whole", async () => {
    const response = new Response(body, { headers: { "content-type": "application/json" } });
    expect(await readJsonUsage(response, { vendor: "openai" })).toEqual({ inputTokens: 9, outputTokens: 12, totalTokens: 21 });
    expect(response.bodyUsed).toBe(false);
    expect(await response.text()).toBe(body);
  });

  test("anthropic", async () => {
    const response = new Response(JSON.stringify({ type: "message", usage: { input_tokens: 3, output_tokens: 5 } }));
    expect(await readJsonUsage(response, { vendor: "anthropic" })).toEqual({ inputTokens: 3, outputTokens: 5, totalTokens: 8 });
  });

  test.each<[string, () => Response | Promise<Response>]>([
    ["a body over maxBytes", () => new Response(`${body}${" ".repeat(100)}`)],
    ["not JSON", () => new Response("<html>")],
    ["no body", () => new Response(null, { status: 204 })],
    ["a used body", async () => {
      const r = new Response(body);
      await r.text();
      return r;
    }],
  ])("%s gives undefined", async (_name, make) => {
    expect(await readJsonUsage(await make(), { vendor: "openai", maxBytes: body.length + 10 })).toBeUndefined();
  });

  test("the caller's body is whole even when the clone stops at maxBytes", async () => {
    const response = new Response(`${body}${" ".repeat(100_000)}`);
    expect(await readJsonUsage(response, { vendor: "openai", maxBytes: 1_000 })).toBeUndefined();
    expect((await response.text()).length).toBe(body.length + 100_000);
  });

  test("options are checked", async () => {
    await expect(readJsonUsage(new Response(body), { vendor: "openai", maxBytes: -1 })).rejects.toThrow("`maxBytes` must be a positive integer, got -1");
    await expect(readJsonUsage(new Response(body), { vendor: "x" as "openai" })).rejects.toThrow('`vendor` must be "openai" or "anthropic", got "x"');
  });
});

test("estimateOpenAIRequest: a huge maximum × n stays a safe integer", () => {
  const estimate = estimateOpenAIRequest(JSON.stringify({ messages: [], max_tokens: Number.MAX_SAFE_INTEGER, n: 128 }));
  expect(estimate?.tokens).toBe(Number.MAX_SAFE_INTEGER);
});
