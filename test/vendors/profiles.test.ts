/**
 * The profiles' parts, tested directly: option checks, cost from the body, the key per model or
 * resource, settle from JSON and streamed usage (the caller's body stays whole), the retry hooks, and
 * the pauses the profiles apply from the vendors' headers. End to end through `createThrottledFetch`
 * in profiles-fetch.test.ts.
 */
import { describe, expect, test } from "vitest";
import { createThrottledFetch } from "../../src/index.ts";
import { ManualClock } from "../../src/clock.ts";
import type { ResponseEvent, RetryContext } from "../../src/http/options.ts";
import type { KeyedLimiter } from "../../src/limiters/keyed.ts";
import type { GatedLimiter } from "../../src/limiters/limiter.ts";
import { AnthropicSimulator, GitHubSimulator, OpenAISimulator } from "../../src/testing.ts";
import type { SimulatedReply } from "../../src/testing/server.ts";
import { anthropic, github, githubResource, openai, type VendorProfile } from "../../src/vendors.ts";

const post = (url: string, body: unknown) =>
  new Request(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const toResponse = (r: SimulatedReply) => new Response(r.body ?? "", { status: r.status, headers: r.headers });
const chat = (extra: Record<string, unknown> = {}) => ({
  model: "gpt-4o-mini", max_tokens: 100, messages: [{ role: "user", content: "Say hello in French, please." }], ...extra,
});
const event = (response: Response, key: string, request = new Request("https://x")): ResponseEvent =>
  ({ request, response, attempt: 1, retrying: false, reason: undefined, key });
const keyed = (profile: VendorProfile) => profile.limiter as KeyedLimiter<string, GatedLimiter>;

/** Settles `result` as the fetch would: hands back the response to read and the actual cost. */
async function settled(profile: VendorProfile, response: Response, request: Request) {
  const result = await profile.settle!(response, { request, reserved: 0, attempt: 1 });
  if (result !== null && typeof result === "object" && "actual" in result) return result as { response: Response; actual: Promise<unknown> };
  return { response, actual: Promise.resolve(result) };
}

/** True when a reservation of `cost` on the key's budgets is granted without waiting. */
async function grantsNow(profile: VendorProfile, key: string, cost: Record<string, number>): Promise<boolean> {
  let granted = false;
  const waiting = new AbortController();
  const reservation = keyed(profile).get(key).reserve(cost, { signal: waiting.signal }).then((r) => (granted = true, r));
  for (let i = 0; i < 5; i++) await Promise.resolve();
  waiting.abort(); // a reservation still waiting gives up: nothing taken, nobody held back
  reservation.then((r) => r.release(), () => {});
  return granted;
}

describe("openai()", () => {
  test("checks its options, naming the option and the value", () => {
    expect(() => openai({ rpm: 5, tpm: 5, models: { a: { rpm: 5, tpm: 5, tpms: 3 } as never } }))
      .toThrow(new TypeError("`models.a.tpms` is not a model limit (known: rpm, tpm)"));
    expect(() => openai({ rpm: 0, tpm: 1000 })).toThrow(new RangeError("`rpm` must be a positive integer (per minute), got 0"));
    expect(() => openai({ rpm: 10, tpm: 1.5 })).toThrow(new RangeError("`tpm` must be a positive integer (per minute), got 1.5"));
    expect(() => openai({ rpm: 10 } as never)).toThrow(new TypeError("`tpm` must be a number (per minute), got undefined"));
    expect(() => openai({ rpm: 10, tpm: 10, tpms: 5 } as never)).toThrow(TypeError);
    expect(() => openai({ rpm: 10, tpm: 10, tpms: 5 } as never)).toThrow(/`tpms` is not an option of openai\(\)/);
    expect(() => openai({ rpm: 10, tpm: 10, models: { "gpt-4o": { rpm: -1, tpm: 5 } } })).toThrow(
      new RangeError("`models.gpt-4o.rpm` must be a positive integer (per minute), got -1"),
    );
    expect(() => openai({ rpm: 10, tpm: 10, charsPerToken: 0 })).toThrow(/charsPerToken/);
  });

  test("reserves 1 request and prompt + max_tokens × n tokens; the key is the body's model", async () => {
    const profile = openai({ rpm: 10, tpm: 10_000 });
    const request = post("https://api.openai.com/v1/chat/completions", chat({ n: 2 }));
    expect(profile.key(request)).toBe("(unknown model)"); // before its cost is known
    const cost = await profile.cost(request) as Record<string, number>;
    expect(cost.requests).toBe(1);
    expect(cost.tokens).toBeGreaterThan(200); // 2 × 100 output + the prompt
    expect(cost.tokens).toBeLessThan(230);
    expect(profile.key(request)).toBe("gpt-4o-mini");
    expect(await request.text()).toContain("gpt-4o-mini"); // the request's own body is unread
  });

  test("a request whose prompt + output passes the TPM but whose up-front count (the larger of the two) does not reserves the whole minute instead of failing (red-team, 2026-11-27)", async () => {
    const profile = openai({ rpm: 10, tpm: 30_000 });
    const prompt = "word ".repeat(16_000); // about 20,000 tokens at 4 characters a token
    const fits = await profile.cost(post("https://api.openai.com/v1/chat/completions", chat({ max_tokens: 16_000, messages: [{ role: "user", content: prompt }] })));
    expect(fits).toMatchObject({ tokens: 30_000 }); // was 36,000+: a RangeError before anything was sent
    // The server refuses it too: it fails fast, in the caller's terms (the model, the prompt and
    // max_tokens; it said "`cost.tokens` must be at most 30000 for this limiter").
    await expect(profile.cost(post("https://api.openai.com/v1/chat/completions", chat({ max_tokens: 31_000 })))).rejects.toThrow(
      /^a request to model "gpt-4o-mini" asks about 310\d\d tokens \(prompt about \d+, max_tokens × n 31000\), more than its limit of 30000 tokens a minute: it could never be sent$/,
    );
    let sent = 0;
    const api = createThrottledFetch({ ...openai({ rpm: 10, tpm: 30_000 }), fetch: async () => (sent++, new Response("{}")) });
    await expect(api("https://api.openai.com/v1/chat/completions", { method: "POST", body: JSON.stringify(chat({ max_tokens: 31_000 })) }))
      .rejects.toThrow(/more than its limit of 30000 tokens a minute/);
    expect(sent).toBe(0);
  });

  test("a model named like an Object.prototype member ('constructor', 'toString', '__proto__') gets the default budgets, here and in the simulator (found 2026-11-27: a TypeError)", async () => {
    const { createSimulatedFetch } = await import("../../src/testing.ts");
    const clock = new ManualClock();
    const api = createThrottledFetch({ ...openai({ rpm: 10, tpm: 10_000, clock }), fetch: createSimulatedFetch({ server: new OpenAISimulator(), clock }) });
    for (const model of ["constructor", "toString", "__proto__"]) {
      const response = await clock.runUntil(api("https://api.openai.com/v1/chat/completions", { method: "POST", body: JSON.stringify(chat({ model })) }));
      expect(response.status).toBe(200);
    }
  });

  test("maxConcurrent adds a slot to each model's budgets", async () => {
    expect(() => openai({ rpm: 10, tpm: 10, maxConcurrent: 0 })).toThrow(new RangeError("`maxConcurrent` must be a positive integer, got 0"));
    const profile = openai({ rpm: 10, tpm: 10_000, maxConcurrent: 2 });
    expect(await profile.cost(post("https://x", chat()))).toMatchObject({ requests: 1, concurrent: 1 });
    expect(await anthropic({ rpm: 1, inputTpm: 1, outputTpm: 1 }).cost(new Request("https://x"))).toEqual({ requests: 1, input: 0, output: 0 });
  });

  test("a body that is not JSON reserves one request and no tokens (the settle counts them)", async () => {
    const profile = openai({ rpm: 10, tpm: 10_000 });
    expect(await profile.cost(new Request("https://x", { method: "POST", body: "not json" }))).toEqual({ requests: 1, tokens: 0 });
    expect(await profile.cost(new Request("https://x"))).toEqual({ requests: 1, tokens: 0 });
  });

  test("each model has its own budgets; `models` overrides a model's limits", async () => {
    const clock = new ManualClock();
    const profile = openai({ rpm: 1, tpm: 1000, models: { big: { rpm: 2, tpm: 1000 } }, clock });
    expect(await grantsNow(profile, "a", { requests: 1 })).toBe(true);
    expect(await grantsNow(profile, "a", { requests: 1 })).toBe(false); // 1 RPM
    expect(await grantsNow(profile, "b", { requests: 1 })).toBe(true); // another model
    expect(await grantsNow(profile, "big", { requests: 1 })).toBe(true);
    expect(await grantsNow(profile, "big", { requests: 1 })).toBe(true);
    expect(profile.clock).toBe(clock);
  });

  test("settles a JSON response to usage.total_tokens, leaving the caller's body whole", async () => {
    const profile = openai({ rpm: 10, tpm: 10_000 });
    const server = new OpenAISimulator();
    const request = post("https://api.openai.com/v1/chat/completions", chat());
    const reply = server.chat(0, await request.clone().json());
    const { response, actual } = await settled(profile, toResponse(reply), request);
    const body = await response.json() as { usage: { total_tokens: number } };
    expect(await actual).toEqual({ requests: 1, tokens: body.usage.total_tokens });
  });

  test("settles a stream from its final usage chunk as the caller reads it", async () => {
    const profile = openai({ rpm: 10, tpm: 10_000 });
    const server = new OpenAISimulator();
    const body = chat({ stream: true, stream_options: { include_usage: true } });
    const reply = server.chat(0, body);
    const upstream = toResponse(reply);
    const { response, actual } = await settled(profile, upstream, post("https://x", body));
    expect(response).not.toBe(upstream); // the tap's pass-through
    let done = false;
    void actual.then(() => (done = true));
    await Promise.resolve();
    expect(done).toBe(false); // nothing read yet: nothing buffered
    const text = await response.text();
    expect(text).toBe(reply.body);
    const usage = JSON.parse(text.split("\n").filter((l) => l.startsWith("data: {") && l.includes('"usage":{')).at(-1)!.slice(6)).usage;
    expect(await actual).toEqual({ requests: 1, tokens: usage.total_tokens });
  });

  test("a stream without usage keeps the reservation; a 429 gives its tokens back", async () => {
    const profile = openai({ rpm: 10, tpm: 10_000 });
    const server = new OpenAISimulator();
    const { response, actual } = await settled(profile, toResponse(server.chat(0, chat({ stream: true }))), post("https://x", chat()));
    await response.text();
    expect(await actual).toBeUndefined();
    const refused = new Response("{}", { status: 429, headers: { "retry-after-ms": "20" } });
    expect(await profile.settle!(refused, { request: new Request("https://x"), reserved: 5, attempt: 1 })).toEqual({ requests: 1, tokens: 0 });
    const failed = new Response("{}", { status: 500 });
    expect(await profile.settle!(failed, { request: new Request("https://x"), reserved: 5, attempt: 1 })).toBeUndefined();
  });

  test("x-should-retry decides retries when sent", () => {
    const { shouldRetry } = openai({ rpm: 10, tpm: 10_000 }).retry;
    const context = (headers: Record<string, string>, status = 429): RetryContext =>
      ({ request: new Request("https://x"), response: new Response(null, { status, headers }), attempt: 1 });
    expect(shouldRetry!(context({ "x-should-retry": "false" }))).toBe(false);
    expect(shouldRetry!(context({ "x-should-retry": "true" }, 500))).toBe(true);
    expect(shouldRetry!(context({}))).toBeUndefined();
    expect(shouldRetry!({ request: new Request("https://x"), error: new Error("reset"), attempt: 1 })).toBeUndefined();
  });

  test("a limit the server reports below ours lowers the budget; a higher one changes nothing", async () => {
    const clock = new ManualClock();
    const profile = openai({ rpm: 3, tpm: 10_000, clock });
    expect(await grantsNow(profile, "m", { requests: 1 })).toBe(true);
    profile.onResponse(event(new Response(null, { headers: { "x-ratelimit-limit-requests": "100" } }), "m"));
    profile.onResponse(event(new Response(null, { headers: { "x-ratelimit-limit-requests": "2" } }), "m"));
    expect(await grantsNow(profile, "m", { requests: 1 })).toBe(true);
    expect(await grantsNow(profile, "m", { requests: 1 })).toBe(false); // 2 a minute now, not 3
  });
});

describe("anthropic()", () => {
  test("checks its options", () => {
    expect(() => anthropic({ rpm: 50, inputTpm: 0, outputTpm: 8000 })).toThrow(
      new RangeError("`inputTpm` must be a positive integer (per minute), got 0"),
    );
    expect(() => anthropic({ rpm: 50, inputTpm: 1, outputTpm: 8000, tpm: 3 } as never)).toThrow(/`tpm` is not an option of anthropic\(\)/);
  });

  test("a request past a minute's input or output budget fails before it is sent, naming the model and the part too large", async () => {
    const profile = anthropic({ rpm: 50, inputTpm: 30_000, outputTpm: 8_000 });
    const body = { model: "claude-sonnet-4-5", max_tokens: 9_000, messages: [{ role: "user", content: "hi" }] };
    await expect(profile.cost(post("https://api.anthropic.com/v1/messages", body))).rejects.toThrow(
      'a request to model "claude-sonnet-4-5" asks about 9000 output tokens (max_tokens), more than its limit of 8000 a minute: it could never be sent',
    );
  });

  test("reserves input from the body and output from max_tokens, keyed by model", async () => {
    const profile = anthropic({ rpm: 50, inputTpm: 30_000, outputTpm: 8_000 });
    const request = post("https://api.anthropic.com/v1/messages", {
      model: "claude-sonnet-4-5", max_tokens: 1024, system: "Be brief.", messages: [{ role: "user", content: "Hello, Claude" }],
    });
    expect(await profile.cost(request)).toEqual({ requests: 1, input: 7, output: 1024 });
    expect(profile.key(request)).toBe("claude-sonnet-4"); // its class: Anthropic pools Sonnet 4.x
  });

  test("keys by model class: a family's versions share one budget, as Anthropic pools them; modelClass overrides (red-team, 2026-11-27)", async () => {
    const { anthropicModelClass } = await import("../../src/vendors.ts");
    expect(["claude-sonnet-4-5-20250929", "claude-sonnet-4-6", "claude-sonnet-4-0", "claude-opus-4-1-20250805", "claude-haiku-4-5", "claude-3-5-sonnet-20241022"]
      .map(anthropicModelClass)).toEqual(["claude-sonnet-4", "claude-sonnet-4", "claude-sonnet-4", "claude-opus-4", "claude-haiku-4", "claude-3-5-sonnet-20241022"]);
    const keyOf = async (profile: VendorProfile, model: string) => {
      const request = post("https://api.anthropic.com/v1/messages", { model, max_tokens: 10, messages: [{ role: "user", content: "hi" }] });
      await profile.cost(request);
      return profile.key(request);
    };
    const pooled = anthropic({ rpm: 50, inputTpm: 30_000, outputTpm: 8_000 });
    expect(await keyOf(pooled, "claude-sonnet-4-5")).toBe(await keyOf(pooled, "claude-sonnet-4-6"));
    expect(await keyOf(pooled, "claude-sonnet-4-5")).not.toBe(await keyOf(pooled, "claude-opus-4-1"));
    const own = anthropic({ rpm: 50, inputTpm: 30_000, outputTpm: 8_000, modelClass: (model) => model });
    expect(await keyOf(own, "claude-sonnet-4-5")).not.toBe(await keyOf(own, "claude-sonnet-4-6"));
    expect(() => anthropic({ rpm: 1, inputTpm: 1, outputTpm: 1, modelClass: "x" as never })).toThrow(new TypeError('`modelClass` must be a function, got "x"'));
  });

  test("settles input (cache writes included) and output from usage, JSON or streamed", async () => {
    const profile = anthropic({ rpm: 50, inputTpm: 30_000, outputTpm: 8_000 });
    const json = new Response(JSON.stringify({ usage: { input_tokens: 20, output_tokens: 99, cache_creation_input_tokens: 5, cache_read_input_tokens: 900 } }), {
      headers: { "content-type": "application/json" },
    });
    const a = await settled(profile, json, new Request("https://x"));
    expect(await a.actual).toEqual({ requests: 1, input: 25, output: 99 });
    const server = new AnthropicSimulator();
    const reply = server.messages(0, { model: "m", max_tokens: 300, stream: true, messages: [{ role: "user", content: "hi there" }] });
    const b = await settled(profile, toResponse(reply), new Request("https://x"));
    await b.response.text();
    const output = Number(/"output_tokens":(\d+)\}\}\n\nevent: message_stop/.exec(reply.body!)![1]);
    expect(await b.actual).toEqual({ requests: 1, input: 2, output });
  });

  test("529 overloaded is a server-timed retry (even a POST): 1 s, doubling per attempt up to 32 s; it lowers or settles no budget", async () => {
    const clock = new ManualClock();
    const profile = anthropic({ rpm: 1, inputTpm: 100, outputTpm: 100, clock });
    const overloaded = new Response('{"type":"error","error":{"type":"overloaded_error"}}', { status: 529 });
    const verdict = (attempt: number) => profile.retry.shouldRetry!({ request: new Request("https://x", { method: "POST" }), response: overloaded, attempt });
    expect([1, 2, 3, 7].map(verdict)).toEqual([{ retryAfter: 1000 }, { retryAfter: 2000 }, { retryAfter: 4000 }, { retryAfter: 32_000 }]);
    const forbidden = new Response("", { status: 529, headers: { "x-should-retry": "false" } });
    expect(profile.retry.shouldRetry!({ request: new Request("https://x"), response: forbidden, attempt: 1 })).toBe(false);
    expect(await profile.settle!(overloaded, { request: new Request("https://x"), reserved: 0, attempt: 1 })).toEqual({ requests: 1, input: 0, output: 0 });
    profile.onResponse(event(overloaded, "m"));
    expect(await grantsNow(profile, "m", { requests: 1 })).toBe(true);
  });
});

