/**
 * Against real servers on 127.0.0.1 (node:http), in real time. Assertions rest on causality, not
 * on timing luck: the server logs arrivals with the same performance.now() the client's limiter
 * reads, a response leaves the server after its request arrived, and a grant precedes its request —
 * so the checks below hold on a loaded machine too. Durations are logged for the docs.
 */
import { afterEach, describe, expect, test } from "vitest";
import { SmoothLimiter } from "../../src/limiters/smooth.ts";
import { WindowLimiter } from "../../src/limiters/window.ts";
import { createThrottledFetch } from "../../src/http/throttled-fetch.ts";
import type { ThrottleEvent } from "../../src/http/options.ts";
import { LeakyBucketHandler, maxInWindow, startServer, StrictWindowHandler, type TestServer } from "./support/servers.ts";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const jitter = () => Math.random() * 15; // 0–15 ms server latency per response

describe("a strict 'N per window' server", () => {
  test("50 concurrent callers at exactly the documented limit: every request succeeds, no window over the limit, zero 429s", async () => {
    const LIMIT = 10;
    const WINDOW = 200;
    const handler = new StrictWindowHandler({ limit: LIMIT, window: WINDOW, latency: jitter });
    server = await startServer(handler.handle);
    const api = createThrottledFetch({ limit: LIMIT, interval: WINDOW }); // the documented limit, nothing more
    const started = performance.now();
    const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => api(`${server!.url}/item/${i}`)));
    const elapsed = performance.now() - started;
    expect(responses.map((r) => r.status)).toEqual(Array(50).fill(200));
    await Promise.all(responses.map((r) => r.text()));
    expect(handler.rejected).toBe(0);
    expect(server.arrivals).toHaveLength(50);
    expect(maxInWindow(server.arrivals.map((a) => a.at), WINDOW)).toBeLessThanOrEqual(LIMIT);
    const ideal = (50 / LIMIT - 1) * WINDOW; // the last window opens after 4 full windows
    console.info(`strict window 10/200 ms, 50 callers: ${elapsed.toFixed(0)} ms (ideal ≥ ${ideal} ms, cost of counting from completion ${(100 * (elapsed / ideal - 1)).toFixed(1)} %)`);
  });

  test("a 429 seen by one caller pauses every caller until the server's time, then all complete", async () => {
    const handler = new StrictWindowHandler({ limit: 20, window: 200 });
    server = await startServer((req, res, body, arrival) => {
      // The 12th request is refused, whatever the window: "come back in 400 ms".
      if (server!.arrivals.length === 12) handler.force429(1, 400);
      return handler.handle(req, res, body, arrival);
    });
    const sends: number[] = [];
    const throttles: Array<{ at: number; event: ThrottleEvent }> = [];
    const api = createThrottledFetch({
      limiter: new SmoothLimiter({ limit: 100, interval: 1000 }), // 10 ms apart, well under the server's limit
      fetch: (input, init) => {
        sends.push(performance.now());
        return fetch(input, init);
      },
      onThrottle: (event) => throttles.push({ at: performance.now(), event }),
    });
    const responses = await Promise.all(Array.from({ length: 40 }, (_, i) => api(`${server!.url}/x/${i}`)));
    expect(responses.every((r) => r.status === 200)).toBe(true);
    await Promise.all(responses.map((r) => r.text()));
    expect(throttles).toHaveLength(1);
    const { at, event } = throttles[0]!;
    expect(event).toMatchObject({ reason: "throttled", delay: 400, paused: 400, attempt: 1 });
    const after = sends.filter((t) => t > at);
    expect(after.length).toBeGreaterThanOrEqual(20); // most callers were still waiting: all of them paused
    // Nobody — the retrying caller included — sent anything during the pause (1 ms for the hook call itself).
    expect(Math.min(...after)).toBeGreaterThanOrEqual(at + 400 - 1);
    expect(server.arrivals.filter((a) => a.status === 429)).toHaveLength(1);
    expect(server.arrivals).toHaveLength(41);
    // Resumed at the limiter's pace: no burst of waiting callers when the pause ended.
    const resumed = after.slice(0, 10);
    for (let i = 1; i < resumed.length; i++) expect(resumed[i]! - resumed[i - 1]!).toBeGreaterThanOrEqual(9);
  });

  test("Retry-After in whole seconds on a real 429 is honoured: the retry arrives no earlier than asked", async () => {
    server = await startServer((_req, res) => {
      const first = server!.arrivals.length === 1;
      res.writeHead(first ? 429 : 200, first ? { "retry-after": "1" } : {});
      res.end(first ? "slow down" : "ok");
    });
    const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 10 }) });
    const response = await api(`${server.url}/once`);
    expect(response.status).toBe(200);
    const [first, second] = server.arrivals;
    expect(second!.at - first!.sentAt).toBeGreaterThanOrEqual(1000);
  });
});

