/**
 * `maxConcurrent` against a real server (node:http on 127.0.0.1) that refuses (429) any request
 * arriving while N are in flight. Counted server-side; the assertions are causal (the server's own
 * in-flight count and arrival times), with one throughput figure.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, test } from "vitest";
import { combine, ConcurrencyLimiter, createThrottledFetch, ManualClock, WindowLimiter } from "../../src/index.ts";

interface CappedServer {
  url: string;
  refused: number;
  maxInFlight: number;
  /** [arrival, finish] of each request answered 200 (performance.now()). */
  served: Array<[number, number]>;
  arrivals: number[];
  /** Requests in flight when each request arrived. */
  seen: number[];
  close(): Promise<void>;
}

const servers: CappedServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function cappedServer(n: number, serviceMs: number): Promise<CappedServer> {
  let inFlight = 0;
  const state: CappedServer = { url: "", refused: 0, maxInFlight: 0, served: [], arrivals: [], seen: [], close: async () => {} };
  const server: Server = createServer((req, res) => {
    const at = performance.now();
    state.arrivals.push(at);
    state.seen.push(inFlight);
    req.resume();
    if (inFlight >= n) {
      state.refused++;
      res.writeHead(429, { "content-type": "text/plain" }).end("too many in flight");
      return;
    }
    inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, inFlight);
    res.on("close", () => inFlight--);
    setTimeout(() => {
      res.on("finish", () => state.served.push([at, performance.now()]));
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    }, serviceMs);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
  servers.push(state);
  return state;
}

/** The server's busy share: total service time over N slots for the whole span. */
function utilisation(s: CappedServer, n: number): number {
  const start = Math.min(...s.served.map(([a]) => a));
  const end = Math.max(...s.served.map(([, f]) => f));
  const busy = s.served.reduce((sum, [a, f]) => sum + (f - a), 0);
  return busy / (n * (end - start));
}

describe("maxConcurrent against a server that refuses beyond N in flight", () => {
  test("alone: 50 callers draw 0 refusals and keep N in flight (≥ 95 % of the ideal throughput)", async () => {
    const n = 4;
    const server = await cappedServer(n, 100);
    const reference = await cappedServer(n, 100);
    const api = createThrottledFetch({ maxConcurrent: n, retry: 0 });
    // The ideal on this machine, measured at the same time (a loaded box delays both alike): N workers
    // each sending its next request as soon as it read the last, with no limiter at all.
    let next = 0;
    const [statuses] = await Promise.all([
      Promise.all(Array.from({ length: 50 }, async () => {
        const r = await api(`${server.url}/work`);
        await r.text(); // the slot is held until the body is read
        return r.status;
      })),
      Promise.all(Array.from({ length: n }, async () => {
        while (next++ < 50) await (await fetch(`${reference.url}/work`)).text();
      })),
    ]);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(server.refused).toBe(0);
    expect(reference.refused).toBe(0);
    expect(server.maxInFlight).toBe(n);
    const sluice = utilisation(server, n);
    const ideal = utilisation(reference, n);
    console.info(`maxConcurrent ${n}, 50 callers: utilisation ${sluice.toFixed(3)} (bare workers ${ideal.toFixed(3)})`);
    expect(sluice).toBeGreaterThanOrEqual(0.95 * ideal);
  });

  test("with a rate limit: both hold at once (≤ N in flight, ≤ limit arrivals in any interval)", async () => {
    const n = 4;
    const server = await cappedServer(n, 100);
    const api = createThrottledFetch({ limit: 10, interval: 1000, maxConcurrent: n, retry: 0 });
    const statuses = await Promise.all(Array.from({ length: 25 }, async () => {
      const r = await api(`${server.url}/work`);
      await r.text();
      return r.status;
    }));
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(server.refused).toBe(0);
    const arrivals = [...server.arrivals].sort((a, b) => a - b);
    for (let i = 10; i < arrivals.length; i++) expect(arrivals[i]! - arrivals[i - 10]!).toBeGreaterThanOrEqual(1000);
  }, 10_000);
});

describe("maxConcurrent: when a slot frees (virtual time)", () => {
  const ok = () => new Response("body");
  test("a response whose body nobody reads frees its slot after slotTimeout; a read body frees it at once", async () => {
    const clock = new ManualClock();
    const sentAt: number[] = [];
    const api = createThrottledFetch({
      maxConcurrent: 1,
      slotTimeout: 5000,
      clock,
      fetch: async () => (sentAt.push(clock.now()), ok()),
    });
    const first = await api("https://x.test/1"); // never read
    const second = api("https://x.test/2");
    await clock.advance(4999);
    expect(sentAt).toEqual([0]);
    await clock.advance(1);
    expect(sentAt).toEqual([0, 5000]);
    const r2 = await second;
    await r2.text(); // read: frees at once
    const third = api("https://x.test/3");
    await clock.advance(0);
    expect(sentAt).toEqual([0, 5000, 5000]);
    await (await third).body?.cancel(); // cancelled: frees at once
    expect(await first.text()).toBe("body"); // still readable after its slot was freed
    expect(clock.pendingTimers).toBe(0);
  });

  test("a response without a body frees its slot at its headers", async () => {
    const clock = new ManualClock();
    const sentAt: number[] = [];
    const api = createThrottledFetch({
      maxConcurrent: 1,
      clock,
      fetch: async () => (sentAt.push(clock.now()), new Response(null, { status: 204 })),
    });
    await Promise.all([api("https://x.test/1"), api("https://x.test/2")]);
    expect(sentAt).toEqual([0, 0]);
  });
});

describe("a limiter of your own that holds slots (a combine with a ConcurrencyLimiter)", () => {
  const setup = (cost: boolean, settle?: (response: Response) => { response: Response; actual: Promise<undefined> }) => {
    const clock = new ManualClock();
    const limiter = combine({ requests: new WindowLimiter({ limit: 100, interval: 1000, clock }), concurrent: new ConcurrencyLimiter({ limit: 1, clock }) });
    const sent: number[] = [];
    const fetch = async () => {
      sent.push(clock.now());
      return new Response(new ReadableStream<Uint8Array>({ pull: (c) => c.enqueue(new Uint8Array([1])) })); // endless
    };
    const api = createThrottledFetch({ limiter, fetch, clock, ...(cost && { cost: { requests: 1, concurrent: 1 } }), ...(settle && { settle }) });
    return { clock, api, sent };
  };

  test("attempts as tasks (no cost/settle): the slot frees at the response headers", async () => {
    const { clock, api, sent } = setup(false);
    await api("https://api.example.com/"); // its body is never read
    await api("https://api.example.com/");
    expect(sent).toEqual([0, 0]);
    await clock.runAll();
  });

  test("attempts as reservations whose cost is known at once (cost, no settle): the slot frees at once too", async () => {
    const { clock, api, sent } = setup(true);
    const first = await api("https://api.example.com/"); // its body is never read
    await api("https://api.example.com/");
    expect(sent).toEqual([0, 0]);
    await first.body!.cancel();
    await clock.runAll();
  });

  test("attempts whose cost comes as the body is read (a streamed settle): the slot frees when the body is done, or after slotTimeout unread", async () => {
    // A tap of settle's own: the cost is known only when the caller reads to the end (never, here).
    const { clock, api, sent } = setup(true, (response) => ({ response: new Response(response.body), actual: new Promise<undefined>(() => {}) }));
    const first = await api("https://api.example.com/");
    const second = api("https://api.example.com/");
    await clock.advance(29_999);
    expect(sent).toEqual([0]);
    await clock.advance(1);
    await second;
    expect(sent).toEqual([0, 30_000]); // slotTimeout (30 s) without a read freed the slot
    await first.body!.cancel();
    await (await second).body!.cancel();
    await clock.runAll();
  });
});

describe("maxConcurrent: a retried response holds its slot while its body drains (red-team, 2026-11-27)", () => {
  /**
   * A fetch whose responses send `chunks` chunks of 100 bytes, 30 ms apart; the server counts a
   * request in flight until its body is sent or cancelled. The first answer of /a is a 503.
   */
  function slowBodies(clock: ManualClock, chunks: number) {
    let inFlight = 0;
    let most = 0;
    const seen: Record<string, number> = {};
    const sends: string[] = [];
    const fetch = async (input: RequestInfo | URL): Promise<Response> => {
      const url = String(input);
      seen[url] = (seen[url] ?? 0) + 1;
      sends.push(`${new URL(url).pathname}@${clock.now()}`);
      most = Math.max(most, ++inFlight);
      let done = false;
      const end = () => void (!done && (done = true, inFlight--));
      let sent = 0;
      let timer: ReturnType<ManualClock["setTimeout"]> | undefined;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          const next = () => {
            timer = clock.setTimeout(() => {
              controller.enqueue(new Uint8Array(100));
              if (++sent === chunks) {
                controller.close();
                end();
              } else next();
            }, 30);
          };
          next();
        },
        cancel() {
          if (timer !== undefined) clock.clearTimeout(timer);
          end();
        },
      });
      return new Response(body, { status: url.endsWith("/a") && seen[url] === 1 ? 503 : 200 });
    };
    return { fetch, most: () => most, sends };
  }

  test("a small body, drained while the retry waits: the server never sees more than maxConcurrent", async () => {
    const clock = new ManualClock();
    const server = slowBodies(clock, 3);
    const api = createThrottledFetch({ fetch: server.fetch, clock, maxConcurrent: 1, random: () => 0.5, retry: { backoff: { base: 1000 } } });
    const a = api("https://x.test/a").then((r) => r.text());
    const b = api("https://x.test/b").then((r) => r.text());
    await clock.runAll(100_000);
    await Promise.all([a, b]);
    // Before: the 503's slot ended at the retry decision, and /b went while its body still came (2 in flight).
    expect(server.most()).toBe(1);
    expect(server.sends).toEqual(["/a@0", "/b@90", "/a@500"]); // /b once the 503 body is whole; the retry after its backoff
  });

  test("a body too large to drain frees its slot when the drain gives up, not at the end of the backoff", async () => {
    const clock = new ManualClock();
    const server = slowBodies(clock, 700); // 70 KB, past the 64 KiB drain bound
    const api = createThrottledFetch({ fetch: server.fetch, clock, maxConcurrent: 1, random: () => 0.5, retry: { backoff: { base: 1000 } } });
    const a = api("https://x.test/a").then((r) => r.text());
    const b = api("https://x.test/b").then((r) => r.text());
    await clock.runAll(1_000_000);
    await Promise.all([a, b]);
    // /b goes once the drain stops (100 ms), while the rest of /a's body is still unread: the
    // server counts one more for a while (the README's N+1). Holding the slot through the backoff
    // instead (a version of 2026-11-27) stalled every other caller for the whole backoff.
    expect(server.sends[1]).toBe("/b@100");
    expect(server.most()).toBe(2);
  });

  test("a retry refused by maxWait gives back the retried response whole, also with maxConcurrent", async () => {
    const clock = new ManualClock();
    let calls = 0;
    const fetch = async (): Promise<Response> => {
      calls++;
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          const next = () => clock.setTimeout(() => {
            controller.enqueue(new Uint8Array(100).fill(120));
            if (++sent === 10) controller.close();
            else next();
          }, 60);
          next();
        },
      });
      return new Response(body, { status: 503 });
    };
    const api = createThrottledFetch({ fetch, clock, limit: 1, interval: 1000, maxWait: 500, maxConcurrent: 1, random: () => 0.5, retry: { backoff: { base: 10 } } });
    const text = api("https://x.test/a").then(async (r) => ({ status: r.status, length: (await r.text()).length }));
    await clock.runAll(100_000);
    // 1000 bytes over 600 ms: the drain stops at 100 ms; the rest is read by the caller. A version of
    // 2026-11-27 cancelled it when the retry queued, and the caller got 100 bytes without an error.
    expect(await text).toEqual({ status: 503, length: 1000 });
    expect(calls).toBe(1);
  });
});
