// Red team (fetch): "user info, query strings, fragments and headers never appear" in any error a
// call rejects with or a hook receives — down the cause chain, the stack and own text fields.
// A custom fetch quotes the request in many spellings; lean path and full path both checked.
import { describe, expect, test } from "vitest";
import { createThrottledFetch, TimeoutError } from "../../src/index.ts";
import { resolveOptions, type ThrottledFetchOptions } from "../../src/http/options.ts";
import { throttledFetchOf } from "../../src/http/throttled-fetch.ts";

const SECRETS = ["QUSER", "QPASS99", "QKEY1234", "FRAG5678", "HVAL-abcdef", "TUPLEVAL42", "REQHDR777"];
const URL_ = "https://QUSER:QPASS99@api.test/v1/items?api_key=QKEY1234&x=a%20b#FRAG5678";

function allText(value: unknown, seen = new Set<unknown>()): string {
  if (typeof value === "string") return value;
  if (typeof value !== "object" || value === null || seen.has(value)) return "";
  seen.add(value);
  const parts: string[] = [];
  for (const key of new Set(["message", "stack", "cause", "errors", ...Object.getOwnPropertyNames(value)])) {
    let v: unknown;
    try {
      v = (value as Record<string, unknown>)[key];
    } catch {
      continue;
    }
    if (Array.isArray(v)) for (const item of v) parts.push(allText(item, seen));
    else parts.push(allText(v, seen));
  }
  return parts.join("\n");
}

const quoting: [string, (input: unknown, init?: RequestInit) => never][] = [
  ["raw URL in message", (input) => {
    throw new TypeError(`request to ${String(input)} failed`);
  }],
  ["percent-encoded URL in a cause", (input) => {
    // As undici's network failures do, the cause carries a code (one without is a lasting failure: not retried).
    throw new TypeError("fetch failed", { cause: Object.assign(new Error(`connect ${encodeURIComponent(String(input))}`), { code: "ECONNREFUSED" }) });
  }],
  ["query value and header values in an AggregateError's errors", (_input, init) => {
    const h = new Headers(init?.headers);
    throw new AggregateError([new Error(`key QKEY1234 rejected`), new Error(`header ${[...h.values()].join(",")}`)], "all failed");
  }],
  ["fragment and the URL in own fields", (input) => {
    const e = new Error("bad") as Error & { detail: string; url: string };
    e.detail = "fragment was FRAG5678";
    e.url = String(input);
    throw e;
  }],
];

const paths = {
  lean: (o: ThrottledFetchOptions) => createThrottledFetch(o),
  full: (o: ThrottledFetchOptions) => throttledFetchOf(resolveOptions(o), true),
};

describe("red team: secrets never in errors", () => {
  for (const [pathName, make] of Object.entries(paths)) {
    for (const [name, thrower] of quoting) {
      test(`${pathName}: ${name} — rejected error and onRetry's error are scrubbed`, async () => {
        const hookErrors: unknown[] = [];
        const api = make({
          limit: 100,
          random: () => 0,
          retry: { limit: 1 },
          fetch: async (input, init) => thrower(input, init),
          ...(pathName === "full" && { onRetry: (e: { error?: unknown }) => void hookErrors.push(e.error) }),
        });
        const error = await api(new URL("https://api.test/v1/items?api_key=QKEY1234&x=a%20b#FRAG5678"), {
          headers: [["x-tuple", "TUPLEVAL42"], ["authorization", "Bearer HVAL-abcdef"]],
        }).then(() => undefined, (e: unknown) => e);
        expect(error).toBeDefined();
        const text = allText(error) + allText(hookErrors);
        for (const secret of SECRETS) expect(text).not.toContain(secret);
        if (pathName === "full") expect(hookErrors).toHaveLength(1);
      });
    }
  }

  test("URL with credentials: fetch's own TypeError is scrubbed, and no permit is taken", async () => {
    let calls = 0;
    const api = createThrottledFetch({ limit: 1, interval: 60_000, fetch: async () => (calls++, new Response("ok")) });
    const error = await api(URL_).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    for (const secret of SECRETS) expect(allText(error)).not.toContain(secret);
    // The window (1 per minute) is untouched: the next valid call goes at once.
    expect((await api("https://api.test/ok")).status).toBe(200);
    expect(calls).toBe(1);
  });

  test("a Request input's own header values are scrubbed from a TimeoutError's cause chain and a fetch error", async () => {
    const api = createThrottledFetch({
      limit: 100,
      timeout: 5,
      retry: 0,
      fetch: (input) => new Promise<Response>((_, reject) => {
        const r = input as Request;
        setTimeout(() => reject(new Error(`upstream said: ${r.headers.get("x-req")} at ${r.url}`)), 1);
      }),
    });
    const request = new Request("https://api.test/r?token=QKEY1234", { headers: { "x-req": "REQHDR777" } });
    const error = await api(request).then(() => undefined, (e: unknown) => e);
    expect(error).toBeDefined();
    for (const secret of SECRETS) expect(allText(error)).not.toContain(secret);
  });
});
