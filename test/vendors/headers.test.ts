import fc from "fast-check";
import { describe, expect, test } from "vitest";
import {
  GITHUB_LIMITS,
  githubWaitMs,
  parseRfc3339,
  readAnthropicHeaders,
  readBodyPrefix,
  readGitHubHeaders,
  readOpenAIHeaders,
  readShouldRetry,
  type VendorSignal,
} from "../../src/vendors/index.ts";
import { Reach } from "../reach.ts";

const NOW = Date.UTC(2025, 7, 21, 12, 40, 47); // 2025-08-21T12:40:47Z

function response(status: number, headers: Record<string, string>): { status: number; headers: Headers } {
  return { status, headers: new Headers(headers) };
}

describe("readOpenAIHeaders", () => {
  // The sample of OpenAI's rate-limits guide: 60 / 150000 / 59 / 149984 / 1s / 6m0s.
  const GUIDE = {
    "x-ratelimit-limit-requests": "60",
    "x-ratelimit-limit-tokens": "150000",
    "x-ratelimit-remaining-requests": "59",
    "x-ratelimit-remaining-tokens": "149984",
    "x-ratelimit-reset-requests": "1s",
    "x-ratelimit-reset-tokens": "6m0s",
  };

  test.each<[string, number, Record<string, string>, VendorSignal]>([
    ["the guide's sample", 200, GUIDE, {
      budgets: { requests: { limit: 60, remaining: 59, resetMs: 1_000 }, tokens: { limit: 150_000, remaining: 149_984, resetMs: 360_000 } },
      quotaSignal: false,
    }],
    ["a 429 with retry-after-ms (preferred over retry-after)", 429, { ...GUIDE, "retry-after-ms": "850", "retry-after": "2" }, {
      budgets: { requests: { limit: 60, remaining: 59, resetMs: 1_000 }, tokens: { limit: 150_000, remaining: 149_984, resetMs: 360_000 } },
      retryAfterMs: 850,
      quotaSignal: true,
    }],
    ["retry-after in seconds alone", 429, { "retry-after": "2" }, { budgets: {}, retryAfterMs: 2_000, quotaSignal: true }],
    ["x-should-retry: false", 429, { "x-should-retry": "false" }, { budgets: {}, shouldRetry: false, quotaSignal: true }],
    ["sub-second resets (community thread: 12ms, 9ms)", 200, { "x-ratelimit-reset-requests": "12ms", "x-ratelimit-reset-tokens": "9ms" }, {
      budgets: { requests: { resetMs: 12 }, tokens: { resetMs: 9 } },
      quotaSignal: false,
    }],
    ["malformed fields are left out, the others kept", 200, {
      "x-ratelimit-limit-tokens": "lots", "x-ratelimit-remaining-tokens": "-1", "x-ratelimit-reset-tokens": "6 minutes",
      "x-ratelimit-limit-requests": "60", "x-ratelimit-reset-requests": "20", "retry-after-ms": "soon",
    }, { budgets: { requests: { limit: 60 } }, quotaSignal: false }],
    ["a 500 is no quota signal", 500, {}, { budgets: {}, quotaSignal: false }],
  ])("%s", (_name, status, headers, expected) => {
    expect(readOpenAIHeaders(response(status, headers), { now: NOW })).toEqual(expected);
  });

  test("a bad `now` is a RangeError", () => {
    expect(() => readOpenAIHeaders(response(200, {}), { now: Number.NaN })).toThrow(RangeError);
  });
});

