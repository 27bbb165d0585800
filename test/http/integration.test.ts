/**
 * Against real servers on 127.0.0.1 (node:http), in real time. Assertions rest on causality, not
 * on timing luck: the server logs arrivals with the same performance.now() the client's limiter
 * reads, a response leaves the server after its request arrived, and a grant precedes its request.
 * Where the client paces by the server's own rule, it counts each slot from the RESPONSE
 * (`countFrom: "completion"`), so latency can only add room: request B, sent in the slot request A
 * freed, arrives at B.at ≥ grant(B) ≥ response(A) + window > A.at + window, judged on the server's
 * clock. Where the client paces by grant time (SmoothLimiter), it runs at half the server's limit,
 * and each test says why that margin covers delivery delays on a loaded machine. Durations are
 * logged for the docs, never asserted against an upper bound.
 */
import { afterEach, describe, expect, test } from "vitest";
import type { Limiter } from "../../src/limiters/limiter.ts";
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
    // The server allows 20 per 200 ms; the client sends one every 20 ms, half that. Grants are 20 ms
    // apart, so 21 arrivals inside one 200 ms window (a 429 the test did not force) would need a
    // request to take over 200 ms from its grant to the server while the same event loop granted ten
    // later ones: loopback delivery in one process takes a few loop turns, not ten timer periods.
    // (At exactly the server's rate — one every 10 ms — a 1 ms delivery delay was enough: it failed
    // about once in 8 full runs.)
    const handler = new StrictWindowHandler({ limit: 20, window: 200 });
    server = await startServer((req, res, body, arrival) => {
      // The 12th request is refused, whatever the window: "come back in 400 ms".
      if (server!.arrivals.length === 12) handler.force429(1, 400);
      return handler.handle(req, res, body, arrival);
    });
    // The wrapper records when the pause came and when each attempt was granted (its task starts
    // at the grant).
    const SPACING = 20;
    const inner = new SmoothLimiter({ limit: 1000 / SPACING, interval: 1000 });
    const grants: number[] = [];
    let pausedAt = Infinity;
    const limiter: Limiter = {
      acquire: (permits, options) => inner.acquire(permits, options),
      tryAcquire: (permits) => inner.tryAcquire(permits),
      schedule: (task, options) => inner.schedule(() => {
        grants.push(performance.now());
        return task();
      }, options),
      pause: (ms) => {
        pausedAt = Math.min(pausedAt, performance.now());
        inner.pause(ms);
      },
    };
    const throttles: ThrottleEvent[] = [];
    const api = createThrottledFetch({ limiter, onThrottle: (event) => throttles.push(event) });
    // 60 callers: the 48 queued behind the 12th keep the limiter busy for ~960 ms, so even a slow
    // round trip for the 429 leaves many callers waiting when the pause comes.
    const responses = await Promise.all(Array.from({ length: 60 }, (_, i) => api(`${server!.url}/x/${i}`)));
    expect(responses.every((r) => r.status === 200)).toBe(true);
    await Promise.all(responses.map((r) => r.text()));
    expect(throttles).toMatchObject([{ reason: "throttled", delay: 400, paused: 400, attempt: 1 }]);
    expect(server.arrivals.filter((a) => a.status === 429)).toHaveLength(1);
    expect(server.arrivals).toHaveLength(61);
    const after = grants.filter((t) => t > pausedAt);
    expect(after.length).toBeGreaterThanOrEqual(10); // callers still waiting when the 429 came: all paused
    // Nobody — the retrying caller included — was let through during the pause, and afterwards they
    // went at the limiter's pace, not as a herd: the k-th no earlier than SPACING ms after the (k−1)-th slot.
    after.forEach((t, k) => expect(t).toBeGreaterThanOrEqual(pausedAt + 400 + SPACING * k));
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
    // The client heard the 429 after it arrived, and waited 1 s from then.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1000);
  });
});

describe("an nginx limit_req server (leaky bucket)", () => {
  test("rate=5r/s burst=5 ↔ SmoothLimiter 5/s with burst 2: three slots of headroom absorb jitter, zero 503s", async () => {
    // A rejection would need one request to reach the server 600 ms later than a request sent after
    // it: three 200 ms slots of headroom, far beyond timer jitter or a stall on a loaded machine.
    const handler = new LeakyBucketHandler(5, 5);
    server = await startServer(handler.handle);
    const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 5, interval: 1000, burst: 2 }) });
    const started = performance.now();
    const responses = await Promise.all(Array.from({ length: 13 }, (_, i) => api(`${server!.url}/r/${i}`)));
    const elapsed = performance.now() - started;
    expect(responses.every((r) => r.status === 200)).toBe(true);
    await Promise.all(responses.map((r) => r.text()));
    expect(handler.rejected).toBe(0);
    // 3 at once (burst 2 + 1), then one every 200 ms: the sustained rate is the server's, exactly.
    expect(elapsed).toBeGreaterThanOrEqual(10 * 200 - 5);
    console.info(`nginx rate=5r/s burst=5, SmoothLimiter burst 2: 13 requests in ${elapsed.toFixed(0)} ms (ideal 2000 ms)`);
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
