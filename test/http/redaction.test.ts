/**
 * No secret — a URL's user info, query or fragment, a header value — appears in any error the
 * throttled fetch or the undici interceptor throws or passes on: not in `message`, `stack`,
 * `String(error)`, an own string field, nor anywhere down the `cause` chain. The errors stay useful:
 * origin and path are kept.
 */
import fc from "fast-check";
import { expect, test } from "vitest";
import { SmoothLimiter } from "../../src/limiters/smooth.ts";
import { createThrottledFetch } from "../../src/http/throttled-fetch.ts";
import { throttle } from "../../src/undici.ts";
import { RecordingHandler } from "../undici/support/fake-dispatch.ts";

const ORIGIN = "https://api.example.com";
const PATH = "/v1/items";

/** Where the secret sits in the URL. */
const URL_SHAPES: Record<string, (s: string) => string> = {
  password: (s) => `https://user:${s}@api.example.com/v1/items`,
  username: (s) => `https://${s}@api.example.com/v1/items`,
  "no-slash userinfo": (s) => `https:${s}@api.example.com/v1/items`,
  query: (s) => `${ORIGIN}${PATH}?api_key=${s}`,
  "bare query": (s) => `${ORIGIN}${PATH}?${s}`,
  "query and fragment": (s) => `${ORIGIN}${PATH}?page=2&token=${s}#top`,
  fragment: (s) => `${ORIGIN}${PATH}#access_token=${s}`,
  "invalid host": (s) => `https://api example.com/v1/items?key=${s}`,
  "invalid port": (s) => `https://api.example.com:99999/v1/items?key=${s}`,
  "userinfo, invalid port": (s) => `https://u:${s}@api.example.com:99x/v1/items`,
  relative: (s) => `//api.example.com/v1/items?key=${s}`,
  // scheme-relative, so the first ':' is inside the user info (red-team, 2026-11-27: the user name leaked)
  "scheme-relative userinfo": (s) => `//${s}@api.example.com/v1/items`,
  "scheme-relative userinfo with an @ and a password": (s) => `//${s}.prod@corp.example:hunter2pw@api.example.com/v1`,
  "space in query": (s) => `${ORIGIN}${PATH}?q=a b&key=${s}`,
  "password with a slash": (s) => `https://user:ab/${s}@api.example.com/v1/items`,
  "password with a question mark": (s) => `https://user:ab?${s}@api.example.com/v1/items`,
  "password with a hash": (s) => `https://user:${s}#x@api.example.com/v1/items`,
  "email in the query": (s) => `${ORIGIN}${PATH}?email=a@b.example&key=${s}`,
};

/** Strings of an error and its cause chain that a log could show. */
function exposed(error: unknown, seen = new Set<unknown>()): string[] {
  if (seen.has(error)) return [];
  seen.add(error);
  if (typeof error !== "object" || error === null) return [String(error)];
  const e = error as Record<string, unknown>;
  const out = [String(error), String(e.message), String(e.stack)];
  for (const key of Object.keys(e)) if (typeof e[key] === "string") out.push(e[key] as string);
  if (e.cause !== undefined) out.push(...exposed(e.cause, seen));
  if (Array.isArray(e.errors)) for (const inner of e.errors) out.push(...exposed(inner, seen));
  return out;
}

function expectNoSecret(error: unknown, secret: string): void {
  for (const text of exposed(error)) expect(text).not.toContain(secret);
}

// Tokens as APIs issue them: alphanumerics, base64 and base64url characters, some percent-encoded.
const secretArb = fc.stringMatching(/^[A-Za-z0-9_+=-]{8,24}$/).map((s) => `Sx${s}`);
const shapeArb = fc.constantFrom(...Object.keys(URL_SHAPES));
/** Characters that make a header value invalid (fetch's Headers rejects them). */
const badArb = fc.constantFrom("\n", "\r\n", "\0", "\r", "\n x");

test("property: a secret in the URL never appears in the error, however it surfaces", async () => {
  const hits = { construction: 0, fetchThrew: 0, fetchThrewWithOrigin: 0 };
  await fc.assert(
    fc.asyncProperty(secretArb, shapeArb, fc.boolean(), async (secret, shape, asRequest) => {
      const url = URL_SHAPES[shape]!(secret);
      const fetch = async (input: RequestInfo | URL): Promise<Response> => {
        const target = input instanceof Request ? input.url : String(input);
        // A custom fetch that quotes the URL, raw and encoded, in its message and its cause.
        throw new TypeError(`request to ${target} failed (${encodeURIComponent(target)})`, {
          cause: Object.assign(new Error(`connect ECONNREFUSED ${target}`), { input: target, code: "ECONNREFUSED" }),
        });
      };
      const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 1000 }), fetch, retry: { limit: 0 } });
      let input: string | Request = url;
      if (asRequest) {
        try {
          input = new Request(url);
        } catch {
          // The URL cannot make a Request: pass it as a string.
        }
      }
      const error = await api(input).then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      expectNoSecret(error, secret);
      const cause = (error as Error).cause as Record<string, unknown> | undefined;
      if (cause?.code === "ECONNREFUSED") {
        hits.fetchThrew++;
        // Still useful: the origin and path are kept, and the cause's fields too.
        if (!shape.includes("userinfo") && !shape.startsWith("password") && shape !== "username") {
          expect((error as Error).message).toContain(`${ORIGIN}${PATH}`);
          hits.fetchThrewWithOrigin++;
        }
      } else {
        hits.construction++;
        expect(error).toBeInstanceOf(TypeError);
      }
    }),
    { numRuns: 300 },
  );
  expect(hits.construction).toBeGreaterThan(50);
  expect(hits.fetchThrew).toBeGreaterThan(50);
  expect(hits.fetchThrewWithOrigin).toBeGreaterThan(30);
});

