/**
 * Request bodies across attempts, checked with msw on the other side: every attempt of a replayable
 * body sends exactly what the caller passed; a streamed body is sent once and never retried; an
 * idempotency key is stable across the attempts of one call.
 */
import { http, HttpResponse } from "msw/http";
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { ManualClock } from "../../src/clock.ts";
import { SmoothLimiter } from "../../src/limiters/smooth.ts";
import { createThrottledFetch, type ThrottledFetch } from "../../src/http/throttled-fetch.ts";
import type { ResponseEvent, ThrottledFetchOptions } from "../../src/http/options.ts";
import { isReplayableBody } from "../../src/http/body.ts";
import { settle } from "./support/stub-fetch.ts";

const ORIGIN = "https://bodies.test";
const server = setupServer();
beforeAll(() => server.listen({ onUnhandledFrame: "error" }));
afterEach(() => server.resetHandlers());
afterAll(() => server.close());

interface Seen {
  method: string;
  contentType: string | null;
  contentLength: string | null;
  key: string | null;
  text: string;
}

/** A server that answers `first` statuses in order, then 200, recording what each attempt sent. */
function serve(...first: Array<[status: number, headers?: Record<string, string>]>): Seen[] {
  const seen: Seen[] = [];
  server.use(http.all(`${ORIGIN}/*`, async ({ request }) => {
    seen.push({
      method: request.method,
      contentType: request.headers.get("content-type"),
      contentLength: request.headers.get("content-length"),
      key: request.headers.get("idempotency-key"),
      text: await request.text(),
    });
    const [status, headers] = first.shift() ?? [200];
    return new HttpResponse(`answer ${seen.length}`, { status, headers });
  }));
  return seen;
}

function client(options: Partial<ThrottledFetchOptions> = {}): { api: ThrottledFetch; clock: ManualClock } {
  const clock = new ManualClock();
  const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 1000, clock }), clock, random: () => 0, ...options });
  return { api, clock };
}

const retryable: Array<[status: number, headers?: Record<string, string>]> = [[429, { "retry-after": "1" }], [503, { "retry-after": "1" }]];

describe("replayable bodies are re-sent intact on every attempt", () => {
  const bytes = () => new TextEncoder().encode("bytes é ✓");
  const cases: Array<[name: string, make: () => BodyInit, text: string, contentType: string | null]> = [
    ["a string", () => "plain text", "plain text", "text/plain;charset=UTF-8"],
    ["a Uint8Array", bytes, "bytes é ✓", null],
    ["an ArrayBuffer", () => bytes().buffer, "bytes é ✓", null],
    ["a DataView", () => new DataView(bytes().buffer), "bytes é ✓", null],
    ["a Blob", () => new Blob(["blob content"], { type: "application/x-thing" }), "blob content", "application/x-thing"],
    ["URLSearchParams", () => new URLSearchParams({ a: "1", b: "two words" }), "a=1&b=two+words", "application/x-www-form-urlencoded;charset=UTF-8"],
  ];
  test.each(cases)("%s (POST, through a 429 and a 503)", async (_name, make, text, contentType) => {
    const seen = serve(...retryable);
    const { api, clock } = client();
    const response = await settle(clock, api(`${ORIGIN}/x`, { method: "POST", body: make() }));
    expect(await response.text()).toBe("answer 3");
    expect(seen).toHaveLength(3);
    for (const attempt of seen) {
      expect(attempt.text).toBe(text);
      expect(attempt.contentType).toBe(contentType);
    }
  });

  test("FormData with a file: every attempt carries both fields", async () => {
    const seen: Array<[string, string]> = [];
    let calls = 0;
    server.use(http.post(`${ORIGIN}/form`, async ({ request }) => {
      const form = await request.formData();
      const file = form.get("file") as File;
      seen.push([String(form.get("name")), `${file.name}:${await file.text()}`]);
      return new HttpResponse(null, { status: ++calls === 1 ? 429 : 200 });
    }));
    const form = new FormData();
    form.append("name", "report");
    form.append("file", new File(["file body"], "r.txt", { type: "text/plain" }));
    const { api, clock } = client();
    await settle(clock, api(`${ORIGIN}/form`, { method: "POST", body: form }));
    expect(seen).toEqual([["report", "r.txt:file body"], ["report", "r.txt:file body"]]);
  });

  test("changes the caller makes to their array or form after the call do not leak into retries", async () => {
    const seen = serve(...retryable);
    const { api, clock } = client();
    const data = new TextEncoder().encode("original");
    const params = new URLSearchParams({ q: "original" });
    const pending = api(`${ORIGIN}/x`, { method: "PUT", body: data });
    data.set(new TextEncoder().encode("MUTATED!"));
    await settle(clock, pending);
    expect(seen.map((s) => s.text)).toEqual(["original", "original", "original"]);

    const seen2 = serve(...retryable);
    const pending2 = api(`${ORIGIN}/y`, { method: "PUT", body: params });
    params.set("q", "mutated");
    await settle(clock, pending2);
    expect(seen2.map((s) => s.text)).toEqual(["q=original", "q=original", "q=original"]);
  });

  test("a Request object's body is read once and re-sent with its headers and Content-Length", async () => {
    const seen = serve(...retryable);
    const { api, clock } = client();
    const request = new Request(`${ORIGIN}/req`, {
      method: "POST",
      body: JSON.stringify({ amount: 10 }),
      headers: { "content-type": "application/json" },
    });
    await settle(clock, api(request));
    expect(seen).toHaveLength(3);
    for (const attempt of seen) {
      expect(attempt).toMatchObject({ method: "POST", text: '{"amount":10}', contentType: "application/json" });
    }
  });

  test("with retries off, a Request's body is passed through untouched (never buffered)", async () => {
    const seen = serve([503, { "retry-after": "1" }]);
    const { api, clock } = client({ retry: 0 });
    const request = new Request(`${ORIGIN}/req`, { method: "POST", body: "once" });
    const response = await settle(clock, api(request));
    expect(response.status).toBe(503);
    expect(seen.map((s) => s.text)).toEqual(["once"]);
  });
});

