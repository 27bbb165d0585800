/**
 * The contract of `t.serve`, proven on every platform: what the throttled-fetch cases rely on when
 * they answer 429s with Retry-After, count requests and read what the client sent. In the browser the
 * server is a relay through the host that serves the page (`serve-browser.ts`), so these cases are
 * also that relay's test.
 */
import { expect } from "./expect.ts";
import { describe, test } from "./harness.ts";

const serve = { needs: ["serve"] } as const;

/** 0, 1, …, 255: every byte value, to catch any text decoding on the way. */
const EVERY_BYTE = Uint8Array.from({ length: 256 }, (_, i) => i);

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe("serve", () => {
  test("the client gets the status, headers and body the handler wrote: 429, 503, 201, 204, 404", async (t) => {
    const multi = new Headers({ "x-multi": "a" });
    multi.append("x-multi", "b");
    const replies: Record<string, () => Response> = {
      "/throttled": () =>
        new Response("slow down", {
          status: 429,
          headers: {
            "Retry-After": "7",
            "RateLimit-Policy": '"burst";q=100;w=60',
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": "1700000000",
            "Content-Type": "text/plain; charset=utf-8",
          },
        }),
      "/unavailable": () =>
        new Response("down for maintenance", { status: 503, headers: { "retry-after": "Wed, 21 Oct 2015 07:28:00 GMT" } }),
      "/created": () => new Response("made", { status: 201, headers: { location: "/items/7" } }),
      "/empty": () => new Response(null, { status: 204, headers: { "x-request-id": "abc-123" } }),
      "/multi": () => new Response("two values", { status: 404, headers: multi }),
    };
    const server = await t.serve((request) => replies[new URL(request.url).pathname]!());
    const get = async (path: string) => {
      const response = await fetch(`${server.url}${path}`);
      return { status: response.status, body: await response.text(), header: (name: string) => response.headers.get(name) };
    };

    const throttled = await get("/throttled");
    expect([throttled.status, throttled.body]).toEqual([429, "slow down"]);
    expect(throttled.header("retry-after")).toBe("7");
    expect(throttled.header("ratelimit-policy")).toBe('"burst";q=100;w=60');
    expect(throttled.header("x-ratelimit-remaining")).toBe("0");
    expect(throttled.header("x-ratelimit-reset")).toBe("1700000000");
    expect(throttled.header("content-type")).toBe("text/plain; charset=utf-8");

    const unavailable = await get("/unavailable");
    expect([unavailable.status, unavailable.body]).toEqual([503, "down for maintenance"]);
    expect(unavailable.header("retry-after")).toBe("Wed, 21 Oct 2015 07:28:00 GMT");

    const created = await get("/created");
    expect([created.status, created.body, created.header("location")]).toEqual([201, "made", "/items/7"]);

    const empty = await get("/empty");
    expect([empty.status, empty.body, empty.header("x-request-id")]).toEqual([204, "", "abc-123"]);

    const several = await get("/multi");
    expect([several.status, several.body, several.header("x-multi")]).toEqual([404, "two values", "a, b"]);
  }, serve);

  test("JSON, UTF-8 text and binary bodies arrive byte for byte, with their content types", async (t) => {
    const payload = { message: "héllo ✓ 🚦", items: [1, 2, 3], nested: { ok: true, none: null } };
    const server = await t.serve((request) => {
      const path = new URL(request.url).pathname;
      if (path === "/json") return Response.json(payload);
      if (path === "/text") return new Response("naïve café — 日本語", { headers: { "content-type": "text/plain; charset=utf-8" } });
      return new Response(EVERY_BYTE, { headers: { "content-type": "application/octet-stream" } });
    });

    const json = await fetch(`${server.url}/json`);
    expect(json.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await json.json()).toEqual(payload);

    const text = await fetch(`${server.url}/text`);
    expect(await text.text()).toBe("naïve café — 日本語");

    const binary = await fetch(`${server.url}/bytes`);
    expect(binary.headers.get("content-type")).toBe("application/octet-stream");
    expect([...new Uint8Array(await binary.arrayBuffer())]).toEqual([...EVERY_BYTE]);
  }, serve);

  test("the handler sees the request's method, path, query, headers and body", async (t) => {
    const seen: Record<string, unknown>[] = [];
    const server = await t.serve(async (request) => {
      const url = new URL(request.url);
      const bytes = new Uint8Array(await request.arrayBuffer());
      seen.push({
        method: request.method,
        path: url.pathname,
        search: url.search,
        page: url.searchParams.get("page"),
        key: request.headers.get("x-api-key"),
        type: request.headers.get("content-type"),
        body: request.headers.get("content-type") === "application/octet-stream" ? [...bytes] : new TextDecoder().decode(bytes),
      });
      return new Response(null, { status: 204, headers: { "x-total": "42" } });
    });
    const send = async (method: string, path: string, init: { headers?: Record<string, string>; body?: BodyInit } = {}) => {
      const response = await fetch(`${server.url}${path}`, { method, ...init });
      await response.arrayBuffer();
      return [response.status, response.headers.get("x-total")];
    };

    const json = JSON.stringify({ name: "widget", tags: ["a", "b"] });
    expect(await send("POST", "/items?page=2&q=a%20b", { headers: { "x-api-key": "k-1", "content-type": "application/json" }, body: json })).toEqual([204, "42"]);
    expect(await send("PUT", "/items/7", { headers: { "content-type": "application/octet-stream" }, body: EVERY_BYTE })).toEqual([204, "42"]);
    expect(await send("PATCH", "/items/7", { headers: { "content-type": "text/plain;charset=UTF-8" }, body: "ünïcode" })).toEqual([204, "42"]);
    expect(await send("DELETE", "/items/7", { headers: { "x-api-key": "k-2" } })).toEqual([204, "42"]);
    expect(await send("HEAD", "/items?page=3")).toEqual([204, "42"]);
    expect(await send("GET", "/")).toEqual([204, "42"]);

    const fields = (method: string, path: string, search: string, page: string | null, key: string | null, type: string | null, body: unknown) =>
      ({ method, path, search, page, key, type, body });
    expect(seen).toEqual([
      fields("POST", "/items", "?page=2&q=a%20b", "2", "k-1", "application/json", json),
      fields("PUT", "/items/7", "", null, null, "application/octet-stream", [...EVERY_BYTE]),
      fields("PATCH", "/items/7", "", null, null, "text/plain;charset=UTF-8", "ünïcode"),
      fields("DELETE", "/items/7", "", null, "k-2", null, ""),
      fields("HEAD", "/items", "?page=3", "3", null, null, ""),
      fields("GET", "/", "", null, null, null, ""),
    ]);
  }, serve);

  test("concurrent requests to two servers are held at once, and each gets its own response", async (t) => {
    // 4 in flight: a browser opens at most 6 connections per origin, so it could never hold more.
    const requests = [["a", 0], ["a", 1], ["b", 0], ["b", 1]] as const;
    let arrived = 0;
    const allIn = deferred();
    // Handlers return in the reverse order of their requests, so an answer matched to the wrong
    // request (by position, or by server) would show.
    const returned = requests.map(() => deferred());
    const handler = (name: string) => async (request: Request) => {
      const n = Number(new URL(request.url).pathname.slice(1));
      const index = requests.findIndex(([s, i]) => s === name && i === n);
      if (++arrived === requests.length) allIn.resolve();
      await allIn.promise; // a server that handled one request at a time would never get past here
      if (index + 1 < requests.length) await returned[index + 1]!.promise;
      returned[index]!.resolve();
      return Response.json({ server: name, n }, { headers: { "x-n": String(n) } });
    };
    const servers = { a: await t.serve(handler("a")), b: await t.serve(handler("b")) };
    expect(servers.a.url === servers.b.url).toBe(false);

    const answers = await Promise.all(
      requests.map(async ([name, n]) => {
        const response = await fetch(`${servers[name].url}/${n}`);
        return { header: response.headers.get("x-n"), body: await response.json() };
      }),
    );
    expect(answers).toEqual(requests.map(([name, n]) => ({ header: String(n), body: { server: name, n } })));
  }, serve);

  test("a handler that throws is answered with a 500 carrying the error's message", async (t) => {
    const server = await t.serve(async (request) => {
      if (new URL(request.url).pathname === "/sync") throw new TypeError("no such item: 7");
      await Promise.resolve();
      throw new RangeError("page out of range: 99");
    }, { handlerMayThrow: true });
    const sync = await fetch(`${server.url}/sync`);
    expect(sync.status).toBe(500);
    expect(await sync.text()).toMatch("TypeError: no such item: 7");
    const async = await fetch(`${server.url}/async`);
    expect(async.status).toBe(500);
    expect(await async.text()).toMatch("RangeError: page out of range: 99");
  }, serve);

  test("an aborted request leaves the server serving; after close() its url refuses requests", async (t) => {
    const arrived = deferred();
    const letGo = deferred();
    const handled = deferred();
    const server = await t.serve(async (request) => {
      if (new URL(request.url).pathname === "/slow") {
        arrived.resolve();
        await letGo.promise;
        handled.resolve();
      }
      return new Response("ok");
    });
    const controller = new AbortController();
    const reason = new Error("caller gave up");
    const slow = fetch(`${server.url}/slow`, { signal: controller.signal });
    await arrived.promise; // the server holds the request; its answer, once the handler ends, goes nowhere
    controller.abort(reason);
    await expect(slow).rejects.toBe(reason);
    letGo.resolve();
    await handled.promise;
    expect(await (await fetch(`${server.url}/after`)).text()).toBe("ok");

    await server.close();
    await expect(fetch(`${server.url}/closed`)).rejects.toBeInstanceOf(TypeError);
  }, serve);
});
