// The throttled fetch against fetch's own semantics, case by case (red-team findings, 2026-11-27).
import { describe, expect, test } from "vitest";
import { createThrottledFetch, ManualClock, WindowLimiter } from "../../src/index.ts";
import { respond, startServer } from "./support/servers.ts";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

describe("a URL (or any object but a Request) is read when the call is made, as fetch reads it", () => {
  test("a pagination loop reusing one URL object requests every page, queued or not", async () => {
    const clock = new ManualClock();
    const sent: string[] = [];
    const api = createThrottledFetch({
      limiter: new WindowLimiter({ limit: 2, interval: 1000, clock }),
      clock,
      fetch: async (input) => {
        sent.push(String(input));
        return new Response("ok");
      },
    });
    const url = new URL("https://api.test/items");
    const calls: Promise<Response>[] = [];
    for (let page = 1; page <= 4; page++) {
      url.searchParams.set("page", String(page));
      calls.push(api(url));
    }
    await clock.runUntil(Promise.all(calls));
    // Before: pages 1, 2, 4, 4 (the queued ones were read when they went).
    expect(sent).toEqual([1, 2, 3, 4].map((p) => `https://api.test/items?page=${p}`));
  });

  test("a retry goes where the call went, whatever the caller does to the URL meanwhile", async () => {
    const clock = new ManualClock();
    const sent: string[] = [];
    const api = createThrottledFetch({
      limit: 100,
      interval: 1000,
      clock,
      random: () => 0,
      fetch: async (input, init) => {
        sent.push(`${init?.method} ${String(input)}`);
        return sent.length === 1 ? new Response(null, { status: 503, headers: { "retry-after": "1" } }) : new Response("ok");
      },
    });
    const url = new URL("https://api.test/orders/1");
    const call = api(url, { method: "DELETE" });
    url.pathname = "/orders/2";
    await clock.runUntil(call);
    // Before: the retry was `DELETE /orders/2`, a write to another resource.
    expect(sent).toEqual(["DELETE https://api.test/orders/1", "DELETE https://api.test/orders/1"]);
  });

  test("an object with toString is converted once per call, as fetch does, not once per attempt", async () => {
    let conversions = 0;
    let attempts = 0;
    const target = { toString: () => (conversions++, "https://api.test/x") };
    const api = createThrottledFetch({ limit: 100, interval: 1000, random: () => 0, retry: { backoff: { base: 1, cap: 1 } }, fetch: async (input) => {
      // As fetch does: the input is converted to a string when fetch is called.
      String(input);
      return new Response(null, { status: ++attempts === 1 ? 503 : 200 });
    } });
    await api(target as unknown as URL);
    expect(attempts).toBe(2);
    expect(conversions).toBe(1);
  });
});

describe("maxConcurrent keeps the limiter's own bounds", () => {
  test("maxQueue, maxWait and priorityAging of the limiter hold with maxConcurrent as without (a slot cap that never binds)", async () => {
    // Red-team (2026-11-27): with maxConcurrent the attempts queued on a combination made with
    // default bounds — nobody was refused, and priorities aged at the default pace.
    const run = async (bounds: object, maxConcurrent: number | undefined) => {
      const clock = new ManualClock();
      const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock, ...bounds });
      const api = createThrottledFetch({ limiter, clock, retry: 0, ...(maxConcurrent !== undefined && { maxConcurrent }), fetch: async () => new Response(null, { status: 204 }) });
      const outcomes = [0, 1, 2, 3, 4].map((i) =>
        api(`https://x.test/${i}`, { priority: i === 4 ? "high" : "low" } as RequestInit).then(() => `${i}@${clock.now()}`, (e: Error) => `${i}:${e.name}`));
      await clock.runUntil(Promise.all(outcomes));
      return Promise.all(outcomes);
    };
    for (const bounds of [{ maxQueue: 1 }, { maxWait: 1500 }, { priorityAging: Infinity }, { priorityAging: 0 }]) {
      const without = await run(bounds, undefined);
      expect(await run(bounds, 4)).toEqual(without);
    }
    expect(await run({ maxQueue: 1 }, 4)).toEqual(["0@0", "1@1000", "2:QueueFullError", "3:QueueFullError", "4:QueueFullError"]);
  });
});

