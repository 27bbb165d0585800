// Red team (fetch): 100 interleaved callers against a real node:http server on 127.0.0.1 — lean
// path vs full path vs the options that leave the lean path (caller signal, timeout, key, hooks).
// Everything is decided by the call's id, so every variant must produce the same per-call outcomes
// and the server must see the same requests; checks are causal (no timing thresholds).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, test } from "vitest";
import { createThrottledFetch, KeyedLimiter, WindowLimiter } from "../../src/index.ts";
import { resolveOptions, type ThrottledFetchOptions } from "../../src/http/options.ts";
import { throttledFetchOf, type ThrottledFetch } from "../../src/http/throttled-fetch.ts";

const N = 100;
const MAX_CONCURRENT = 4;

type Kind = "ok" | "429" | "503" | "abort-before" | "abort-queued" | "abort-in-flight" | "post-500";
function kindOf(n: number): Kind {
  if (n % 10 === 0) return "abort-before";
  if (n >= 8 && n % 10 === 3) return "abort-queued"; // beyond the first slots: certainly queued
  if (n % 10 === 6) return "abort-in-flight";
  if (n % 10 === 1) return "429";
  if (n % 10 === 2) return "503";
  if (n % 10 === 9) return "post-500";
  return "ok";
}

interface Tally {
  attempts: Map<number, number>;
  statuses: string[];
  inFlight: number;
  maxInFlight: number;
  connections: number;
  /** Arrivals (any id) while a 429's pause (from its send) could not yet have ended. */
  arrivalsInPause: number;
}

async function startServer(onInFlightAbort: (n: number) => void) {
  const tally: Tally = { attempts: new Map(), statuses: [], inFlight: 0, maxInFlight: 0, connections: 0, arrivalsInPause: 0 };
  let pauseUntil = -Infinity;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const now = performance.now();
    if (now < pauseUntil) tally.arrivalsInPause++;
    const n = Number(/\/id\/(\d+)/.exec(req.url ?? "")![1]);
    const attempt = (tally.attempts.get(n) ?? 0) + 1;
    tally.attempts.set(n, attempt);
    tally.inFlight++;
    tally.maxInFlight = Math.max(tally.maxInFlight, tally.inFlight);
    let done = false;
    const finish = () => {
      if (!done) (done = true, tally.inFlight--);
    };
    res.on("close", finish);
    req.resume();
    req.on("end", () => {
      const kind = kindOf(n);
      const send = (status: number, headers: Record<string, string> = {}) => {
        tally.statuses.push(`${n}:${attempt}:${status}`);
        res.writeHead(status, { "content-type": "text/plain", "x-id": String(n), "x-attempt": String(attempt), ...headers });
        res.end(`id=${n} attempt=${attempt} status=${status}`);
        if (status === 429) pauseUntil = Math.max(pauseUntil, performance.now() + 20);
      };
      if (kind === "abort-in-flight") {
        onInFlightAbort(n); // the caller aborts now; the server never answers
        return;
      }
      if (kind === "429" && attempt === 1) return send(429, { "retry-after-ms": "20" });
      if (kind === "503" && attempt === 1) return send(503); // no delay: a GET retried by backoff
      if (kind === "post-500") return send(500); // POST: never retried
      send(200);
    });
  });
  server.on("connection", () => tally.connections++);
  server.keepAliveTimeout = 10_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
  return { url, tally, close };
}

interface Events {
  retries: { id: number; attempt: number; urlId: number; responseId: number | undefined; delay: number; throttled: boolean }[];
  responses: { urlId: number; responseId: number; attempt: number; retrying: boolean }[];
}

type Variant = (options: ThrottledFetchOptions, events: Events) => ThrottledFetch;
const idOf = (url: string) => Number(/\/id\/(\d+)/.exec(url)![1]);

const VARIANTS: Record<string, { make: Variant; signalAll: boolean }> = {
  lean: { make: (o) => createThrottledFetch(o), signalAll: false },
  full: { make: (o) => throttledFetchOf(resolveOptions(o), true), signalAll: false },
  "caller signal on every call": { make: (o) => createThrottledFetch(o), signalAll: true },
  timeout: { make: (o) => createThrottledFetch({ ...o, timeout: 120_000, totalTimeout: 240_000 }), signalAll: false },
  "KeyedLimiter + key": {
    make: (o) => {
      const { limiter: _, ...rest } = o;
      return createThrottledFetch({
        ...rest,
        limiter: new KeyedLimiter({ create: () => new WindowLimiter({ limit: 10_000, interval: 1000, countFrom: "completion" }) }),
        key: (r) => new URL(r.url).origin,
      });
    },
    signalAll: false,
  },
  "cost + settle (reservations)": { make: (o) => createThrottledFetch({ ...o, cost: 1, settle: () => 1 }), signalAll: false },
  hooks: {
    make: (o, events) => createThrottledFetch({
      ...o,
      onRetry: (e) => events.retries.push({
        id: idOf(e.request.url), attempt: e.attempt, urlId: idOf(e.request.url),
        responseId: e.response === undefined ? undefined : Number(e.response.headers.get("x-id")), delay: e.delay, throttled: e.throttled,
      }),
      onResponse: (e) => events.responses.push({
        urlId: idOf(e.request.url), responseId: Number(e.response.headers.get("x-id")), attempt: e.attempt, retrying: e.retrying,
      }),
    }),
    signalAll: false,
  },
};

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});