describe("a streamed body is sent once and never retried", () => {
  const stream = (text: string) => new ReadableStream<Uint8Array>({
    start(controller) {
      for (const part of text.split(" ")) controller.enqueue(new TextEncoder().encode(`${part} `));
      controller.close();
    },
  });

  test("a POST with a ReadableStream that gets a 503 + Retry-After: the caller gets the 503", async () => {
    const seen = serve([503, { "retry-after": "1" }]);
    const events: ResponseEvent[] = [];
    const { api, clock } = client({ onResponse: (e) => events.push(e) });
    const response = await settle(clock, api(`${ORIGIN}/upload`, { method: "POST", body: stream("a b c"), duplex: "half" } as RequestInit));
    expect(response.status).toBe(503);
    expect(seen.map((s) => s.text)).toEqual(["a b c "]);
    expect(events.map((e) => e.reason)).toEqual(["streamed-body"]);
  });

  test("even an idempotent PUT with a stream is not retried after a 500", async () => {
    const seen = serve([500]);
    const { api, clock } = client();
    const response = await settle(clock, api(`${ORIGIN}/upload`, { method: "PUT", body: stream("x y"), duplex: "half" } as RequestInit));
    expect(response.status).toBe(500);
    expect(seen).toHaveLength(1);
  });

  test("isReplayableBody tells the two kinds apart", () => {
    for (const body of ["s", new Uint8Array(1), new ArrayBuffer(1), new Blob([]), new FormData(), new URLSearchParams(), new DataView(new ArrayBuffer(1))]) {
      expect(isReplayableBody(body)).toBe(true);
    }
    for (const body of [new ReadableStream(), { [Symbol.asyncIterator]: async function* () {} }, null, undefined, 42, {}]) {
      expect(isReplayableBody(body)).toBe(false);
    }
  });
});

describe("idempotency key", () => {
  test("the same key on every attempt of a call, a new one per call; POST then retries like an idempotent method", async () => {
    const seen = serve([500], [502]);
    let n = 0;
    const { api, clock } = client({ idempotencyKey: { generate: () => `key-${++n}` } });
    const first = await settle(clock, api(`${ORIGIN}/pay`, { method: "POST", body: "10 EUR" }));
    expect(first.status).toBe(200);
    const second = serve();
    await settle(clock, api(`${ORIGIN}/pay`, { method: "POST", body: "20 EUR" }));
    expect(seen.map((s) => s.key)).toEqual(["key-1", "key-1", "key-1"]);
    expect(second.map((s) => s.key)).toEqual(["key-2"]);
  });

  test("a key the caller set is kept; idempotent methods get none", async () => {
    const seen = serve([500]);
    const { api, clock } = client({ idempotencyKey: true });
    await settle(clock, api(`${ORIGIN}/pay`, { method: "POST", body: "x", headers: { "Idempotency-Key": "mine" } }));
    await settle(clock, api(`${ORIGIN}/get`));
    expect(seen.map((s) => s.key)).toEqual(["mine", "mine", null]);
    expect(seen[2]!.method).toBe("GET");
  });

  test("the default key is a random UUID", async () => {
    const seen = serve();
    const { api, clock } = client({ idempotencyKey: true });
    await settle(clock, api(`${ORIGIN}/pay`, { method: "POST", body: "x" }));
    expect(seen[0]!.key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  test("without the option a POST that fails with 500 is not retried", async () => {
    const seen = serve([500]);
    const { api, clock } = client();
    expect((await settle(clock, api(`${ORIGIN}/pay`, { method: "POST", body: "x" }))).status).toBe(500);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.key).toBeNull();
  });
});
