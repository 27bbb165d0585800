// Red team (fetch): "an idle throttled fetch holds no timer" / "Every timer is cleared when its
// attempt or call ends" — checked the only way that matters: a child process that used the fetch
// must exit on its own. The server runs here, in the parent; each child prints "done" when its last
// call settled and must then exit (code 0) although the limiter is paused for 50 s.
import { execFile } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));
let url = "";
let close: () => Promise<void>;

beforeAll(async () => {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const path = req.url ?? "/";
      if (path.startsWith("/429-long")) {
        res.writeHead(429, { "retry-after": "50" });
        return res.end("slow down");
      }
      if (path.startsWith("/503-long")) {
        res.writeHead(503, { "retry-after": "50" });
        return res.end("busy");
      }
      if (path.startsWith("/quota")) {
        res.writeHead(200, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": "50" });
        return res.end("ok");
      }
      if (path.startsWith("/mib")) {
        res.writeHead(200, { "content-type": "text/plain" });
        return res.end("x".repeat(1024 * 1024));
      }
      if (path.startsWith("/big429")) {
        // First attempt of each id: a 429 with a large body (held unread), then 200.
        const first = !seen.has(path);
        seen.add(path);
        if (first) {
          res.writeHead(429, { "retry-after-ms": "30" });
          return res.end("x".repeat(256 * 1024));
        }
      }
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("ok");
    });
  });
  const seen = new Set<string>();
  server.keepAliveTimeout = 60_000; // sockets stay open on the server side: the child must not care
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  close = () => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
});
afterAll(() => close());

function runChild(body: string, timeout = 25_000): Promise<{ code: number | null; stdout: string; stderr: string; killed: boolean }> {
  const script = `
    import { createThrottledFetch, WindowLimiter, SmoothLimiter } from ${JSON.stringify(SRC + "index.ts")};
    const URL_ = ${JSON.stringify(url)};
    process.on("unhandledRejection", (e) => { console.log("UNHANDLED " + String(e)); process.exitCode = 3; });
    ${body.replace('"SRC_UNDICI"', JSON.stringify(SRC + "undici.ts"))}
    console.log("done");
  `;
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ["--input-type=module", "-e", script], { timeout }, (error, stdout, stderr) => {
      resolve({ code: child.exitCode, stdout, stderr, killed: (error as { killed?: boolean } | null)?.killed ?? false });
    });
  });
}