async function run(variant: keyof typeof VARIANTS) {
  const controllers = new Map<number, AbortController>();
  const reasons = new Map<number, unknown>();
  const srv = await startServer((n) => {
    const reason = new Error(`in-flight abort ${n}`);
    reasons.set(n, reason);
    controllers.get(n)!.abort(reason);
  });
  closers.push(srv.close);
  const events: Events = { retries: [], responses: [] };
  const { make, signalAll } = VARIANTS[variant]!;
  const api = make({
    limiter: new WindowLimiter({ limit: 10_000, interval: 1000, countFrom: "completion" }),
    maxConcurrent: MAX_CONCURRENT,
    random: () => 0, // backoff 0: a retried 503 goes again at once
    retry: { budget: false },
  }, events);
  const calls: Promise<string>[] = [];
  for (let n = 0; n < N; n++) {
    const kind = kindOf(n);
    const needsSignal = signalAll || kind.startsWith("abort");
    const controller = needsSignal ? new AbortController() : undefined;
    if (controller !== undefined) controllers.set(n, controller);
    if (kind === "abort-before") {
      const reason = new Error(`before ${n}`);
      reasons.set(n, reason);
      controller!.abort(reason);
    }
    const init: RequestInit = { method: kind === "post-500" ? "POST" : "GET", ...(controller && { signal: controller.signal }) };
    if (kind === "post-500") init.body = `body of ${n}`;
    calls.push(api(`${srv.url}/id/${n}?token=secret-${n}`, init).then(
      async (r) => `${r.status} ${await r.text()} x-id=${r.headers.get("x-id")}`,
      (e: unknown) => (reasons.get(n) === e ? `rejected with own reason` : `rejected ${String(e)}`),
    ));
    if (kind === "abort-queued") {
      const reason = new Error(`queued ${n}`);
      reasons.set(n, reason);
      controller!.abort(reason); // synchronously after the call: it is queued behind the slots
    }
  }
  const outcomes = await Promise.all(calls);
  return { outcomes, tally: srv.tally, events };
}

function expected(n: number): string {
  switch (kindOf(n)) {
    case "abort-before":
    case "abort-queued":
    case "abort-in-flight":
      return "rejected with own reason";
    case "429":
    case "503":
      return `200 id=${n} attempt=2 status=200 x-id=${n}`;
    case "post-500":
      return `500 id=${n} attempt=1 status=500 x-id=${n}`;
    default:
      return `200 id=${n} attempt=1 status=200 x-id=${n}`;
  }
}
function expectedAttempts(n: number): number {
  const kind = kindOf(n);
  if (kind === "abort-before" || kind === "abort-queued") return 0;
  return kind === "429" || kind === "503" ? 2 : 1;
}

describe("red team: 100 interleaved callers on a real server", () => {
  for (const variant of Object.keys(VARIANTS)) {
    test(`${variant}: every caller gets its own outcome; the server sees exactly the reference's requests`, async () => {
      const { outcomes, tally, events } = await run(variant);
      expect(outcomes).toEqual(Array.from({ length: N }, (_, n) => expected(n)));
      for (let n = 0; n < N; n++) expect([n, tally.attempts.get(n) ?? 0]).toEqual([n, expectedAttempts(n)]);
      // maxConcurrent: slots held until the body ends (every caller reads its body).
      expect(tally.maxInFlight).toBeLessThanOrEqual(MAX_CONCURRENT);
      // A 429 pauses everyone: while its pause runs, only requests already in flight may arrive.
      expect(tally.arrivalsInPause).toBeLessThanOrEqual((MAX_CONCURRENT - 1) * tally.statuses.filter((s) => s.endsWith(":429")).length);
      // Connections are reused: no connection per request (a retried body left unread, or a socket
      // leaked per call, would make one per request). Not "≤ maxConcurrent": bare undici workers
      // race their own pool too (4 plain-fetch workers opened 7 connections for 100 requests here).
      const requests = [...tally.attempts.values()].reduce((a, b) => a + b, 0);
      expect(tally.connections).toBeLessThan(requests / 3);
      if (variant === "hooks") {
        for (const r of events.retries) expect([r.urlId, r.responseId ?? r.urlId]).toEqual([r.id, r.id]);
        for (const r of events.responses) expect(r.responseId).toBe(r.urlId);
        expect(events.retries.map((r) => `${r.id}:${r.attempt}:${r.throttled}`).sort()).toEqual(
          Array.from({ length: N }, (_, n) => n).filter((n) => kindOf(n) === "429" || kindOf(n) === "503")
            .map((n) => `${n}:1:${kindOf(n) === "429"}`).sort(),
        );
        expect(events.responses.length).toBe(outcomes.filter((o) => !o.startsWith("rejected")).length + events.retries.length);
      }
    }, 60_000);
  }
});
