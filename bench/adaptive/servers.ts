/**
 * The servers of the "unknown limits" benchmark, on 127.0.0.1: the simulated models of
 * `sluice/testing` served over real sockets (a strict rolling window, a fixed window of unknown
 * phase like rate-limiter-flexible's, an nginx-like `limit_req` leaky bucket), with response latency
 * held by a real timer; and, when the machine has it, a real nginx with `limit_req`.
 *
 * Every server has several independent *lanes* (paths `/0`, `/1`, …), one per client, so the clients
 * of one scenario run side by side in the same seconds without sharing a quota.
 *
 * @module
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ServerModel } from "../../src/testing/decision.ts";
import { FixedWindowServer } from "../../src/testing/fixed-window.ts";
import { LeakyBucketServer } from "../../src/testing/leaky-bucket.ts";
import type { SimulatedServer } from "../../src/testing/server.ts";
import { serveModel } from "../../src/testing/server.ts";
import { SlidingLogServer } from "../../src/testing/sliding-log.ts";
import { startSimulatedHttpServer } from "../../test/support/simulated-http-server.ts";
import { freePort } from "../../test/redis/redis-process.ts";

/** One running server with `lanes` independent quotas at `${url}/${lane}`. */
export interface LaneServer {
  readonly url: string;
  close(): Promise<void>;
}

export interface ServerKind {
  readonly id: string;
  /** The row label. */
  readonly label: string;
  /** What it does on a refusal, for the table. */
  readonly refusal: string;
  start(rate: number, lanes: number, latency: { min: number; max: number }): Promise<LaneServer | undefined>;
}

/** A simulated server per lane (a path prefix picks it), the answer held for a random latency. */
function lanesOf(models: ServerModel[], latency: { min: number; max: number }): SimulatedServer {
  const served = models.map((m) => serveModel(m));
  return {
    handle(request, context) {
      const lane = Number(new URL(request.url).pathname.split("/")[1] ?? "0") | 0;
      const reply = served[lane]!.handle(request, context) as { status: number; headers?: Record<string, string>; body?: string; delayMs?: number };
      const hold = latency.min + Math.random() * (latency.max - latency.min);
      return { ...reply, delayMs: (reply.delayMs ?? 0) + hold };
    },
  };
}

function simulated(make: (rate: number, lane: number) => ServerModel): ServerKind["start"] {
  return async (rate, lanes, latency) => {
    const server = await startSimulatedHttpServer(lanesOf(Array.from({ length: lanes }, (_, i) => make(rate, i)), latency));
    return { url: server.url, close: () => server.close() };
  };
}

export const SERVER_KINDS: readonly ServerKind[] = [
  {
    id: "sliding-log",
    label: "strict rolling window",
    refusal: "429 + Retry-After",
    start: simulated((rate) => new SlidingLogServer({ limit: rate, interval: 1000, headers: ["retry-after"] })),
  },
  {
    id: "fixed-window",
    label: "fixed window, unknown phase (rate-limiter-flexible's shape)",
    refusal: "429 + Retry-After",
    start: simulated((rate, lane) => new FixedWindowServer({ limit: rate, interval: 1000, phase: "random", seed: lane + 7, headers: ["retry-after"] })),
  },
  {
    id: "leaky-bucket",
    label: "nginx-like `limit_req` (simulated), burst 5 nodelay",
    refusal: "429, no header",
    start: simulated((rate) => new LeakyBucketServer({ rate, burst: 5, nodelay: true, status: 429 })),
  },
  {
    id: "nginx",
    label: "real nginx `limit_req`, burst 5 nodelay",
    refusal: "429, no header",
    start: startNginx,
  },
];

/** Why the nginx row is skipped, or undefined when nginx is there. */
export function nginxMissing(): string | undefined {
  try {
    execFileSync("nginx", ["-v"], { stdio: "ignore" });
    return undefined;
  } catch {
    return "nginx is not installed (Debian: `apt-get install nginx-light`); the real-nginx row is skipped";
  }
}

/** A real nginx on a free loopback port: one `limit_req` zone per lane, 429 on refusal, loopback latency. */
async function startNginx(rate: number, lanes: number): Promise<LaneServer | undefined> {
  if (nginxMissing() !== undefined) return undefined;
  const dir = mkdtempSync(join(tmpdir(), "sluice-nginx-"));
  const port = await freePort();
  const zones = Array.from({ length: lanes }, (_, i) => `  limit_req_zone $uri zone=lane${i}:1m rate=${rate}r/s;`).join("\n");
  const locations = Array.from({ length: lanes }, (_, i) =>
    // Served from a file: a `return` would answer in the rewrite phase, before `limit_req` runs.
    `    location = /${i} { limit_req zone=lane${i} burst=5 nodelay; limit_req_status 429; default_type text/plain; root ${dir}/www; }`).join("\n");
  chmodSync(dir, 0o755); // nginx workers run as an unprivileged user
  mkdirSync(join(dir, "www"));
  for (let i = 0; i < lanes; i++) writeFileSync(join(dir, "www", String(i)), "ok\n");
  writeFileSync(join(dir, "nginx.conf"), [
    "daemon off;",
    "worker_processes 1;",
    `pid ${join(dir, "nginx.pid")};`,
    `error_log ${join(dir, "error.log")} warn;`,
    "events { worker_connections 1024; }",
    "http {",
    "  access_log off;",
    `  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;`,
    "  keepalive_requests 100000;",
    zones,
    `  server { listen 127.0.0.1:${port};`,
    locations,
    "  }",
    "}",
  ].join("\n"));
  const child: ChildProcess = spawn("nginx", ["-p", dir, "-c", join(dir, "nginx.conf")], { stdio: "ignore" });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    try {
      await fetch(`${url}/0`).then((r) => r.arrayBuffer());
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  // The probe above used one request of lane 0's burst: wait for it to drain.
  await new Promise((r) => setTimeout(r, 1000));
  return {
    url,
    close: async () => {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