describe("github()", () => {
  const api = "https://api.github.com";

  test("checks its options", () => {
    expect(() => github({ search: 0 })).toThrow(new RangeError("`search` must be a positive integer, got 0"));
    expect(() => github({ contentCreating: { perMinute: -1 } })).toThrow(/`contentCreating.perMinute` must be a positive integer, got -1/);
    expect(() => github({ maxRetryAfter: -5 })).toThrow(/`maxRetryAfter`/);
    expect(() => github({ cores: 1 } as never)).toThrow(/`cores` is not an option of github\(\)/);
    expect(() => github({ contentCreating: 5 as never })).toThrow(new TypeError("`contentCreating` must be an object, got 5"));
    expect(() => github({ contentCreating: { perMin: 5 } as never }))
      .toThrow(new TypeError("`contentCreating.perMin` is not an option of github() (known: perMinute, perHour)"));
  });

  test("keys by resource; content-creating requests (and GraphQL mutations) also count as writes", async () => {
    const profile = github();
    expect(githubResource("/search/code")).toBe("code_search");
    expect(profile.key(new Request(`${api}/search/issues?q=x`))).toBe("search");
    expect(profile.key(new Request(`${api}/graphql`, { method: "POST" }))).toBe("graphql");
    expect(profile.key(new Request(`${api}/repos/o/r`))).toBe("core");
    expect(profile.key(new Request(`${api}/repos/o/r/issues`, { method: "POST" }))).toBe("core:write");
    expect(await profile.cost(new Request(`${api}/repos/o/r`))).toEqual({ requests: 1, concurrent: 1 });
    const writes = { requests: 1, concurrent: 1, writesPerMinute: 1, writesPerHour: 1 };
    expect(await profile.cost(new Request(`${api}/repos/o/r/issues`, { method: "POST", body: "{}" }))).toEqual(writes);
    const mutation = post(`${api}/graphql`, { query: "mutation { addStar(input: {}) { clientMutationId } }" });
    expect(await profile.cost(mutation)).toEqual(writes);
    expect(profile.key(mutation)).toBe("graphql"); // one combination with every budget: the key cannot read the body
    expect(await grantsNow(profile, "graphql", writes)).toBe(true);
    expect(await profile.cost(post(`${api}/graphql`, { query: "query { viewer { login } }" }))).toEqual({ requests: 1, concurrent: 1 });
  });

  test("a primary refusal (remaining 0) pauses only its resource until the reset + 1 s", async () => {
    const clock = new ManualClock();
    const profile = github({ clock });
    const server = new GitHubSimulator({ resources: { core: { limit: 1, interval: 10_000 } } });
    server.request(0, { method: "GET", path: "/repos/o/r" });
    const refused = toResponse(server.request(0, { method: "GET", path: "/repos/o/r" }));
    expect(refused.status).toBe(403);
    const request = new Request(`${api}/repos/o/r`);
    // A server-timed retry: the reset (10 s) + 1 s; the fetch pauses the resource's budget for it.
    expect(await profile.retry.shouldRetry!({ request, response: refused, attempt: 1 })).toEqual({ retryAfter: 11_000 });
    expect(profile.retry.pauseDimensions).toEqual(["requests"]);
    expect(profile.retry.delay!({ request, response: refused, attempt: 1, computed: 900 })).toBe(0); // the pause times it
    profile.onResponse(event(refused, "core", request));
    expect(await grantsNow(profile, "search", { requests: 1, concurrent: 1 })).toBe(true);
    expect(await grantsNow(profile, "core", { requests: 1, concurrent: 1 })).toBe(false);
    await clock.advance(10_999);
    expect(await grantsNow(profile, "core", { requests: 1, concurrent: 1 })).toBe(false);
    await clock.advance(1);
    expect(await grantsNow(profile, "core", { requests: 1, concurrent: 1 })).toBe(true);
  });

  test("a secondary refusal pauses every resource for retry-after, else 60 s, doubling until a quiet spell as long as the last wait", async () => {
    const clock = new ManualClock();
    const profile = github({ clock });
    const body = '{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}';
    const secondary = () => new Response(body, { status: 403, headers: { "x-ratelimit-remaining": "4000", "x-ratelimit-resource": "core" } });
    const request = new Request(`${api}/repos/o/r/issues`, { method: "POST" });
    const first = secondary();
    expect(await profile.retry.shouldRetry!({ request, response: first, attempt: 1 })).toEqual({ retryAfter: 60_000 });
    profile.onResponse(event(first, "core", request));
    const again = secondary(); // in flight with the first: the same episode, no doubling
    expect(await profile.retry.shouldRetry!({ request, response: again, attempt: 1 })).toEqual({ retryAfter: 60_000 });
    profile.onResponse(event(again, "core", request));
    // The account's limit, not core's: every resource waits.
    for (const resource of ["core", "search", "graphql", "code_search"]) {
      expect(await grantsNow(profile, resource, { requests: 1, concurrent: 1 })).toBe(false);
    }
    await clock.advance(59_999);
    expect(await grantsNow(profile, "search", { requests: 1, concurrent: 1 })).toBe(false);
    await clock.advance(1);
    expect(await grantsNow(profile, "core", { requests: 1, concurrent: 1 })).toBe(true);
    // A success during the episode ends nothing (a read can pass while writes are refused).
    profile.onResponse(event(new Response("{}", { headers: { "x-ratelimit-remaining": "10" } }), "core"));
    const later = secondary(); // sent after the pause: refused again, so 120 s
    expect(await profile.retry.shouldRetry!({ request, response: later, attempt: 2 })).toEqual({ retryAfter: 120_000 });
    profile.onResponse(event(later, "core", request));
    await clock.advance(119_999);
    expect(await grantsNow(profile, "graphql", { requests: 1, concurrent: 1 })).toBe(false);
    await clock.advance(1);
    expect(await grantsNow(profile, "core", { requests: 1, concurrent: 1 })).toBe(true);
    // Refused again before a quiet spell of 120 s: 240 s, whichever resource the response names.
    await clock.advance(119_999);
    const onSearch = new Response(body, { status: 403, headers: { "x-ratelimit-remaining": "20", "x-ratelimit-resource": "search" } });
    const searchRequest = new Request(`${api}/search/issues?q=x`);
    expect(await profile.retry.shouldRetry!({ request: searchRequest, response: onSearch, attempt: 1 })).toEqual({ retryAfter: 240_000 });
    profile.onResponse(event(onSearch, "search", searchRequest));
    // After a quiet spell as long as the last wait (240 s past the 240 s pause), it starts over at 60 s.
    await clock.advance(480_000);
    const fresh = secondary();
    expect(await profile.retry.shouldRetry!({ request, response: fresh, attempt: 1 })).toEqual({ retryAfter: 60_000 });
    profile.onResponse(event(fresh, "core", request));
    // retry-after, when given, is the wait.
    await clock.advance(60_000 * 3);
    const withRetryAfter = new Response(body, { status: 429, headers: { "retry-after": "7" } });
    expect(await profile.retry.shouldRetry!({ request, response: withRetryAfter, attempt: 1 })).toEqual({ retryAfter: 7_000 });
    profile.onResponse(event(withRetryAfter, "core", request));
    expect(await grantsNow(profile, "search", { requests: 1, concurrent: 1 })).toBe(false);
    await clock.advance(7_000);
    expect(await grantsNow(profile, "core", { requests: 1, concurrent: 1 })).toBe(true);
  });

  const writeCost = { requests: 1, concurrent: 1, writesPerMinute: 1, writesPerHour: 1 };
  /** A profile that saw `accepted` writes accepted, then a secondary refusal of a write with `retryAfter` s; the refusal's retry verdict. */
  async function writesRefusedAfter(accepted: number, retryAfter: number) {
    const clock = new ManualClock();
    const profile = github({ clock });
    const write = () => new Request(`${api}/repos/o/r/issues/1/comments`, { method: "POST", body: "{}" });
    const created = () => new Response("{}", { status: 201, headers: { "x-ratelimit-remaining": "4000" } });
    for (let i = 0; i < accepted; i++) profile.onResponse(event(created(), "core", write()));
    const refused = new Response('{"message":"secondary rate limit"}', { status: 403, headers: { "retry-after": String(retryAfter) } });
    const verdict = await profile.retry.shouldRetry!({ request: write(), response: refused, attempt: 1 });
    profile.onResponse(event(refused, "core", write()));
    return { clock, profile, verdict, acceptedLate: () => profile.onResponse(event(created(), "core", write())) };
  }

  test("a secondary refusal of a write lowers the writes budget to the writes GitHub accepted that minute", async () => {
    const { clock, profile, acceptedLate } = await writesRefusedAfter(11, 60);
    acceptedLate(); // sent before the refusal, answered during the pause
    await clock.advance(60_000);
    for (let i = 0; i < 12; i++) expect(await grantsNow(profile, "core:write", writeCost)).toBe(true);
    expect(await grantsNow(profile, "core:write", writeCost)).toBe(false); // 12 a minute, not 80
    expect(await grantsNow(profile, "core", { requests: 1, concurrent: 1 })).toBe(true); // reads go on
  });

  test("a secondary refusal after fewer than 10 accepted writes that minute leaves the writes budget as it was (red-team: 0 accepted held writes to 1 a minute for good)", async () => {
    const { clock, profile, verdict } = await writesRefusedAfter(9, 5);
    expect(verdict).toEqual({ retryAfter: 5_000 });
    await clock.advance(60_000); // the 9 have left the minute: the whole documented budget again
    for (let i = 0; i < 80; i++) expect(await grantsNow(profile, "core:write", writeCost)).toBe(true);
    expect(await grantsNow(profile, "core:write", writeCost)).toBe(false);
  });

  test("a 403 that is no rate limit is left to the fetch's rule; a rate-limit 403 is a server-timed retry", async () => {
    const profile = github({ maxRetryAfter: 30_000 });
    const request = new Request(`${api}/repos/o/r`);
    const forbidden = new Response('{"message":"Resource not accessible by integration"}', { status: 403, headers: { "x-ratelimit-remaining": "4999" } });
    expect(await profile.retry.shouldRetry!({ request, response: forbidden, attempt: 1 })).toBeUndefined();
    const secondary = new Response('{"message":"secondary rate limit"}', { status: 403 });
    // 60 s > maxRetryAfter: the fetch returns the 403 (see github-resources.test.ts).
    expect(await profile.retry.shouldRetry!({ request, response: secondary, attempt: 1 })).toEqual({ retryAfter: 60_000 });
    expect(profile.retry.maxRetryAfter).toBe(30_000);
    expect(profile.retry.budget).toBeUndefined(); // server-timed retries spend none: the fetch's default budget applies
    expect(profile.rateLimitHeaders).toBe(false);
  });
});

