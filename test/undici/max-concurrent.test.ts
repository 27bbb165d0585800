/**
 * sluice/undici: `maxConcurrent` against a real server that refuses (429) any request arriving
 * while N are in flight, and retries / redirect hops keeping their request's place in the queue.
 * Counted server-side; assertions are causal (order and counts at the server).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent, interceptors, request } from "undici";
import { afterEach, describe, expect, test } from "vitest";
import { SmoothLimiter } from "../../src/index.ts";
import { throttle } from "../../src/undici.ts";

let server: Server | undefined;
const agents: Agent[] = [];
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.destroy()));
  if (server !== undefined) {
    server.closeAllConnections();
    await new Promise((resolve) => server!.close(resolve));
    server = undefined;
  }
});

async function listen(handle: (path: string, respond: (status: number, headers?: Record<string, string>) => void) => void) {
  server = createServer((req, res) => {
    req.resume();
    handle(req.url ?? "", (status, headers = {}) => res.writeHead(status, { "content-type": "text/plain", ...headers }).end("body"));
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("throttle({ maxConcurrent })", () => {
  test("50 callers against a server refusing beyond N in flight: 0 refusals, N in flight at most and at least once", async () => {
    const n = 4;
    let inFlight = 0;
    let max = 0;
    let refused = 0;
    const url = await listen((_path, respond) => {
      if (inFlight >= n) {
        refused++;
        respond(429);
        return;
      }
      inFlight++;
      max = Math.max(max, inFlight);
      setTimeout(() => {
        inFlight--;
        respond(200);
      }, 100);
    });
    const agent = new Agent({ connections: 50 }).compose(throttle({ maxConcurrent: n }));
    agents.push(agent as unknown as Agent);
    const statuses = await Promise.all(Array.from({ length: 50 }, async (_, i) => {
      const r = await request(`${url}/work/${i}`, { dispatcher: agent });
      await r.body.text();
      return r.statusCode;
    }));
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(refused).toBe(0);
    expect(max).toBe(n);
  });

  test("a slow answer keeps its slot past slotTimeout: the idle time counts from the headers (red-team, 2026-11-27)", async () => {
    let inFlight = 0;
    let max = 0;
    const url = await listen((_path, respond) => {
      max = Math.max(max, ++inFlight);
      setTimeout(() => {
        inFlight--;
        respond(200);
      }, 400); // four slotTimeouts before the headers
    });
    const agent = new Agent({ connections: 4 }).compose(throttle({ maxConcurrent: 1, slotTimeout: 100 }));
    agents.push(agent as unknown as Agent);
    await Promise.all(Array.from({ length: 3 }, async (_, i) => {
      const r = await request(`${url}/slow/${i}`, { dispatcher: agent });
      await r.body.text();
    }));
    // Before: the idle timer started at the grant, so each slot was freed 100 ms into a 400 ms wait
    // for the headers, and the server had all 3 in flight. (Causal: the next request is sent only
    // after the previous response ended, which the server counted first.)
    expect(max).toBe(1);
  });

  test("invalid maxConcurrent names the option", () => {
    expect(() => throttle({ maxConcurrent: 0 })).toThrow(new RangeError("`maxConcurrent` must be a positive integer, got 0"));
  });
});

describe("a retry (undici's retry interceptor) keeps its request's place", () => {
  test("the retried request is sent before the requests that were queued after it", async () => {
    const order: string[] = [];
    let failed = false;
    const url = await listen((path, respond) => {
      order.push(path);
      if (path === "/flaky" && !failed) {
        failed = true;
        respond(503);
      } else respond(200);
    });
    const limiter = new SmoothLimiter({ limit: 2, interval: 1000 }); // one per 500 ms
    const agent = new Agent().compose(
      throttle({ limiter }),
      interceptors.retry({ maxRetries: 1, minTimeout: 0, timeoutFactor: 1, statusCodes: [503], methods: ["GET"] }),
    );
    agents.push(agent as unknown as Agent);
    const flaky = request(`${url}/flaky`, { dispatcher: agent }).then(async (r) => (await r.body.text(), r.statusCode));
    const others = Array.from({ length: 3 }, (_, i) =>
      request(`${url}/other/${i}`, { dispatcher: agent }).then(async (r) => (await r.body.text(), r.statusCode)));
    expect(await flaky).toBe(200);
    await Promise.all(others);
    // Before: the retry queued behind /other/0–2 and was sent last.
    expect(order).toEqual(["/flaky", "/flaky", "/other/0", "/other/1", "/other/2"]);
  }, 10_000);
});

test("a redirect hop (undici's redirect interceptor) keeps its request's place", async () => {
  const order: string[] = [];
  const url = await listen((path, respond) => {
    order.push(path);
    if (path === "/start") respond(302, { location: "/target" });
    else respond(200);
  });
  const limiter = new SmoothLimiter({ limit: 2, interval: 1000 });
  const agent = new Agent().compose(throttle({ limiter }), interceptors.redirect({ maxRedirections: 1 }));
  agents.push(agent as unknown as Agent);
  const hop = request(`${url}/start`, { dispatcher: agent }).then(async (r) => (await r.body.text(), r.statusCode));
  const others = Array.from({ length: 3 }, (_, i) =>
    request(`${url}/other/${i}`, { dispatcher: agent }).then(async (r) => (await r.body.text(), r.statusCode)));
  expect(await hop).toBe(200);
  await Promise.all(others);
  expect(order).toEqual(["/start", "/target", "/other/0", "/other/1", "/other/2"]);
}, 10_000);

test("a response nobody reads (its body stalled by backpressure) frees its slot after slotTimeout, not before", async () => {
  const big = "x".repeat(8 * 1024 * 1024);
  const sentAt: number[] = [];
  const arrivals: number[] = [];
  server = createServer((req, res) => {
    req.resume();
    arrivals.push(performance.now());
    res.writeHead(200, { "content-type": "text/plain" });
    sentAt.push(performance.now());
    res.end(req.url === "/big" ? big : "small");
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const agent = new Agent().compose(throttle({ maxConcurrent: 1, slotTimeout: 300 }));
  agents.push(agent as unknown as Agent);
  const unread = await request(`${url}/big`, { dispatcher: agent }); // never read
  const next = await request(`${url}/small`, { dispatcher: agent });
  expect(await next.body.text()).toBe("small");
  expect(arrivals).toHaveLength(2);
  // The second could only be sent once the first's slot was freed by its idle timer.
  expect(arrivals[1]! - sentAt[0]!).toBeGreaterThanOrEqual(300 - 2);
  await unread.body.destroy();
}, 10_000);