describe("an nginx limit_req server (leaky bucket)", () => {
  test("rate=10r/s burst=5 ↔ SmoothLimiter 10/s with burst 3: two slots of headroom absorb jitter, zero 503s", async () => {
    const handler = new LeakyBucketHandler(10, 5);
    server = await startServer(handler.handle);
    const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 10, interval: 1000, burst: 3 }) });
    const started = performance.now();
    const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => api(`${server!.url}/r/${i}`)));
    const elapsed = performance.now() - started;
    expect(responses.every((r) => r.status === 200)).toBe(true);
    await Promise.all(responses.map((r) => r.text()));
    expect(handler.rejected).toBe(0);
    // 4 at once (burst 3 + 1), then one every 100 ms: the sustained rate is the server's, exactly.
    expect(elapsed).toBeGreaterThanOrEqual(15 * 100 - 5);
    console.info(`nginx rate=10r/s burst=5, SmoothLimiter burst 3: 20 requests in ${elapsed.toFixed(0)} ms (ideal 1500 ms)`);
  });
});

describe("real sockets", () => {
  test("aborting while the caller reads the body aborts the read, as with fetch", async () => {
    server = await startServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("first part;");
      // never ends: the client aborts
    });
    const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 10 }) });
    const controller = new AbortController();
    const response = await api(`${server.url}/stream`, { signal: controller.signal });
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("first part;");
    controller.abort(new Error("user navigated away"));
    await expect(reader.read()).rejects.toThrow("user navigated away");
  });

  test("a retried response's body is cancelled, freeing its connection for the retry", async () => {
    server = await startServer((_req, res) => {
      if (server!.arrivals.length === 1) {
        res.writeHead(503, { "retry-after": "0" });
        res.write("x".repeat(64 * 1024)); // a large error page that never finishes
        return;
      }
      res.end("ok");
    });
    const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 10 }), retry: { backoff: { base: 10 } } });
    const response = await api(`${server.url}/big`);
    expect(await response.text()).toBe("ok");
    expect(server.arrivals).toHaveLength(2);
  });
});

describe("ky shares the limiter", () => {
  test("ky.create({ fetch: api, retry: 0 }) sends every request through the throttled fetch", async () => {
    const { default: ky } = await import("ky");
    const handler = new StrictWindowHandler({ limit: 3, window: 150 });
    server = await startServer(handler.handle);
    const api = createThrottledFetch({ limit: 3, interval: 150 });
    const client = ky.create({ prefix: server.url, fetch: api, retry: 0 });
    const texts = await Promise.all(Array.from({ length: 9 }, (_, i) => client.get(`k/${i}`).text()));
    expect(texts).toEqual(Array(9).fill("ok"));
    expect(handler.rejected).toBe(0);
    expect(maxInWindow(server.arrivals.map((a) => a.at), 150)).toBeLessThanOrEqual(3);
  });
});
