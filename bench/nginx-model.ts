/**
 * Does `sluice/testing`'s `LeakyBucketServer` decide as a real nginx `limit_req` does? Sends seeded
 * request sequences to a real nginx on 127.0.0.1 (one zone per configuration: no burst, `burst=`,
 * `nodelay`, `delay=`) and feeds the same send times to the simulator and to an independent model
 * of nginx's own integer arithmetic (excess in thousandths, drained per whole ms, as
 * ngx_http_limit_req_module computes it). A decision is compared only while the model puts it at
 * least 3 ms from a threshold — nearer, the few-µs gap between our send time and nginx's cached
 * clock can decide it either way, and the states drift apart — after which that sequence stops.
 * Accepted requests' hold times (nginx delays excess requests without `nodelay`) are compared too.
 *
 *   node bench/nginx-model.ts [seeds, default 3] [--print]     (needs `nginx` on the PATH: apt-get install nginx-light)
 *
 * Writes the "nginx model" section of `bench/RESULTS.md` (unless `--print`); exits non-zero on any mismatch. Not part of the test suite: it needs nginx and real time.
 *
 * @module
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { LeakyBucketServer } from "../src/testing/leaky-bucket.ts";
import { marked, replaceBlock } from "./lib/marked.ts";
import { freePort } from "../test/redis/redis-process.ts";

const SEEDS = Number(process.argv.slice(2).find((a) => !a.startsWith("--")) ?? 3);
const REQUESTS = 60;
/** A decision this close to a threshold (ms, by the model) is not compared. */
const MARGIN_MS = 3;
/** How far an accepted request's round trip may stray from the hold nginx is expected to give it. */
const HOLD_TOLERANCE_MS = 15;

interface Zone {
  readonly name: string;
  readonly rate: number;
  readonly burst: number;
  readonly mode: "" | "nodelay" | `delay=${number}`;
}
const ZONES: readonly Zone[] = [
  { name: "b0", rate: 10, burst: 0, mode: "" },
  { name: "b3nodelay", rate: 10, burst: 3, mode: "nodelay" },
  { name: "b3", rate: 10, burst: 3, mode: "" },
  { name: "b5nodelay20", rate: 20, burst: 5, mode: "nodelay" },
  { name: "b4delay2", rate: 10, burst: 4, mode: "delay=2" },
];

