/**
 * sluice/undici against real node:http servers on 127.0.0.1, in real time, on Node 24 with undici 8.
 *
 * Assertions rest on causality, not timing luck: the server logs arrivals with the same
 * performance.now() the limiter reads; a window counted from completion starts each slot after the
 * response arrived, hence after the server logged the request; a grant precedes its request. So the
 * checks hold on a loaded machine too. Durations are logged for the docs.
 */
import ky from "ky";
import {
  Agent,
  Dispatcher1Wrapper,
  fetch as undiciFetch,
  interceptors,
  request,
  setGlobalDispatcher,
} from "undici";
import { afterEach, describe, expect, test, vi } from "vitest";
import { MaxWaitExceededError, QueueFullError, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import { throttle } from "../../src/undici.ts";
import { maxInWindow, respond, startServer, StrictWindowHandler, type TestServer } from "../http/support/servers.ts";
import { globalSlots, recording, withGlobalDispatcher } from "./support/global.ts";

const slotsBefore = globalSlots();
let server: TestServer | undefined;
const agents: Agent[] = [];
/** A new Agent, destroyed after the test. */
const newAgent = (options?: ConstructorParameters<typeof Agent>[0]) => {
  const agent = new Agent({ keepAliveTimeout: 500, ...options });
  agents.push(agent);
  return agent;
};

afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.destroy()));
  await server?.close();
  server = undefined;
  expect(globalSlots()).toEqual(slotsBefore); // every test put the global dispatcher back
});

const jitter = () => Math.random() * 15; // 0–15 ms server latency per response

describe("one limiter, every client of the process", () => {
  test("50 concurrent requests each through undici.request, undici fetch, Node's global fetch and ky: never over the strict limit, all succeed", async () => {
    const LIMIT = 25;
    const WINDOW = 250;
    const handler = new StrictWindowHandler({ limit: LIMIT, window: WINDOW, latency: jitter });
    server = await startServer(handler.handle);
    const url = server.url;
    const limiter = new WindowLimiter({ limit: LIMIT, interval: WINDOW, countFrom: "completion" });
    const seen = new Set<string>(); // paths the interceptor paced
    const agent = newAgent().compose(throttle({ limiter, permits: (r) => (seen.add(r.path), 1) }));

    const started = performance.now();
    const statuses = await withGlobalDispatcher(() => setGlobalDispatcher(agent), () =>
      Promise.all(Array.from({ length: 50 }, (_, i) => [
        request(`${url}/request/${i}`).then(async (r) => (await r.body.text(), r.statusCode)),
        undiciFetch(`${url}/undici-fetch/${i}`).then(async (r) => (await r.text(), r.status)),
        fetch(`${url}/node-fetch/${i}`).then(async (r) => (await r.text(), r.status)),
        ky.get(`${url}/ky/${i}`, { retry: 0 }).then(async (r) => (await r.text(), r.status)),
      ]).flat()));
    const elapsed = performance.now() - started;

    expect(statuses).toEqual(Array(200).fill(200));
    expect(handler.rejected).toBe(0);
    expect(server.arrivals).toHaveLength(200);
    expect(maxInWindow(server.arrivals.map((a) => a.at), WINDOW)).toBeLessThanOrEqual(LIMIT);
    for (const client of ["request", "undici-fetch", "node-fetch", "ky"]) {
      expect([...seen].filter((p) => p.startsWith(`/${client}/`))).toHaveLength(50); // all four went through it
    }
    const ideal = (200 / LIMIT - 1) * WINDOW;
    console.info(`undici interceptor, 4 clients × 50 at ${LIMIT}/${WINDOW} ms: ${elapsed.toFixed(0)} ms (ideal ≥ ${ideal} ms)`);
  });

  test("a 429 seen by one client pauses all four until the server's time; with undici's retry interceptor every request completes", async () => {
    const handler = new StrictWindowHandler({ limit: 100, window: 1000 });
    server = await startServer((req, res, body, arrival) => {
      if (server!.arrivals.length === 12) handler.force429(1, 400); // "come back in 400 ms"
      return handler.handle(req, res, body, arrival);
    });
    const url = server.url;
    const limiter = recording(new SmoothLimiter({ limit: 100, interval: 1000 })); // 10 ms apart
    const agent = newAgent().compose(throttle({ limiter }), interceptors.retry({ minTimeout: 10, maxRetries: 2 }));

    const statuses = await withGlobalDispatcher(() => setGlobalDispatcher(agent), () =>
      Promise.all(Array.from({ length: 10 }, (_, i) => [
        request(`${url}/request/${i}`).then(async (r) => (await r.body.text(), r.statusCode)),
        undiciFetch(`${url}/undici-fetch/${i}`).then(async (r) => (await r.text(), r.status)),
        fetch(`${url}/node-fetch/${i}`).then(async (r) => (await r.text(), r.status)),
        ky.get(`${url}/ky/${i}`, { retry: 0 }).then(async (r) => (await r.text(), r.status)),
      ]).flat()));

    expect(statuses).toEqual(Array(40).fill(200));
    expect(server.arrivals.filter((a) => a.status === 429)).toHaveLength(1);
    expect(server.arrivals).toHaveLength(41); // the refused one was retried once, by undici
    expect(limiter.grants).toHaveLength(41); // …and its retry took a permit like any request
    expect(limiter.pauses).toMatchObject([{ ms: 400 }]);
    const pausedAt = limiter.pauses[0]!.at;
    const after = limiter.grants.filter((t) => t > pausedAt);
    expect(after.length).toBeGreaterThanOrEqual(10); // requests still queued when the 429 came: all held
    // Nobody — the retry included — was let through during the pause; afterwards, the limiter's pace.
    after.forEach((t, k) => expect(t).toBeGreaterThanOrEqual(pausedAt + 400 + 10 * k));
  });
});