describe("readAnthropicHeaders", () => {
  test.each<[string, number, Record<string, string>, VendorSignal]>([
    // Shape of real captured headers (tidyllm's recorded api.anthropic.com response).
    ["all four budgets, resets against now", 200, {
      "anthropic-ratelimit-requests-limit": "50",
      "anthropic-ratelimit-requests-remaining": "49",
      "anthropic-ratelimit-requests-reset": "2025-08-21T12:40:48Z",
      "anthropic-ratelimit-tokens-limit": "48000",
      "anthropic-ratelimit-tokens-remaining": "48000",
      "anthropic-ratelimit-tokens-reset": "2025-08-21T12:40:59Z",
      "anthropic-ratelimit-input-tokens-limit": "40000",
      "anthropic-ratelimit-input-tokens-remaining": "40000",
      "anthropic-ratelimit-input-tokens-reset": "2025-08-21T12:40:59Z",
      "anthropic-ratelimit-output-tokens-limit": "8000",
      "anthropic-ratelimit-output-tokens-remaining": "8000",
      "anthropic-ratelimit-output-tokens-reset": "2025-08-21T12:40:47Z",
    }, {
      budgets: {
        requests: { limit: 50, remaining: 49, resetMs: 1_000 },
        tokens: { limit: 48_000, remaining: 48_000, resetMs: 12_000 },
        input: { limit: 40_000, remaining: 40_000, resetMs: 12_000 },
        output: { limit: 8_000, remaining: 8_000, resetMs: 0 },
      },
      quotaSignal: false,
    }],
    ["the Date header is the reference when valid (client clock 1 h fast)", 200, {
      date: "Thu, 21 Aug 2025 11:40:47 GMT",
      "anthropic-ratelimit-input-tokens-reset": "2025-08-21T11:40:59Z",
    }, { budgets: { input: { resetMs: 12_000 } }, quotaSignal: false }],
    ["a past reset is 0; an offset is honoured; a fraction rounds up", 200, {
      "anthropic-ratelimit-requests-reset": "2025-08-21T12:00:00Z",
      "anthropic-ratelimit-tokens-reset": "2025-08-21T14:40:50+02:00",
      "anthropic-ratelimit-output-tokens-reset": "2025-08-21T12:40:47.0001Z",
    }, { budgets: { requests: { resetMs: 0 }, tokens: { resetMs: 3_000 }, output: { resetMs: 1 } }, quotaSignal: false }],
    ["429 rate_limit_error with retry-after", 429, { "retry-after": "12", "anthropic-ratelimit-output-tokens-remaining": "0" }, {
      budgets: { output: { remaining: 0 } }, retryAfterMs: 12_000, quotaSignal: true,
    }],
    ["529 overloaded: no quota signal", 529, { "x-should-retry": "true" }, {
      budgets: {}, shouldRetry: true, quotaSignal: false, overloaded: true,
    }],
    ["an HTTP-date or epoch reset is malformed here", 200, {
      "anthropic-ratelimit-requests-reset": "Thu, 21 Aug 2025 12:40:59 GMT",
      "anthropic-ratelimit-tokens-reset": "1755780059",
    }, { budgets: {}, quotaSignal: false }],
  ])("%s", (_name, status, headers, expected) => {
    expect(readAnthropicHeaders(response(status, headers), { now: NOW })).toEqual(expected);
  });
});

describe("parseRfc3339", () => {
  test.each<[string, number | undefined]>([
    ["2025-08-21T12:40:59Z", Date.UTC(2025, 7, 21, 12, 40, 59)],
    ["2025-08-21t12:40:59z", Date.UTC(2025, 7, 21, 12, 40, 59)],
    ["2025-08-21 12:40:59Z", Date.UTC(2025, 7, 21, 12, 40, 59)],
    ["2025-08-21T12:40:59.123456789Z", Date.UTC(2025, 7, 21, 12, 40, 59, 124)],
    ["2025-08-21T05:10:59-07:30", Date.UTC(2025, 7, 21, 12, 40, 59)],
    ["2024-02-29T00:00:00Z", Date.UTC(2024, 1, 29)],
    ["2016-12-31T23:59:60Z", Date.UTC(2017, 0, 1)], // a leap second
    ["0099-01-01T00:00:00Z", -59_042_995_200_000],
    ["2025-02-29T00:00:00Z", undefined],
    ["2025-04-31T00:00:00Z", undefined],
    ["2025-13-01T00:00:00Z", undefined],
    ["2025-08-21T24:00:00Z", undefined],
    ["2025-08-21T12:40:59", undefined], // no zone
    ["2025-08-21T12:40:59+0200", undefined],
    ["2025-08-21T12:40Z", undefined],
    ["2025-08-21", undefined],
    ["1755780059", undefined],
    [" 2025-08-21T12:40:59Z", undefined],
  ])("%j → %j", (value, expected) => {
    expect(parseRfc3339(value)).toBe(expected);
  });
});