describe("requests that cannot succeed fail as fetch fails them, once", () => {
  test("an invalid mode, cache, credentials, redirect or window: fetch's TypeError before any permit is taken, nothing sent", async () => {
    // Red-team (2026-11-27): `mode: "navigate"` took a permit per attempt and was retried three
    // times (1.3 s), using up a shared window of 3 before the TypeError came.
    const limiter = new WindowLimiter({ limit: 3, interval: 60_000 });
    let sent = 0;
    const api = createThrottledFetch({ limiter, fetch: async () => (sent++, new Response("ok")) });
    for (const init of [{ mode: "navigate" }, { cache: "bogus" }, { credentials: "bogus" }, { redirect: "bogus" }, { window: {} }, { cache: "only-if-cached" }]) {
      let expected: unknown;
      try {
        new Request("https://api.test/x", init as RequestInit);
      } catch (error) {
        expected = error;
      }
      expect(expected, JSON.stringify(init)).toBeInstanceOf(TypeError);
      await expect(api("https://api.test/x", init as RequestInit)).rejects.toThrow(new TypeError((expected as Error).message));
    }
    expect(sent).toBe(0);
    expect(limiter.stats().granted).toBe(0);
    // Valid members still reach fetch as given.
    await api("https://api.test/x", { mode: "cors", cache: "no-store", credentials: "omit", redirect: "manual" });
    expect(sent).toBe(1);
  });

  test("fetch's own lasting failures (a refused redirect, a redirect loop, an integrity mismatch, an unknown scheme) are not retried; network failures are", async () => {
    const failWith = (cause: Error) => Object.assign(new TypeError("fetch failed"), { cause });
    const attemptsOf = async (error: () => Error) => {
      let attempts = 0;
      const api = createThrottledFetch({ limit: 100, interval: 1000, random: () => 0, retry: { backoff: { base: 1, cap: 1 } }, fetch: async () => {
        attempts++;
        throw error();
      } });
      await expect(api("https://api.test/x")).rejects.toBeInstanceOf(TypeError);
      return attempts;
    };
    const run = (cause: Error) => attemptsOf(() => failWith(cause));
    for (const message of [
      "unexpected redirect", "redirect count exceeded", "integrity mismatch", "unknown scheme", "bad port",
      // Red-team across runtimes: a redirect to ftp:, file:, a bad data: URL, a revoked blob: URL.
      "URL scheme must be a HTTP(S) scheme", "not implemented... yet...", "failed to fetch the data URL", "invalid method",
    ]) {
      expect(await run(new Error(message)), message).toBe(1);
    }
    // A malformed Location header.
    expect(await run(Object.assign(new TypeError("Invalid URL"), { code: "ERR_INVALID_URL" }))).toBe(1);
    // Deno's and Bun's words for the same (a redirect loop reached the server 63 and 381 times).
    expect(await attemptsOf(() => new TypeError("Fetch failed: Encountered redirect while redirect mode is set to 'error'"))).toBe(1);
    expect(await attemptsOf(() => new TypeError("Fetch failed: Maximum number of redirects (20) reached"))).toBe(1);
    expect(await attemptsOf(() => new TypeError("Url scheme 'ftp' not supported"))).toBe(1);
    expect(await attemptsOf(() => Object.assign(new TypeError("TooManyRedirects: The response redirected too many times."), { code: "TooManyRedirects" }))).toBe(1);
    expect(await attemptsOf(() => Object.assign(new TypeError("UnexpectedRedirect fetching …"), { code: "UnexpectedRedirect" }))).toBe(1);
    // Bun's refused connection is a network error: retried.
    expect(await attemptsOf(() => Object.assign(new TypeError("ECONNREFUSED: Unable to connect."), { code: "ECONNREFUSED" }))).toBe(3);
    expect(await run(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" }))).toBe(3);
    // A simulated network failure with no code (undici's MockAgent `replyWithError`, a test double)
    // is retried as before (review, 2026-11-27).
    expect(await run(new Error("socket hang up"))).toBe(3);
    expect(await run(Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" }))).toBe(3);
  });

  test("against a real server: redirect: 'error' reaches it once, as with fetch (three times before)", async () => {
    const server = await startServer((_req, res) => respond(res, 301, { location: "/elsewhere" }));
    try {
      const api = createThrottledFetch({ limit: 100, interval: 1000, retry: { backoff: { base: 1, cap: 1 } } });
      await expect(api(`${server.url}/moved`, { redirect: "error" })).rejects.toThrow(TypeError);
      expect(server.arrivals.length).toBe(1);
    } finally {
      await server.close();
    }
  });
});

describe("a response rebuilt around its body (maxConcurrent, a refused retry) is fetch's to the caller", () => {
  const view = (r: Response) => {
    let headers = "mutable";
    try {
      r.headers.set("x-added", "1");
    } catch (error) {
      headers = (error as Error).name;
    }
    const clone = r.clone();
    return { status: r.status, url: r.url, redirected: r.redirected, type: r.type, ownKeys: Object.keys(r), headers, clone: { url: clone.url, redirected: clone.redirected, type: clone.type, status: clone.status } };
  };

  test("url, redirected, type and immutable headers, on the prototype (no own keys), kept by clone()", async () => {
    // Red-team (2026-11-27): clone() gave url "", redirected false, type "default"; the headers
    // could be changed; Object.keys listed url, redirected and type.
    const server = await startServer((req, res) => {
      if (req.url === "/old") respond(res, 302, { location: "/new" });
      else if (req.url === "/flaky") respond(res, 500, {}, "boom");
      else respond(res, 200, {}, "hello");
    });
    try {
      const expected = view(await fetch(`${server.url}/old`));
      expect(expected).toMatchObject({ redirected: true, headers: "TypeError", ownKeys: [] });
      const capped = createThrottledFetch({ limit: 1000, interval: 1000, maxConcurrent: 4 });
      const response = await capped(`${server.url}/old`);
      expect(view(response)).toEqual(expected);
      expect(await response.text()).toBe("hello");
      // Its constructor takes fetch's arguments (second review: it took (body, original)).
      const made = new (response.constructor as typeof Response)("x", { status: 201, headers: { a: "1" } });
      expect([made.status, made.headers.get("a"), made.url, made.type, await made.text()]).toEqual([201, "1", "", "default", "x"]);
      // A refused retry hands back the response it had: the same.
      const refusing = createThrottledFetch({ limiter: new WindowLimiter({ limit: 1, interval: 60_000 }), maxWait: 5_000, retry: { backoff: { base: 10 } } });
      const expected500 = view(await fetch(`${server.url}/flaky`));
      const held = await refusing(`${server.url}/flaky`);
      expect(view(held)).toEqual(expected500);
      expect(await held.text()).toBe("boom");
    } finally {
      await server.close();
    }
  });
});

describe("what fetch refuses, refused the same way", () => {
  test("an invalid or relative URL: fetch's TypeError with its cause (scrubbed in place), not a copy without it", async () => {
    const api = createThrottledFetch({ limit: 10, fetch: async () => new Response("x") });
    const error = await api("/api/items").catch((e: unknown) => e) as TypeError & { cause?: { code?: string; input?: string } };
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toBe("Failed to parse URL from /api/items");
    expect(error.cause).toMatchObject({ code: "ERR_INVALID_URL", input: "/api/items" });
    // Secrets are scrubbed down the cause chain.
    const secret = await api("http://user:pw1234567@[bad/x?token=SECRET123").catch((e: unknown) => e) as TypeError & { cause?: { input?: string } };
    expect(`${secret.message} ${secret.cause?.input}`).not.toMatch(/SECRET123|pw1234567/);
  });

  test("a Symbol header value or key: a TypeError, nothing sent (it was sent as \"Symbol(s)\", or the key dropped)", async () => {
    let sent = 0;
    const api = createThrottledFetch({ limit: 10, fetch: async () => (sent++, new Response("x")) });
    await expect(api("https://api.test/", { headers: { "x-s": Symbol("s") } as unknown as HeadersInit })).rejects.toBeInstanceOf(TypeError);
    await expect(api("https://api.test/", { headers: { "x-ok": "1", [Symbol("k")]: "v" } as unknown as HeadersInit })).rejects.toBeInstanceOf(TypeError);
    expect(sent).toBe(0);
  });
});

describe("rebuilt responses take what fetch returns (red-team across runtimes, 2026-11-27)", () => {
  test("a status text beyond Latin-1 (a UTF-8 status line): the call resolves with it, as fetch does", async () => {
    // Every rebuilt response threw a ByteString TypeError: with maxConcurrent, and on a retried 503.
    const server = createServer((req, res) => {
      const status = req.url?.includes("503") ? 503 : 200;
      res.socket!.end(Buffer.concat([Buffer.from(`HTTP/1.1 ${status} `), Buffer.from("Сервис ✓", "utf8"), Buffer.from("\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")]));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const expected = await fetch(`${base}/200`);
      const capped = await createThrottledFetch({ limit: 10, maxConcurrent: 2 })(`${base}/200`);
      expect([capped.status, capped.statusText, await capped.text()]).toEqual([200, expected.statusText, "ok"]);
      const retried = await createThrottledFetch({ limit: 10, retry: { limit: 1, backoff: { base: 1, cap: 1 } } })(`${base}/503`);
      expect([retried.status, retried.statusText]).toEqual([503, expected.statusText]);
    } finally {
      server.close();
    }
  });

  test("a 204, 205 or 304 with an empty body (as Chromium gives them) passes through maxConcurrent", async () => {
    for (const status of [204, 205, 304]) {
      // A body-less status with an empty, non-null body stream: no new Response may carry it.
      const withBody = () => ({ status, statusText: "", ok: true, headers: new Headers(), body: new ReadableStream(), bodyUsed: false, url: "", redirected: false, type: "basic" }) as unknown as Response;
      const api = createThrottledFetch({ limit: 10, maxConcurrent: 1, fetch: async () => withBody() });
      const response = await api("https://api.test/x");
      expect(response.status).toBe(status);
      // The slot is free again: a second call goes at once.
      expect((await api("https://api.test/x")).status).toBe(status);
    }
  });
});

describe("a refused retry of an attempt that failed", () => {
  test("the limiter's error carries the attempt's error as its cause", async () => {
    // Red-team across runtimes (2026-11-27): a MaxWaitExceededError with no cause; the network error was lost.
    const failure = Object.assign(new TypeError("fetch failed"), { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) });
    const api = createThrottledFetch({ limiter: new WindowLimiter({ limit: 1, interval: 60_000 }), maxWait: 5_000, retry: { backoff: { base: 1, cap: 1 } }, fetch: async () => {
      throw failure;
    } });
    const error = await api("https://api.test/x").catch((e: unknown) => e) as Error;
    expect(error.name).toBe("MaxWaitExceededError");
    expect(error.cause).toBe(failure);
  });
});