describe("composing with undici's retry interceptor", () => {
  /** 503 + Retry-After: 0 for the first two attempts of each path, then 200. */
  async function flakyServer(): Promise<TestServer> {
    const attempts = new Map<string, number>();
    return startServer((req, res) => {
      const n = (attempts.get(req.url!) ?? 0) + 1;
      attempts.set(req.url!, n);
      if (n <= 2) respond(res, 503, { "retry-after": "0" }, "busy");
      else respond(res, 200, {}, "ok");
    });
  }

  test("compose(throttle(…), interceptors.retry()) — retry outside: every attempt takes permits", async () => {
    server = await flakyServer();
    const limiter = recording(new SmoothLimiter({ limit: 1000 }));
    const agent = newAgent().compose(throttle({ limiter }), interceptors.retry({ minTimeout: 1 }));
    const r = await request(`${server.url}/a`, { dispatcher: agent });
    expect([r.statusCode, await r.body.text()]).toEqual([200, "ok"]);
    expect(server.arrivals.map((a) => a.status)).toEqual([503, 503, 200]);
    expect(limiter.grants).toHaveLength(3);
  });

  test("compose(interceptors.retry(), throttle(…)) — retry inside: retries bypass the limiter and its 503s are never seen", async () => {
    server = await flakyServer();
    const limiter = recording(new SmoothLimiter({ limit: 1000 }));
    const agent = newAgent().compose(interceptors.retry({ minTimeout: 1 }), throttle({ limiter }));
    const r = await request(`${server.url}/a`, { dispatcher: agent });
    expect([r.statusCode, await r.body.text()]).toEqual([200, "ok"]);
    expect(server.arrivals).toHaveLength(3);
    expect(limiter.grants).toHaveLength(1); // one permit for three requests on the wire
  });

  test("throwOnError (undici's default): when retries run out on 429, request() and fetch() REJECT; each attempt took permits", async () => {
    server = await startServer((_req, res) => respond(res, 429, { "retry-after": "0" }, "slow down"));
    const limiter = recording(new SmoothLimiter({ limit: 1000 }));
    const agent = newAgent().compose(throttle({ limiter }), interceptors.retry({ minTimeout: 1, maxRetries: 2 }));
    const viaRequest = await request(`${server.url}/r`, { dispatcher: agent }).then(() => undefined, (e: unknown) => e);
    expect(viaRequest).toMatchObject({ name: "RequestRetryError", code: "UND_ERR_REQ_RETRY", statusCode: 429 });
    const viaFetch = await undiciFetch(`${server.url}/f`, { dispatcher: agent }).then(() => undefined, (e: unknown) => e);
    expect(viaFetch).toBeInstanceOf(TypeError);
    expect((viaFetch as Error).cause).toMatchObject({ code: "UND_ERR_REQ_RETRY", statusCode: 429 });
    expect(server.arrivals).toHaveLength(6); // 1 + maxRetries, for each
    expect(limiter.grants).toHaveLength(6);
  });

  test("throwOnError: false — the caller gets the last 429 as a response", async () => {
    server = await startServer((_req, res) => respond(res, 429, { "retry-after": "0" }, "slow down"));
    const limiter = recording(new SmoothLimiter({ limit: 1000 }));
    const agent = newAgent().compose(throttle({ limiter }), interceptors.retry({ minTimeout: 1, maxRetries: 2, throwOnError: false }));
    const r = await request(`${server.url}/r`, { dispatcher: agent });
    expect([r.statusCode, await r.body.text()]).toEqual([429, "slow down"]);
    const f = await undiciFetch(`${server.url}/f`, { dispatcher: agent });
    expect([f.status, await f.text()]).toEqual([429, "slow down"]);
    expect(server.arrivals).toHaveLength(6);
    expect(limiter.grants).toHaveLength(6);
  });
});