describe("readGitHubHeaders", () => {
  const RESET = Math.floor(NOW / 1000) + 60;
  const QUOTA = {
    "x-ratelimit-limit": "5000",
    "x-ratelimit-used": "5000",
    "x-ratelimit-remaining": "0",
    "x-ratelimit-reset": String(RESET),
    "x-ratelimit-resource": "core",
  };
  const BUDGET = { limit: 5_000, remaining: 0, used: 5_000, resetMs: 60_000 };
  const SECONDARY_BODY = '{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}';

  test.each<[string, number, Record<string, string>, string | undefined, VendorSignal]>([
    ["a 200 with the quota", 200, { ...QUOTA, "x-ratelimit-remaining": "4999", "x-ratelimit-used": "1" }, undefined, {
      budgets: { requests: { limit: 5_000, remaining: 4_999, used: 1, resetMs: 60_000 } }, quotaSignal: false, resource: "core",
    }],
    ["primary: 403 with remaining 0", 403, QUOTA, undefined, { budgets: { requests: BUDGET }, quotaSignal: true, resource: "core", secondary: false }],
    ["primary: 429 with remaining 0", 429, QUOTA, "{}", { budgets: { requests: BUDGET }, quotaSignal: true, resource: "core", secondary: false }],
    ["secondary: 403 whose body says so, with retry-after", 403, { ...QUOTA, "x-ratelimit-remaining": "4000", "retry-after": "30" }, SECONDARY_BODY, {
      budgets: { requests: { ...BUDGET, remaining: 4_000 } }, retryAfterMs: 30_000, quotaSignal: true, resource: "core", secondary: true,
    }],
    ["secondary wins over remaining 0, in any case", 403, QUOTA, "SECONDARY RATE LIMIT exceeded", {
      budgets: { requests: BUDGET }, quotaSignal: true, resource: "core", secondary: true,
    }],
    ["a 429 with quota left and no body is read as secondary", 429, { "x-ratelimit-remaining": "10" }, undefined, {
      budgets: { requests: { remaining: 10 } }, quotaSignal: true, secondary: true,
    }],
    ["a 403 with quota left is a permission error", 403, { ...QUOTA, "x-ratelimit-remaining": "10" }, '{"message":"Resource not accessible by integration"}', {
      budgets: { requests: { ...BUDGET, remaining: 10 } }, quotaSignal: false, resource: "core",
    }],
    ["a reset in the past is 0; the search resource", 200, { "x-ratelimit-reset": String(RESET - 120), "x-ratelimit-resource": "search" }, undefined, {
      budgets: { requests: { resetMs: 0 } }, quotaSignal: false, resource: "search",
    }],
    ["the Date header is the reference when valid", 200, { date: "Thu, 21 Aug 2025 12:40:17 GMT", "x-ratelimit-reset": String(RESET) }, undefined, {
      budgets: { requests: { resetMs: 90_000 } }, quotaSignal: false,
    }],
    ["malformed fields are left out", 403, { "x-ratelimit-remaining": "0.0", "x-ratelimit-reset": "soon", "x-ratelimit-limit": "5000" }, undefined, {
      budgets: { requests: { limit: 5_000 } }, quotaSignal: false,
    }],
  ])("%s", (_name, status, headers, body, expected) => {
    expect(readGitHubHeaders(response(status, headers), { now: NOW, body })).toEqual(expected);
  });

  test.each<[string, VendorSignal, number, number | undefined]>([
    ["primary: the reset plus a second", { budgets: { requests: { remaining: 0, resetMs: 60_000 } }, quotaSignal: true, secondary: false }, 1, 61_000],
    ["primary without a reset: a minute plus a second", { budgets: {}, quotaSignal: true, secondary: false }, 1, 61_000],
    ["secondary with retry-after", { budgets: {}, retryAfterMs: 30_000, quotaSignal: true, secondary: true }, 1, 30_000],
    ["secondary, remaining 0: the reset", { budgets: { requests: { remaining: 0, resetMs: 90_000 } }, quotaSignal: true, secondary: true }, 1, 90_000],
    ["secondary, quota left: at least a minute", { budgets: { requests: { remaining: 5, resetMs: 5_000 } }, quotaSignal: true, secondary: true }, 1, 60_000],
    ["secondary, second refusal: 2 minutes", { budgets: {}, quotaSignal: true, secondary: true }, 2, 120_000],
    ["secondary, third refusal: 4 minutes", { budgets: {}, retryAfterMs: 30_000, quotaSignal: true, secondary: true }, 3, 240_000],
    ["secondary, a longer retry-after wins over the backoff", { budgets: {}, retryAfterMs: 600_000, quotaSignal: true, secondary: true }, 2, 600_000],
    ["secondary, the 100th refusal stays finite", { budgets: {}, quotaSignal: true, secondary: true }, 100, Number.MAX_SAFE_INTEGER],
    ["no quota signal: no wait", { budgets: {}, quotaSignal: false }, 1, undefined],
  ])("githubWaitMs: %s", (_name, signal, attempt, expected) => {
    expect(githubWaitMs(signal, attempt)).toBe(expected);
  });

  test("githubWaitMs refuses a bad attempt", () => {
    expect(() => githubWaitMs({ budgets: {}, quotaSignal: true }, 0)).toThrow("`attempt` must be a positive integer, got 0");
  });

  test("the documented limits", () => {
    expect(GITHUB_LIMITS).toMatchObject({
      maxConcurrent: 100, contentCreatingPerMinute: 80, contentCreatingPerHour: 500, searchPerMinute: 30, secondaryMinWaitMs: 60_000,
    });
  });
});