test("property: an invalid header value carrying a secret never appears in the error", async () => {
  let rejected = 0;
  await fc.assert(
    fc.asyncProperty(secretArb, badArb, fc.constantFrom("record", "array", "Headers-then-init", "Request"), async (secret, bad, form) => {
      const value = `Bearer ${secret}${bad}z`;
      const fetch = async (): Promise<Response> => new Response("ok");
      const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 1000 }), fetch, retry: { limit: 0 } });
      const error = await (async () => {
        switch (form) {
          case "record":
            return api(`${ORIGIN}${PATH}`, { headers: { authorization: value } });
          case "array":
            return api(`${ORIGIN}${PATH}`, { headers: [["x-api-key", value]] });
          case "Headers-then-init":
            return api(`${ORIGIN}${PATH}`, { headers: { "x-a": "1", authorization: value } });
          default:
            return api(new Request(`${ORIGIN}${PATH}`), { headers: { authorization: value } });
        }
      })().then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(TypeError);
      rejected++;
      expectNoSecret(error, secret);
    }),
    { numRuns: 100 },
  );
  expect(rejected).toBe(100);
});

test("property: the undici interceptor passes on a dispatcher's error without the request's secrets", async () => {
  let failed = 0;
  await fc.assert(
    fc.asyncProperty(secretArb, fc.constantFrom("query", "fragment", "header"), fc.boolean(), async (secret, where, sync) => {
      const path = where === "query" ? `${PATH}?key=${secret}` : where === "fragment" ? `${PATH}#${secret}` : PATH;
      const headers = where === "header" ? { authorization: `Bearer ${secret}` } : {};
      const dispatch = throttle({ limiter: new SmoothLimiter({ limit: 1000 }) })(
        (opts: { origin: string; path: string; headers: Record<string, string> }, h: { onResponseError(c: null, e: unknown): void }) => {
          const error = new Error(`${opts.origin}${opts.path} failed: ${JSON.stringify(opts.headers)}`, {
            cause: new TypeError(`bad request ${opts.origin}${opts.path}`),
          });
          if (sync) throw error;
          h.onResponseError(null, error);
          return true;
        },
      );
      const handler = new RecordingHandler();
      dispatch({ origin: ORIGIN, path, method: "GET", headers } as never, handler as never);
      for (let i = 0; i < 5 && handler.error === undefined; i++) await new Promise((resolve) => setImmediate(resolve));
      expect(handler.error).toBeInstanceOf(Error);
      failed++;
      expectNoSecret(handler.error, secret);
      expect((handler.error as Error).message).toContain(`${ORIGIN}${PATH}`);
    }),
    { numRuns: 100 },
  );
  expect(failed).toBe(100);
});

test("scrubError scrubs a cause and an AggregateError's errors, and survives a cause getter that throws", async () => {
  const { scrubError } = await import("../../src/http/redact.ts");
  const inner = new Error("GET https://api.example.com/v1/items?key=SECRET1 failed");
  const aggregate = new AggregateError([new Error("x SECRET2")], "many", { cause: inner });
  scrubError(aggregate, ["SECRET2"]);
  expect(inner.message).toBe("GET https://api.example.com/v1/items failed");
  expect((aggregate.errors[0] as Error).message).toBe("x …");
  const hostile = new Error("fetch https://api.example.com/a?key=SECRET3");
  Object.defineProperty(hostile, "cause", { get() { throw new Error("no"); } });
  expect(scrubError(hostile, [])).toBe(hostile);
  expect(hostile.message).toBe("fetch https://api.example.com/a");
});