describe("composing with undici's redirect interceptor", () => {
  test("compose(throttle(…), interceptors.redirect()) — every hop of a redirect takes permits", async () => {
    server = await startServer((req, res) => {
      if (req.url === "/old") respond(res, 301, { location: "/older" });
      else if (req.url === "/older") respond(res, 302, { location: "/new" });
      else respond(res, 200, {}, "moved here");
    });
    const limiter = recording(new SmoothLimiter({ limit: 1000 }));
    const agent = newAgent().compose(throttle({ limiter }), interceptors.redirect({ maxRedirections: 3 }));
    const r = await request(`${server.url}/old`, { dispatcher: agent });
    expect([r.statusCode, await r.body.text()]).toEqual([200, "moved here"]);
    expect(server.arrivals.map((a) => a.path)).toEqual(["/old", "/older", "/new"]);
    expect(limiter.grants).toHaveLength(3);
  });
});

describe("per call: fetch(url, { dispatcher })", () => {
  /** Three requests through `call`, 1 per 300 ms counted from completion: arrivals ≥ 300 ms apart. */
  async function paced(call: (url: string) => Promise<{ status: number; text(): Promise<string> }>): Promise<number[]> {
    server = await startServer((_req, res) => respond(res, 200, {}, "ok"));
    const url = server.url;
    const statuses = await Promise.all([1, 2, 3].map((i) => call(`${url}/${i}`).then(async (r) => (await r.text(), r.status))));
    expect(statuses).toEqual([200, 200, 200]);
    const at = server.arrivals.map((a) => a.at).sort((a, b) => a - b);
    return at.slice(1).map((t, i) => t - at[i]!);
  }
  const limiter = () => new WindowLimiter({ limit: 1, interval: 300, countFrom: "completion" });

  test("undici's fetch takes the composed agent as it is", async () => {
    const agent = newAgent().compose(throttle({ limiter: limiter() }));
    const gaps = await paced((url) => undiciFetch(url, { dispatcher: agent }));
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(300);
  });

  test("Node's own fetch takes it wrapped in undici 8's Dispatcher1Wrapper (Node's fetch speaks the legacy handler API)", async () => {
    const agent = newAgent().compose(throttle({ limiter: limiter() }));
    const dispatcher = new Dispatcher1Wrapper(agent);
    const gaps = await paced((url) => fetch(url, { dispatcher } as RequestInit));
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(300);
  });

  test("Node's own fetch given the bare undici 8 agent fails at once with a TypeError naming the fix", async () => {
    server = await startServer((_req, res) => respond(res, 200, {}, "ok"));
    const agent = newAgent().compose(throttle({ limiter: limiter() }));
    const error = await fetch(server.url, { dispatcher: agent } as RequestInit).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect(String((error as Error).cause)).toMatch(/legacy handler.*Dispatcher1Wrapper/);
    expect(server.arrivals).toHaveLength(0);
  });
});