describe("readBodyPrefix", () => {
  test("reads the start from a clone; the caller's body stays whole", async () => {
    const text = `{"message":"You have exceeded a secondary rate limit"}${" ".repeat(10_000)}`;
    const res = new Response(text, { status: 403 });
    const prefix = await readBodyPrefix(res, 64);
    expect(prefix).toBe(text.slice(0, 64));
    expect(res.bodyUsed).toBe(false);
    expect(await res.text()).toBe(text);
  });

  test("reads at most maxBytes of a stream, then cancels only the clone", async () => {
    let pulled = 0;
    let cancelled = false;
    const source = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new Uint8Array(100).fill(0x61));
        if (pulled === 1000) controller.close();
      },
      cancel() {
        cancelled = true;
      },
    }, { highWaterMark: 0 });
    const res = new Response(source, { status: 429 });
    expect(await readBodyPrefix(res, 250)).toBe("a".repeat(250));
    expect(pulled).toBeLessThan(10);
    expect(cancelled).toBe(false); // the caller's branch still reads it
    expect((await res.arrayBuffer()).byteLength).toBe(100_000);
  });

  test("a split multi-byte character is decoded whole when it fits, replaced when cut off", async () => {
    expect(await readBodyPrefix(new Response("héllo"), 3)).toBe("hé");
    expect(await readBodyPrefix(new Response("héllo"), 2)).toBe("h\ufffd");
  });

  test("a used body or no body gives an empty string", async () => {
    const used = new Response("x");
    await used.text();
    expect(await readBodyPrefix(used)).toBe("");
    expect(await readBodyPrefix(new Response(null, { status: 204 }))).toBe("");
    await expect(readBodyPrefix(new Response("x"), 0)).rejects.toThrow("`maxBytes` must be a positive integer, got 0");
  });
});

test("readShouldRetry reads only true and false", () => {
  expect(readShouldRetry(new Headers({ "x-should-retry": " true " }))).toBe(true);
  expect(readShouldRetry(new Headers({ "x-should-retry": "False" }))).toBeUndefined();
  expect(readShouldRetry(new Headers())).toBeUndefined();
});

describe("header readers on hostile values", () => {
  const NAMES = [
    "date", "retry-after", "retry-after-ms", "x-should-retry",
    ...["requests", "tokens"].flatMap((d) => ["limit", "remaining", "reset"].map((f) => `x-ratelimit-${f}-${d}`)),
    ...["requests", "tokens", "input-tokens", "output-tokens"].flatMap((d) => ["limit", "remaining", "reset"].map((f) => `anthropic-ratelimit-${d}-${f}`)),
    "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-used", "x-ratelimit-reset", "x-ratelimit-resource",
  ];
  // Values near the real ones (so some parse) and garbage (so most do not).
  const value = fc.oneof(
    fc.constantFrom("0", "60", "149984", "6m0s", "1.2s", "850ms", "2025-08-21T12:40:59Z", "1755780119", "true", "false", "core",
      "Thu, 21 Aug 2025 12:40:47 GMT", "99999999999999999999", "-1", "1e3", ""),
    fc.string({ maxLength: 30 }),
    fc.stringMatching(/^[0-9hmsuµ.:TZ+-]{1,25}$/),
  );
  const headers = fc.dictionary(fc.constantFrom(...NAMES), value.map((v) => v.replace(/[\r\n\0]/g, "")));

  test("never throw, and every number is a non-negative safe integer", () => {
    const reach = new Reach("hostile headers");
    fc.assert(fc.property(headers, fc.constantFrom(200, 403, 429, 529), fc.option(fc.string({ maxLength: 40 })), (h, status, body) => {
      reach.run();
      let parsedOne = false;
      for (const signal of [
        readOpenAIHeaders(response(status, h), { now: NOW }),
        readAnthropicHeaders(response(status, h), { now: NOW }),
        readGitHubHeaders(response(status, h), { now: NOW, body: body ?? undefined }),
      ]) {
        for (const budget of Object.values(signal.budgets)) {
          for (const n of Object.values(budget as object)) {
            parsedOne = true;
            expect(Number.isSafeInteger(n) && (n as number) >= 0).toBe(true);
          }
        }
        if (signal.retryAfterMs !== undefined) expect(Number.isSafeInteger(signal.retryAfterMs) && signal.retryAfterMs >= 0).toBe(true);
        if (signal.quotaSignal && signal.secondary !== undefined) {
          const wait = githubWaitMs(signal, 3);
          expect(Number.isSafeInteger(wait) && wait! >= 0).toBe(true);
        }
      }
      reach.hit("some budget field parsed", parsedOne);
    }), { numRuns: 1_000 });
    reach.atLeast({ "some budget field parsed": 190 });
  });
});