/** nginx's arithmetic: excess in 1/1000 requests, the rate in 1/1000 requests per second, whole ms. */
class NginxArithmetic {
  #excess = 0;
  #last = -1;
  readonly #rate: number;
  readonly #burst: number;
  readonly #delay: number;
  constructor(zone: Zone) {
    this.#rate = zone.rate * 1000;
    this.#burst = zone.burst * 1000;
    this.#delay = zone.mode === "nodelay" ? zone.burst * 1000 : zone.mode.startsWith("delay=") ? Number(zone.mode.slice(6)) * 1000 : 0;
  }
  decide(nowMs: number): { ok: boolean; holdMs: number; marginMs: number } {
    let excess = 0;
    if (this.#last >= 0) {
      const ms = Math.abs(nowMs - this.#last);
      excess = Math.max(0, this.#excess - Math.trunc((this.#rate * ms) / 1000) + 1000);
    }
    const marginMs = (Math.abs(excess - this.#burst) * 1000) / this.#rate;
    if (excess > this.#burst) return { ok: false, holdMs: 0, marginMs };
    this.#excess = excess;
    this.#last = nowMs;
    const holdMs = excess > this.#delay ? Math.trunc(((excess - this.#delay) * 1000) / this.#rate) : 0;
    return { ok: true, holdMs, marginMs };
  }
}

try {
  execFileSync("nginx", ["-v"], { stdio: "ignore" });
} catch {
  console.error("nginx is not installed (Debian: apt-get install nginx-light)");
  process.exit(2);
}
// `nginx -v` prints to stderr: "nginx version: nginx/1.22.1".
const version = spawnSync("nginx", ["-v"], { encoding: "utf8" }).stderr.replace(/^nginx version: /, "");
const dir = mkdtempSync(join(tmpdir(), "sluice-nginx-model-"));
chmodSync(dir, 0o755); // nginx workers run as an unprivileged user
mkdirSync(join(dir, "www"));
const port = await freePort();
const conf = [
  "daemon off;", "worker_processes 1;", `pid ${dir}/nginx.pid;`, `error_log ${dir}/error.log warn;`,
  "events { worker_connections 1024; }",
  "http {", "  access_log off;", "  keepalive_requests 100000;",
  `  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;`,
  "  limit_req_status 429;",
  ...ZONES.map((z) => `  limit_req_zone $server_name zone=${z.name}:1m rate=${z.rate}r/s;`),
  `  server { listen 127.0.0.1:${port}; server_name model;`,
  // Served from a file: a `return` answers in the rewrite phase, before `limit_req` runs.
  ...ZONES.map((z) => `    location = /${z.name} { limit_req zone=${z.name}${z.burst > 0 ? ` burst=${z.burst}` : ""} ${z.mode}; root ${dir}/www; default_type text/plain; }`),
  "  }", "}",
].join("\n");
for (const z of ZONES) writeFileSync(join(dir, "www", z.name), "ok\n");
writeFileSync(join(dir, "nginx.conf"), conf);
const nginx = spawn("nginx", ["-p", dir, "-c", join(dir, "nginx.conf")], { stdio: "ignore" });
const agent = new Agent({ connections: 64 });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let compared = 0;
let mismatches = 0;
let holdsCompared = 0;
let stoppedNear = 0;
try {
  for (let i = 0; i < 50; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}/`).then((r) => r.arrayBuffer());
      break;
    } catch {
      await sleep(50);
    }
  }
  for (let seed = 1; seed <= SEEDS; seed++) {
    let state = seed;
    const random = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (const zone of ZONES) {
      // Fresh zone state: wait out any excess left by the previous seed.
      await sleep(((zone.burst + 1) * 1000) / zone.rate + 50);
      const sim = new LeakyBucketServer({
        rate: zone.rate,
        burst: zone.burst,
        ...(zone.mode === "nodelay" ? { nodelay: true } : zone.mode.startsWith("delay=") ? { delay: Number(zone.mode.slice(6)) } : {}),
      });
      const model = new NginxArithmetic(zone);
      const sends: Promise<{ at: number; status: number; tookMs: number }>[] = [];
      const t0 = performance.now();
      for (let n = 0; n < REQUESTS; n++) {
        const r = random();
        const gap = r < 0.3 ? 0 : r < 0.5 ? 5 + random() * 40 : 40 + random() * 150;
        if (gap > 0) await sleep(gap);
        const at = performance.now();
        sends.push(request(`http://127.0.0.1:${port}/${zone.name}`, { dispatcher: agent }).then(async (res) => {
          await res.body.text();
          return { at, status: res.statusCode, tookMs: performance.now() - at };
        }));
      }
      // Requests sent within the same ms form a group: they travel on different connections and
      // nginx may take them in any order, so a group is compared by how many it accepted and by the
      // holds it gave, not request by request.
      const results = await Promise.all(sends);
      let n = 0;
      while (n < results.length) {
        let end = n + 1;
        while (end < results.length && results[end]!.at - results[end - 1]!.at < 1) end++;
        const group = results.slice(n, end);
        const decided = group.map((sent) => {
          const elapsed = sent.at - t0;
          const s = sim.decide(elapsed);
          return { sent, m: model.decide(Math.floor(elapsed)), s };
        });
        const near = decided.some((d) => d.m.marginMs < MARGIN_MS);
        const count = (ok: (d: (typeof decided)[number]) => boolean) => decided.filter(ok).length;
        const real = count((d) => d.sent.status === 200);
        const modelled = count((d) => d.m.ok);
        const simulated = count((d) => d.s.allowed);
        if (near) {
          // Too close to call: go on only while all three still agree, else their states part here.
          if (real !== modelled || simulated !== modelled) {
            stoppedNear++;
            break;
          }
          n = end;
          continue;
        }
        compared += group.length;
        const holds = (xs: number[]) => xs.sort((a, b) => a - b);
        const realHolds = holds(decided.filter((d) => d.sent.status === 200).map((d) => d.sent.tookMs));
        const modelHolds = holds(decided.filter((d) => d.m.ok).map((d) => d.m.holdMs));
        const simHolds = holds(decided.filter((d) => d.s.allowed).map((d) => d.s.delayMs ?? 0));
        holdsCompared += modelHolds.filter((h) => h > 0).length;
        const holdsAgree = real === modelled && simulated === modelled &&
          modelHolds.every((h, i) => Math.abs(realHolds[i]! - h) <= HOLD_TOLERANCE_MS && Math.abs(simHolds[i]! - h) <= 2);
        if (!holdsAgree) {
          mismatches++;
          console.log(`seed ${seed} ${zone.name} #${n}–${end - 1} at ${(group[0]!.at - t0).toFixed(1)} ms: accepted by nginx ${real}, ` +
            `by the arithmetic ${modelled}, by LeakyBucketServer ${simulated}; holds (ms) nginx ${realHolds.map((h) => h.toFixed(1)).join("/")}, ` +
            `arithmetic ${modelHolds.join("/")}, LeakyBucketServer ${simHolds.map((h) => h.toFixed(1)).join("/")}`);
        }
        n = end;
      }
    }
  }
} finally {
  await agent.close();
  nginx.kill("SIGTERM");
  await new Promise((resolve) => nginx.once("exit", resolve));
  rmSync(dir, { recursive: true, force: true });
}
const summary = `${version.trim() || "nginx"}: ${compared} decisions compared (${holdsCompared} of them delayed by nginx), ` +
  `${mismatches} mismatches; ${stoppedNear} sequences stopped at a decision under ${MARGIN_MS} ms from a threshold`;
console.log(summary);
const section = marked("nginx-model", [
  "## `LeakyBucketServer` beside a real nginx",
  "",
  `Generated by \`node bench/nginx-model.ts ${SEEDS}\` on ${new Date().toISOString().slice(0, 10)}: ${SEEDS} seeded sequences of ${REQUESTS} requests ` +
    `(bursts, then gaps of 5–190 ms) to each of ${ZONES.length} \`limit_req\` zones of a real nginx on 127.0.0.1 ` +
    `(${ZONES.map((z) => `rate=${z.rate}r/s${z.burst > 0 ? ` burst=${z.burst}` : ""}${z.mode ? ` ${z.mode}` : ""}`).join("; ")}), ` +
    "the same send times fed to `sluice/testing`'s `LeakyBucketServer` and to a model of nginx's own integer arithmetic. " +
    `Compared: every decision at least ${MARGIN_MS} ms from a threshold (requests sent within one ms of each other as a group), and the ` +
    `hold nginx gave each delayed request (within ${HOLD_TOLERANCE_MS} ms of round trip).`,
  "",
  `**${summary}.**`,
].join("\n"));
if (!process.argv.includes("--print")) {
  const url = new URL("./RESULTS.md", import.meta.url);
  writeFileSync(url, replaceBlock(readFileSync(url, "utf8"), { name: "nginx-model", text: section }));
  console.error("wrote bench/RESULTS.md (nginx-model section)");
}
process.exitCode = mismatches === 0 ? 0 : 1;