test("a custom fetch that rejects with a string is scrubbed too, and a cut URL keeps no encoded ellipsis (red-team, 2026-11-27)", async () => {
  let thrown = 0;
  for (const [shape, make] of Object.entries(URL_SHAPES)) {
    const secret = "SxRedTeam12345";
    const url = make(secret);
    for (const reject of [(text: string) => text, (text: string) => new Error(text)]) {
      const fetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
        thrown++;
        throw reject(`request to ${input instanceof Request ? input.url : String(input)} with ${new Headers(init?.headers).get("authorization")} failed`);
      };
      const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 1000 }), fetch, retry: { limit: 0 } });
      const error = await api(url, { headers: { authorization: "Bearer HdrSecret987" } }).then(() => undefined, (e: unknown) => e);
      if (error === undefined) throw new Error(`${shape}: the call did not reject`);
      expectNoSecret(error, secret);
      expectNoSecret(error, "HdrSecret987");
      for (const text of exposed(error)) expect(text, shape).not.toContain("%E2%80%A6");
    }
  }
  const { scrubError } = await import("../../src/http/redact.ts");
  expect(scrubError("GET https://api.example.com/v1/items?key=K1 failed: K1", ["?key=K1", "K1"])).toBe("GET https://api.example.com/v1/items… failed: …");
  // A `…` that is part of a URL's path does not end the URL: what follows is still redacted (a
  // version of 2026-11-27 stopped there and kept the query).
  const { scrubText } = await import("../../src/http/redact.ts");
  expect(scrubText("fetch failed: https://cdn.test/files/report…2024.pdf?X-Amz-Signature=deadbeef&token=s3cr3t", [])).toBe("fetch failed: https://cdn.test/files/report…2024.pdf");
  expect(scrubText("via http://proxy.test/a…?proxy_token=p4ss#frag", [])).toBe("via http://proxy.test/a…");
  // The shapes a Request can be built from reach the fetch (6 of them, each rejecting both ways); the
  // rest fail earlier, in sluice's own checks, and are covered above.
  expect(thrown).toBeGreaterThanOrEqual(12);
});

test("a credential quoted without its scheme, a Basic pair decoded, and a form-encoded query value are scrubbed too (red-team, 2026-11-27: 'Incorrect API key provided: sk-…' kept the key)", async () => {
  const cases: [Record<string, string>, string, string[]][] = [
    [{ authorization: "Bearer sk-live-abc123" }, "401: Incorrect API key provided: sk-live-abc123", ["sk-live-abc123"]],
    [{ "x-api-key": "key=\"k-9f8e7d6c5b\", scope=all" }, "bad key k-9f8e7d6c5b", ["k-9f8e7d6c5b"]],
    [{ authorization: `Basic ${btoa("user:hunter2pw")}` }, `bad credentials ${btoa("user:hunter2pw")} (user:hunter2pw), password hunter2pw`, [btoa("user:hunter2pw"), "hunter2pw"]],
  ];
  for (const [headers, text, secrets] of cases) {
    const fetch = async (): Promise<Response> => {
      throw new Error(text);
    };
    const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 1000 }), fetch, retry: { limit: 0 } });
    const error = await api(`${ORIGIN}${PATH}`, { headers }).then(() => undefined, (e: unknown) => e);
    for (const secret of secrets) expectNoSecret(error, secret);
    expect((error as Error).message).toContain("…");
  }
  const { secretsOf, scrubText } = await import("../../src/http/redact.ts");
  const secrets = secretsOf(`${ORIGIN}${PATH}?q=${encodeURIComponent("SECRETQ two")}`);
  expect(scrubText("sent q=SECRETQ+two", secrets)).toBe("sent q=…");
  // Short words of a header value stay readable (the whole value is still a secret).
  const { headerValues } = await import("../../src/http/redact.ts");
  expect(scrubText("scheme Bearer rejected", secretsOf(ORIGIN, headerValues({ authorization: "Bearer sk-live-abc123" })))).toBe("scheme Bearer rejected");
  // Only credential headers are split into words: another header's words would hide the URL's path
  // wherever a segment matched one (review, 2026-11-27: "/v1/chat/…").
  const plain = secretsOf(`${ORIGIN}/v1/chat/completions`, headerValues({ "x-purpose": "batch completions", authorization: "Bearer sk-live-abc123" }));
  expect(scrubText("POST https://api.example.com/v1/chat/completions timed out (sk-live-abc123)", plain))
    .toBe("POST https://api.example.com/v1/chat/completions timed out (…)");
  expect(headerValues(new Headers({ "x-api-key": "key=\"k-9f8e7d6c5b\", scope=all" }))).toContain("k-9f8e7d6c5b");
  expect(headerValues(["x-purpose", "batch completions"])).toEqual(["batch completions"]);
  // More credential names, and names as bytes in [name, value] pairs (review, 2026-11-27).
  for (const name of ["x-jwt", "x-pwd", "x-passwd", "x-bearer"]) expect(headerValues({ [name]: "Bearer eyJhbGciOi.x" })).toContain("eyJhbGciOi.x");
  const bytes = (text: string) => new TextEncoder().encode(text);
  expect(headerValues([[bytes("authorization"), bytes("Bearer sk-live-abc123")]])).toContain("sk-live-abc123");
});