test("a call with a signal works where AbortSignal.any is missing (Node 20.0–20.2, older browsers): the profile links the signals itself (red-team, 2026-11-27: TypeError)", async () => {
  const any = AbortSignal.any;
  (AbortSignal as { any?: unknown }).any = undefined;
  try {
    const clock = new ManualClock();
    const fetch = async () => new Response(JSON.stringify({ usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 } }), { headers: { "content-type": "application/json" } });
    const api = createThrottledFetch({ ...openai({ rpm: 60, tpm: 10_000, clock }), fetch, clock });
    const controller = new AbortController();
    const response = await clock.runUntil(api(post("https://api.openai.com/v1/chat/completions", chat()), { signal: controller.signal }));
    expect(response.status).toBe(200);
    // and the caller's abort still reaches a call that waits
    const first = await clock.runUntil(api(post("https://api.openai.com/v1/chat/completions", chat()), { signal: controller.signal }));
    expect(first.status).toBe(200);
    const waiting = api(post("https://api.openai.com/v1/chat/completions", chat()), { signal: controller.signal });
    controller.abort(new Error("caller left"));
    await expect(clock.runUntil(waiting)).rejects.toThrow("caller left");
  } finally {
    AbortSignal.any = any;
  }
});

test("github(): a quota GitHub reports below the profile's lowers that resource's budget, so the calls refused at the reset do not all go out again together (integrations red-team, 2026-11-27: 30 refusals, 5 calls failed)", async () => {
  const { createSimulatedFetch } = await import("../../src/testing.ts");
  const clock = new ManualClock();
  const server = createSimulatedFetch({ server: new GitHubSimulator({ resources: { search: { limit: 5, interval: 60_000 } } }), clock, latency: 50 });
  const api = createThrottledFetch({ ...github({ clock }), fetch: server, random: () => 0.5 });
  const statuses = await clock.runUntil(
    Promise.all(Array.from({ length: 20 }, (_, i) => api(`https://api.github.com/search/issues?q=${i}`).then(async (r) => (await r.text(), r.status)))),
    1_000_000,
  );
  expect(statuses.filter((s) => s !== 200)).toEqual([]);
  // The first 20 went out before any answer (the profile does not probe): 15 refused then, none after.
  expect(server.stats.byStatus[403]).toBe(15);
  expect(server.stats.maxInWindow(60_000)).toBeLessThanOrEqual(5);
  // Other resources keep their own budgets.
  expect((await clock.runUntil(api("https://api.github.com/repos/o/r"))).status).toBe(200);
});