const cases: [string, string][] = [
  ["control: plain fetch", `await (await fetch(URL_ + "/ok")).text();`],
  ["a 429 with Retry-After 50 s pauses the limiter (retry: 0): the pause holds no timer", `
    const limiter = new WindowLimiter({ limit: 5, interval: 1000, countFrom: "completion" });
    const api = createThrottledFetch({ limiter, retry: 0 });
    const r = await api(URL_ + "/429-long"); await r.text();
    if (r.status !== 429) throw new Error("status " + r.status);`],
  ["an exhausted quota (remaining 0, reset 50 s) pauses the limiter: no timer", `
    const api = createThrottledFetch({ limit: 5, interval: 1000 });
    await (await api(URL_ + "/quota")).text();`],
  ["timeout + totalTimeout: both timers cleared when the call ends", `
    const api = createThrottledFetch({ limit: 5, timeout: 60_000, totalTimeout: 120_000 });
    await (await api(URL_ + "/ok")).text();`],
  ["caller aborts while the call waits 50 s to retry a 503: no timer left, rejects with its reason", `
    const controller = new AbortController();
    const reason = new Error("mine");
    const api = createThrottledFetch({ limit: 5, onRetry: () => setTimeout(() => controller.abort(reason), 50) });
    const outcome = await api(URL_ + "/503-long", { signal: controller.signal }).then(() => "resolved", (e) => e === reason ? "own reason" : String(e));
    if (outcome !== "own reason") throw new Error(outcome);`],
  ["maxConcurrent: a body cancelled unread and a body read — slot timers gone", `
    const api = createThrottledFetch({ limit: 50, maxConcurrent: 2 });
    const a = await api(URL_ + "/ok"); await a.body.cancel();
    const b = await api(URL_ + "/ok"); await b.text();`],
  ["maxConcurrent: a response whose body is never touched (slotTimeout 60 s) keeps nothing alive", `
    const api = createThrottledFetch({ limit: 50, maxConcurrent: 2, slotTimeout: 60_000 });
    const a = await api(URL_ + "/ok"); void a;`],
  ["maxConcurrent: statuses read, bodies not — a call queued for a slot an unread body holds keeps the process alive until slotTimeout frees it (red-team, 2026-11-27: the process exited after the second call, exit code 0)", `
    const api = createThrottledFetch({ limit: 50, maxConcurrent: 2, slotTimeout: 300 });
    for (const i of [1, 2, 3, 4, 5]) { const r = await api(URL_ + "/ok?" + i); if (r.status !== 200) throw new Error("status " + r.status); }`],
  ["sluice/undici maxConcurrent: the same with 1 MiB bodies left unread", `
    const { Agent, request } = await import("undici");
    const { throttle } = await import(${JSON.stringify("SRC_UNDICI")});
    const agent = new Agent().compose(throttle({ limit: 50, maxConcurrent: 2, slotTimeout: 300 }));
    for (const i of [1, 2, 3, 4]) { const r = await request(URL_ + "/mib?" + i, { dispatcher: agent }); if (r.statusCode !== 200) throw new Error("status " + r.statusCode); }`],
  ["a retried 429 with a 256 KiB body (held unread, cancelled when the retry is sent)", `
    const api = createThrottledFetch({ limit: 50 });
    const rs = await Promise.all([1, 2, 3].map((i) => api(URL_ + "/big429/" + i)));
    for (const r of rs) { if (r.status !== 200) throw new Error("status " + r.status); await r.text(); }`],
  ["a call queued behind a 50 s pause, then aborted: rejects with its reason, nothing left armed", `
    const api = createThrottledFetch({ limit: 5, retry: 0 });
    await (await api(URL_ + "/429-long")).text();
    const controller = new AbortController();
    const reason = new Error("mine");
    const queued = api(URL_ + "/ok", { signal: controller.signal });
    setTimeout(() => controller.abort(reason), 20);
    const outcome = await queued.then(() => "resolved", (e) => e === reason ? "own reason" : String(e));
    if (outcome !== "own reason") throw new Error(outcome);`],
  ["sluice/undici: throttle() on an Agent, a 429 with Retry-After 50 s", `
    const { Agent, fetch: ufetch } = await import("undici");
    const { throttle } = await import(${JSON.stringify("SRC_UNDICI")});
    const limiter = new WindowLimiter({ limit: 5, interval: 1000, countFrom: "completion" });
    const agent = new Agent().compose(throttle({ limiter }));
    const r = await ufetch(URL_ + "/429-long", { dispatcher: agent }); await r.text();
    if (r.status !== 429) throw new Error("status " + r.status);`],
  ["control for the harness: a leaked 40 s timer is caught (the child is killed)", `
    setTimeout(() => {}, 40_000);`],
];

describe("red team: a process that used the throttled fetch exits on its own", () => {
  for (const [name, body] of cases) {
    test(name, async () => {
      const harness = name.startsWith("control for the harness");
      const result = await runChild(body, harness ? 3000 : 25_000);
      if (harness) {
        expect(result.killed).toBe(true);
        return;
      }
      expect(result.stderr.split("\n").filter((l) => /Error|UNHANDLED/.test(l))).toEqual([]);
      expect(result.stdout).toContain("done");
      expect(result.stdout).not.toContain("UNHANDLED");
      expect(result.killed).toBe(false); // killed = still alive after 25 s, i.e. half the 50 s pause
      expect(result.code).toBe(0);
    }, 40_000);
  }
});
