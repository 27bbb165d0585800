// Red team (sluice/undici): throttle() against a real node:http server, counted server-side.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent, fetch as ufetch, interceptors } from "undici";
import { afterEach, describe, expect, test } from "vitest";
import { WindowLimiter } from "../../src/index.ts";
import { throttle } from "../../src/undici.ts";

interface Srv {
  url: string;
  paths: string[];
  inFlight: number;
  maxInFlight: number;
  arrivalsInPause: number;
  close(): Promise<void>;
}
const servers: Srv[] = [];
afterEach(async () => {
  while (servers.length > 0) await servers.pop()!.close();
});

async function startServer(handle: (path: string, srv: Srv, res: import("node:http").ServerResponse) => void): Promise<Srv> {
  let pauseUntil = -Infinity;
  const srv: Srv = { url: "", paths: [], inFlight: 0, maxInFlight: 0, arrivalsInPause: 0, close: async () => {} };
  const server = createServer((req, res) => {
    if (performance.now() < pauseUntil) srv.arrivalsInPause++;
    srv.paths.push(req.url ?? "");
    srv.inFlight++;
    srv.maxInFlight = Math.max(srv.maxInFlight, srv.inFlight);
    res.on("close", () => srv.inFlight--);
    const writeHead = res.writeHead.bind(res);
    res.writeHead = ((status: number, ...rest: unknown[]) => {
      if (status === 429) pauseUntil = performance.now() + 200;
      return (writeHead as (...a: unknown[]) => typeof res)(status, ...rest);
    }) as typeof res.writeHead;
    req.resume();
    req.on("end", () => handle(req.url ?? "", srv, res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  srv.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  srv.close = () => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
  servers.push(srv);
  return srv;
}

describe("red team: sluice/undici throttle()", () => {
  test("a caller's abort while queued: rejects with its reason, never reaches the server, leaves the slot to the next", async () => {
    const srv = await startServer((_p, _s, res) => res.end("ok"));
    const limiter = new WindowLimiter({ limit: 1, interval: 300, countFrom: "completion" });
    const agent = new Agent().compose(throttle({ limiter }));
    try {
      await (await ufetch(`${srv.url}/a`, { dispatcher: agent })).text();
      const controller = new AbortController();
      const reason = new Error("mine");
      const queued = ufetch(`${srv.url}/x`, { dispatcher: agent, signal: controller.signal });
      const next = ufetch(`${srv.url}/y`, { dispatcher: agent });
      controller.abort(reason);
      await expect(queued).rejects.toBe(reason);
      await (await next).text();
      expect(srv.paths).toEqual(["/a", "/y"]);
      expect(limiter.stats().granted).toBe(2);
    } finally {
      await agent.close();
    }
  });

  test("a request whose caller aborts at its grant (nothing sent) gives its window slot back", async () => {
    // README: "an aborted … request consumes no capacity". X waits behind A (1 per 3 s, counted from
    // completion); its caller aborts at X's grant (synchronously, from a `grant` listener), before
    // anything is sent. Model: nothing was sent, so the slot is free: tryAcquire() answers 0.
    // Regression: was ~3000 (the slot spent) — src/integrations/undici/throttle.ts sendNow: "Aborted
    // between the grant and this task: the permits are spent"; now it rejects with `Unstarted`.
    const srv = await startServer((_p, _s, res) => res.end("ok"));
    const limiter = new WindowLimiter({ limit: 1, interval: 3000, countFrom: "completion" });
    const agent = new Agent().compose(throttle({ limiter }));
    try {
      await (await ufetch(`${srv.url}/a`, { dispatcher: agent })).text();
      const controller = new AbortController();
      const reason = new Error("mine");
      const x = ufetch(`${srv.url}/x`, { dispatcher: agent, signal: controller.signal });
      limiter.events.addEventListener("grant", () => controller.abort(reason), { once: true });
      await expect(x).rejects.toBe(reason);
      expect(srv.paths).toEqual(["/a"]);
      expect(limiter.tryAcquire()).toBe(0);
    } finally {
      await agent.close();
    }
  }, 20_000);

  test("a 429 with retry-after-ms seen by one request pauses the others (only requests already in flight arrive during it)", async () => {
    let first = true;
    const srv = await startServer((path, _s, res) => {
      if (path === "/r0" && first) {
        first = false;
        res.writeHead(429, { "retry-after-ms": "200" });
        return res.end("no");
      }
      res.writeHead(200);
      res.end("ok");
    });
    const limiter = new WindowLimiter({ limit: 1000, interval: 1000, countFrom: "completion" });
    const agent = new Agent().compose(throttle({ limiter, maxConcurrent: 3 }), interceptors.retry({ maxRetries: 2, minTimeout: 1, statusCodes: [429] }));
    try {
      const statuses = await Promise.all(Array.from({ length: 20 }, async (_, i) => {
        const r = await ufetch(`${srv.url}/r${i}`, { dispatcher: agent });
        await r.text();
        return r.status;
      }));
      expect(statuses.every((s) => s === 200)).toBe(true);
      expect(srv.paths.filter((p) => p === "/r0")).toHaveLength(2);
      expect(srv.arrivalsInPause).toBeLessThanOrEqual(2); // maxConcurrent − 1 others in flight
      expect(srv.maxInFlight).toBeLessThanOrEqual(3);
    } finally {
      await agent.close();
    }
  });

  test("errors reach the caller without the query or header values", async () => {
    const srv = await startServer((_p, _s, res) => res.end("ok"));
    const limiter = new WindowLimiter({ limit: 5, interval: 1000, countFrom: "completion" });
    const agent = new Agent().compose(throttle({
      limiter,
      permits: (r) => {
        throw new Error(`no permits for ${String(r.origin)}${String(r.path)} with ${JSON.stringify(r.headers)}`);
      },
    }));
    try {
      const error = await ufetch(`${srv.url}/p?key=QSECRET123#frag-SECRET`, {
        dispatcher: agent,
        headers: { authorization: "Bearer HSECRET456" },
      }).then(() => undefined, (e: unknown) => e);
      const text = JSON.stringify(chain(error));
      expect(text).not.toMatch(/QSECRET123|HSECRET456|frag-SECRET/);
      expect(text).toContain("no permits");
      expect(srv.paths).toEqual([]);
    } finally {
      await agent.close();
    }
  });
});

function chain(error: unknown): string[] {
  const out: string[] = [];
  for (let e = error as { message?: unknown; stack?: unknown; cause?: unknown } | undefined, i = 0; e !== undefined && e !== null && i < 10; e = e.cause as typeof e, i++) {
    out.push(String(e.message), String(e.stack));
  }
  return out;
}