describe("abort, silence and sockets", () => {
  test("aborted while queued: request() rejects with the reason, fetch with an AbortError; nothing was sent or taken", async () => {
    server = await startServer((_req, res) => respond(res, 200, {}, "ok"));
    const url = server.url;
    const limiter = new WindowLimiter({ limit: 1, interval: 10_000 });
    const agent = newAgent().compose(throttle({ limiter }));
    await (await request(`${url}/first`, { dispatcher: agent })).body.text(); // the window's one permit

    const controller = new AbortController();
    const reason = new Error("changed my mind");
    const pending = [
      request(`${url}/r`, { dispatcher: agent, signal: controller.signal }),
      undiciFetch(`${url}/f`, { dispatcher: agent, signal: controller.signal }),
      withGlobalDispatcher(() => setGlobalDispatcher(agent), () => fetch(`${url}/g`, { signal: controller.signal })),
    ].map((p) => p.then(() => "resolved", (e: unknown) => e));
    while (limiter.queued < 3) await new Promise((resolve) => setTimeout(resolve, 5)); // fetch dispatches after a few ticks

    controller.abort(reason);
    const [viaRequest, viaFetch, viaNodeFetch] = await Promise.all(pending);
    expect(viaRequest).toBe(reason);
    expect(viaFetch).toBe(reason); // fetch rejects with the signal's reason
    expect(viaNodeFetch).toBe(reason);
    expect(limiter.queued).toBe(0);
    expect(server.arrivals.map((a) => a.path)).toEqual(["/first"]);
  });

  test("a predicted wait beyond maxWait: request() rejects with MaxWaitExceededError, fetch with TypeError('fetch failed', { cause })", async () => {
    server = await startServer((_req, res) => respond(res, 200, {}, "ok"));
    const limiter = new WindowLimiter({ limit: 1, interval: 10_000 });
    const agent = newAgent().compose(throttle({ limiter, maxWait: 100 }));
    await (await request(`${server.url}/first`, { dispatcher: agent })).body.text();
    const viaRequest = await request(`${server.url}/r`, { dispatcher: agent }).then(() => undefined, (e: unknown) => e);
    expect(viaRequest).toBeInstanceOf(MaxWaitExceededError);
    expect((viaRequest as MaxWaitExceededError).retryAfter).toBeGreaterThan(9000);
    const viaFetch = await undiciFetch(`${server.url}/f`, { dispatcher: agent }).then(() => undefined, (e: unknown) => e);
    expect(viaFetch).toBeInstanceOf(TypeError);
    expect((viaFetch as Error).cause).toBeInstanceOf(MaxWaitExceededError);
    expect(server.arrivals).toHaveLength(1);
    expect(limiter.queued).toBe(0);
  });

  test("a full queue (the limiter's maxQueue): request() rejects with QueueFullError, fetch with it as the cause", async () => {
    server = await startServer((_req, res) => respond(res, 200, {}, "ok"));
    const limiter = new WindowLimiter({ limit: 1, interval: 10_000, maxQueue: 0 });
    const agent = newAgent().compose(throttle({ limiter }));
    await (await request(`${server.url}/first`, { dispatcher: agent })).body.text();
    expect(await request(`${server.url}/r`, { dispatcher: agent }).then(() => undefined, (e: unknown) => e)).toBeInstanceOf(QueueFullError);
    const viaFetch = await undiciFetch(`${server.url}/f`, { dispatcher: agent }).then(() => undefined, (e: unknown) => e);
    expect((viaFetch as Error).cause).toBeInstanceOf(QueueFullError);
    expect(server.arrivals).toHaveLength(1);
  });

  test("a server that never answers holds its slot until undici's headersTimeout fails it; then the next request goes", async () => {
    server = await startServer((req, res) => {
      if (req.url !== "/silent") respond(res, 200, {}, "ok");
    });
    const limiter = recording(new WindowLimiter({ limit: 1, interval: 100, countFrom: "completion" }));
    const agent = newAgent({ headersTimeout: 300 }).compose(throttle({ limiter }));
    const silent = request(`${server.url}/silent`, { dispatcher: agent }).then(() => undefined, (e: unknown) => e);
    const next = request(`${server.url}/next`, { dispatcher: agent });
    expect(await silent).toMatchObject({ code: "UND_ERR_HEADERS_TIMEOUT" });
    expect((await next).statusCode).toBe(200);
    const [silentGrant, nextGrant] = limiter.grants as [number, number];
    const silentEnd = limiter.ends[0]!;
    // Held while the server was silent (undici's timer, on libuv's whole-ms clock, may fire ≤ 1 ms early)…
    expect(silentEnd - silentGrant).toBeGreaterThanOrEqual(299);
    expect(nextGrant).toBeGreaterThanOrEqual(silentEnd + 100); // …and its slot counted from the failure
    expect(server.arrivals.find((a) => a.path === "/next")!.at).toBeGreaterThanOrEqual(nextGrant);
  });

  test("aborting a request in flight to a silent server releases its slot at once", async () => {
    server = await startServer((req, res) => {
      if (req.url !== "/silent") respond(res, 200, {}, "ok");
    });
    const limiter = new WindowLimiter({ limit: 1, interval: 100, countFrom: "completion" });
    const agent = newAgent().compose(throttle({ limiter }));
    const controller = new AbortController();
    const silent = request(`${server.url}/silent`, { dispatcher: agent, signal: controller.signal }).then(() => undefined, (e: unknown) => e);
    const next = request(`${server.url}/next`, { dispatcher: agent });
    // Stage: /silent is in flight (the server holds it) and /next waits for its slot. Then let the
    // slot's 100 ms pass from the grant, so a slot counted from the grant (not the completion) would
    // already have let /next go: holding it is what this test sees.
    await vi.waitFor(() => expect(server!.arrivals.map((a) => a.path)).toEqual(["/silent"]), { interval: 1 });
    const silentAt = server.arrivals[0]!.at;
    while (performance.now() < silentAt + 100) await new Promise((resolve) => setTimeout(resolve, silentAt + 100 - performance.now()));
    expect(server.arrivals.map((a) => a.path)).toEqual(["/silent"]);
    expect(limiter.queued).toBe(1);
    const abortedAt = performance.now();
    controller.abort(new Error("enough"));
    expect(await silent).toMatchObject({ message: "enough" });
    expect((await next).statusCode).toBe(200);
    expect(server.arrivals.find((a) => a.path === "/next")!.at).toBeGreaterThanOrEqual(abortedAt + 100);
  });

  test("no socket leaks: 429s with large bodies, retried by undici, over one connection — every body drained, the pool idle after", async () => {
    const big = "x".repeat(256 * 1024); // larger than the socket buffers: an undrained body would stall the connection
    const attempts = new Map<string, number>();
    let connections = 0;
    server = await startServer((req, res) => {
      const n = (attempts.get(req.url!) ?? 0) + 1;
      attempts.set(req.url!, n);
      if (n === 1) respond(res, 429, { "retry-after": "0" }, big);
      else respond(res, 200, {}, "ok");
    });
    const limiter = new SmoothLimiter({ limit: 1000 });
    const agent = newAgent({ connections: 1 });
    const dispatcher = agent.compose(throttle({ limiter }), interceptors.retry({ minTimeout: 1 }));
    // undici reuses a socket only if the server's Keep-Alive timeout exceeds its 2 s safety margin.
    server.server.keepAliveTimeout = 10_000;
    server.server.on("connection", () => connections++);
    const statuses = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      undiciFetch(`${server!.url}/${i}`, { dispatcher }).then(async (r) => (await r.text(), r.status))));
    expect(statuses).toEqual(Array(20).fill(200));
    expect(server.arrivals).toHaveLength(40);
    // One connection per origin makes a Client: nothing running or pending, its one socket still open.
    expect(agent.stats[server.url]).toMatchObject({ connected: true, pending: 0, running: 0, size: 0 });
    expect(connections).toBe(1); // one keep-alive socket carried all 40 exchanges
  });
});
