/**
 * sluice/undici across undici and Node versions, through `node:test`, against the BUILT package.
 * `scripts/test-undici.ts` bundles this file (sluice's entries → dist/) and runs it once per pair of
 * the matrix — Node 20 × undici 7.0.0 and 7.30.2, Node 24 × undici 7.30.2, 8.0.1 and 8.12.4 — with
 * `SLUICE_UNDICI` naming the installed copy to load (an npm alias such as `undici7-min`).
 *
 * What each pair proves: the global-dispatcher recipe paces Node's OWN fetch together with undici's
 * `request` and `fetch` against a strict server (and which global slots that undici version writes);
 * a 429 pauses every client; undici's retry interceptor composed outside makes each retry take
 * permits; abort while queued; and per-call `fetch(url, { dispatcher })` with Node's fetch.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, test } from "node:test";
import { SmoothLimiter, WindowLimiter } from "../../../src/index.ts";
import { throttle } from "../../../src/undici.ts";
import { maxInWindow, respond, startServer, StrictWindowHandler, type TestServer } from "../../http/support/servers.ts";
import { globalSlots, recording, SLOT_1, SLOT_2, withGlobalDispatcher } from "../support/global.ts";

type Undici = typeof import("undici");

const name = process.env.SLUICE_UNDICI ?? "undici";
const load = createRequire(join(process.cwd(), "package.json"));
const undici = load(name) as Undici;
const version = (load(`${name}/package.json`) as { version: string }).version;
const [major = 0, minor = 0, patch = 0] = version.split(".").map(Number);
const atLeast = (a: number, b: number, c: number) => major > a || (major === a && (minor > b || (minor === b && patch >= c)));
const label = `node ${process.versions.node} · undici ${version}`;
// Only some undici versions have the retry interceptor's `throwOnError` option.
const retrySource = readFileSync(load.resolve(`${name}/lib/handler/retry-handler.js`), "utf8");
const hasThrowOnError = retrySource.includes("throwOnError");

const slotsBefore = globalSlots();
const open: Array<{ destroy(): Promise<void> }> = [];
const servers: TestServer[] = [];
after(async () => {
  await Promise.all(open.map((a) => a.destroy()));
  await Promise.all(servers.map((s) => s.close()));
  assert.deepEqual(globalSlots(), slotsBefore, "the global dispatcher was restored");
});

function agent(): InstanceType<Undici["Agent"]> {
  const a = new undici.Agent({ keepAliveTimeout: 500 });
  open.push(a);
  return a;
}
async function serve(handler: Parameters<typeof startServer>[0]): Promise<TestServer> {
  const s = await startServer(handler);
  servers.push(s);
  return s;
}
const text = async (r: { text(): Promise<string>; status: number }) => (await r.text(), r.status);

test(`[${label}] setGlobalDispatcher: Node's own fetch, undici.request and undici.fetch share one limiter; the strict server never sees more than its limit`, async (t) => {
  const LIMIT = 10;
  const WINDOW = 200;
  const handler = new StrictWindowHandler({ limit: LIMIT, window: WINDOW, latency: () => Math.random() * 10 });
  const server = await serve(handler.handle);
  const limiter = new WindowLimiter({ limit: LIMIT, interval: WINDOW, countFrom: "completion" });
  const seen = new Set<string>();
  const dispatcher = agent().compose(throttle({ limiter, permits: (r) => (seen.add(r.path), 1) }));
  const g = globalThis as unknown as Record<symbol, unknown>;
  let written: string[] = [];
  const statuses = await withGlobalDispatcher(() => {
    const before = [g[SLOT_1], g[SLOT_2]];
    undici.setGlobalDispatcher(dispatcher);
    written = [g[SLOT_1] !== before[0] ? ".1" : "", g[SLOT_2] !== before[1] ? ".2" : ""].filter(Boolean);
  }, () => Promise.all(Array.from({ length: 20 }, (_, i) => [
    fetch(`${server.url}/node-fetch/${i}`).then(text),
    undici.request(`${server.url}/request/${i}`).then(async (r) => (await r.body.text(), r.statusCode)),
    undici.fetch(`${server.url}/undici-fetch/${i}`).then(text),
  ]).flat()));
  t.diagnostic(`undici ${version} setGlobalDispatcher wrote slot(s) ${written.join(" and ")}; Node ${process.versions.node}'s fetch reads .1`);
  // undici 7.0–7.26 keep one slot (.1); 7.27+ and 8 write .2 and mirror into .1 (8: a Dispatcher1Wrapper).
  assert.deepEqual(written, atLeast(7, 27, 0) ? [".1", ".2"] : [".1"]);
  assert.deepEqual(statuses, Array(60).fill(200));
  assert.equal(handler.rejected, 0);
  assert.ok(maxInWindow(server.arrivals.map((a) => a.at), WINDOW) <= LIMIT);
  for (const client of ["node-fetch", "request", "undici-fetch"]) {
    assert.equal([...seen].filter((p) => p.startsWith(`/${client}/`)).length, 20, `${client} went through the interceptor`);
  }
});

test(`[${label}] Node's own fetch reads the global slot undici.globalDispatcher.1`, async () => {
  const g = globalThis as unknown as Record<symbol, unknown>;
  const probe = (slot: string) => ({
    dispatch() {
      throw new Error(`read ${slot}`);
    },
    close: async () => {},
    destroy: async () => {},
  });
  const error = await withGlobalDispatcher(() => {
    g[SLOT_1] = probe(".1");
    g[SLOT_2] = probe(".2");
  }, () => fetch("http://127.0.0.1:8080/").then(() => undefined, (e: unknown) => e));
  assert.match(String((error as Error).cause), /read \.1/);
});

test(`[${label}] a 429 pauses every client; undici's retry interceptor outside makes the retry take a permit`, async () => {
  const handler = new StrictWindowHandler({ limit: 100, window: 1000 });
  const server: TestServer = await serve((req, res, body, arrival) => {
    if (server.arrivals.length === 8) handler.force429(1, 400);
    return handler.handle(req, res, body, arrival);
  });
  const limiter = recording(new SmoothLimiter({ limit: 100, interval: 1000 }));
  const dispatcher = agent().compose(throttle({ limiter }), undici.interceptors.retry({ minTimeout: 10, maxRetries: 2 }));
  const statuses = await withGlobalDispatcher(() => undici.setGlobalDispatcher(dispatcher), () =>
    Promise.all(Array.from({ length: 8 }, (_, i) => [
      fetch(`${server.url}/node-fetch/${i}`).then(text),
      undici.request(`${server.url}/request/${i}`).then(async (r) => (await r.body.text(), r.statusCode)),
      undici.fetch(`${server.url}/undici-fetch/${i}`).then(text),
    ]).flat()));
  assert.deepEqual(statuses, Array(24).fill(200));
  assert.equal(server.arrivals.length, 25);
  assert.equal(limiter.grants.length, 25);
  assert.deepEqual(limiter.pauses.map((p) => p.ms), [400]);
  const pausedAt = limiter.pauses[0]!.at;
  const later = limiter.grants.filter((t) => t > pausedAt);
  assert.ok(later.length >= 5, `requests queued at the 429 were held (${later.length})`);
  later.forEach((t, k) => assert.ok(t >= pausedAt + 400 + 10 * k, `grant ${k} at ${t - pausedAt} ms after the pause`));
});

test(`[${label}] compose order: retry outside takes permits for every attempt; retry inside bypasses the limiter`, async () => {
  const attempts = new Map<string, number>();
  const server = await serve((req, res) => {
    const n = (attempts.get(req.url!) ?? 0) + 1;
    attempts.set(req.url!, n);
    respond(res, n <= 2 ? 503 : 200, n <= 2 ? { "retry-after": "0" } : {}, n <= 2 ? "busy" : "ok");
  });
  const outside = recording(new SmoothLimiter({ limit: 1000 }));
  const inside = recording(new SmoothLimiter({ limit: 1000 }));
  const good = agent().compose(throttle({ limiter: outside }), undici.interceptors.retry({ minTimeout: 1 }));
  const wrong = agent().compose(undici.interceptors.retry({ minTimeout: 1 }), throttle({ limiter: inside }));
  assert.equal((await undici.request(`${server.url}/good`, { dispatcher: good })).statusCode, 200);
  assert.equal((await undici.request(`${server.url}/wrong`, { dispatcher: wrong })).statusCode, 200);
  assert.equal(server.arrivals.length, 6);
  assert.equal(outside.grants.length, 3);
  assert.equal(inside.grants.length, 1);
});

test(`[${label}] undici's retry on a 429 that never ends: the call rejects (throwOnError${hasThrowOnError ? " default" : ": this version has no option"}); every attempt took permits`, async () => {
  const server = await serve((_req, res) => respond(res, 429, { "retry-after": "0" }, "slow down"));
  const limiter = recording(new SmoothLimiter({ limit: 1000 }));
  const dispatcher = agent().compose(throttle({ limiter }), undici.interceptors.retry({ minTimeout: 1, maxRetries: 2 }));
  const error = await undici.request(`${server.url}/r`, { dispatcher }).then(() => undefined, (e: unknown) => e);
  assert.equal((error as { statusCode?: number }).statusCode, 429);
  assert.equal((error as { code?: string }).code, "UND_ERR_REQ_RETRY");
  assert.equal(server.arrivals.length, 3);
  assert.equal(limiter.grants.length, 3);
  if (hasThrowOnError) {
    const lenient = agent().compose(throttle({ limiter }), undici.interceptors.retry({ minTimeout: 1, maxRetries: 2, throwOnError: false } as never));
    const r = await undici.request(`${server.url}/r2`, { dispatcher: lenient });
    assert.deepEqual([r.statusCode, await r.body.text()], [429, "slow down"]);
  }
});

test(`[${label}] aborted while queued: rejects with the reason, nothing sent, nothing taken`, async () => {
  const server = await serve((_req, res) => respond(res, 200, {}, "ok"));
  const limiter = new WindowLimiter({ limit: 1, interval: 10_000 });
  const dispatcher = agent().compose(throttle({ limiter }));
  await (await undici.request(`${server.url}/first`, { dispatcher })).body.text();
  const controller = new AbortController();
  const reason = new Error("changed my mind");
  const pending = withGlobalDispatcher(() => undici.setGlobalDispatcher(dispatcher), () =>
    Promise.all([
      undici.request(`${server.url}/r`, { dispatcher, signal: controller.signal }),
      fetch(`${server.url}/g`, { signal: controller.signal }),
    ].map((p) => p.then(() => "resolved", (e: unknown) => e))));
  while (limiter.queued < 2) await new Promise((resolve) => setTimeout(resolve, 5));
  controller.abort(reason);
  assert.deepEqual(await pending, [reason, reason]);
  assert.equal(limiter.queued, 0);
  assert.deepEqual(server.arrivals.map((a) => a.path), ["/first"]);
});

test(`[${label}] per call: Node's own fetch(url, { dispatcher }) — ${major >= 8 ? "through Dispatcher1Wrapper (the bare agent is refused)" : "the composed agent as it is"}`, async () => {
  const server = await serve((_req, res) => respond(res, 200, {}, "ok"));
  const limiter = recording(new SmoothLimiter({ limit: 1000 }));
  const composed = agent().compose(throttle({ limiter }));
  if (major >= 8) {
    const wrapped = new (undici as unknown as { Dispatcher1Wrapper: new (d: unknown) => object }).Dispatcher1Wrapper(composed);
    assert.equal((await fetch(`${server.url}/wrapped`, { dispatcher: wrapped } as RequestInit)).status, 200);
    const refused = await fetch(`${server.url}/bare`, { dispatcher: composed } as RequestInit).then(() => undefined, (e: unknown) => e);
    assert.match(String((refused as Error).cause), /legacy handler.*Dispatcher1Wrapper/);
    assert.equal(limiter.grants.length, 1);
  } else {
    assert.equal((await fetch(`${server.url}/bare`, { dispatcher: composed } as RequestInit)).status, 200);
    assert.equal(limiter.grants.length, 1);
  }
  assert.equal(server.arrivals.length, 1);
});
