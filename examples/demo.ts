/**
 * The main demo (`npm start`): the same workload against the same strict API, twice — with plain
 * `fetch`, and with one shared sluice throttled fetch — side by side.
 *
 * A local API server (127.0.0.1, a free port) accepts `rate` requests per second in ANY rolling second
 * and answers 429 + Retry-After beyond that, like many real APIs. Each run sends `requests` requests
 * from `concurrency` concurrent callers:
 *
 * - plain fetch: what people write first — every caller fetches, and on a 429 sleeps for the
 *   Retry-After it was given and tries again, on its own;
 * - sluice: one `createThrottledFetch` shared by every caller, told the API's documented limit.
 *
 * While each run goes it shows live progress; at the end, a side-by-side summary and an SVG timeline.
 *
 *   npm start                     (defaults: --rate 30 --requests 300 --concurrency 50)
 *   npm start -- --adaptive       a client told the wrong limit settles (see adaptive-demo.ts)
 *   npm start -- --help
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  createThrottledFetch,
  FixedWindowLimiter,
  type Limiter,
  SlidingCounterLimiter,
  SmoothLimiter,
  WindowLimiter,
} from "../src/index.ts";
import { type LocalApi, startLocalApi } from "./support/local-api.ts";

if (process.argv.slice(2).includes("--adaptive")) {
  const { adaptiveScene } = await import("./adaptive-demo.ts");
  process.exit(await adaptiveScene(process.argv.slice(2).filter((a) => a !== "--adaptive")));
}

const ALGORITHMS = ["window", "smooth", "fixed", "sliding"] as const;
type Algorithm = (typeof ALGORITHMS)[number];

const { values: args } = parseArgs({
  options: {
    rate: { type: "string", default: "30" },
    requests: { type: "string", default: "300" },
    concurrency: { type: "string", default: "50" },
    algorithm: { type: "string", default: "window" },
    out: { type: "string", default: ".tmp/demo-timeline.svg" },
    help: { type: "boolean", short: "h", default: false },
  },
});

if (args.help) {
  console.log(`sluice demo: plain fetch vs one shared throttled fetch, against a strict local API.

  --rate N          the API's limit, requests per rolling second          (default 30)
  --requests N      requests in the workload                              (default 300)
  --concurrency N   concurrent callers                                    (default 50)
  --algorithm A     sluice's limiter: window | smooth | fixed | sliding  (default window)
                      window:  WindowLimiter counted from each response (the safe default)
                      smooth:  SmoothLimiter at the rate, evenly spaced
                      fixed:   FixedWindowLimiter (can burst 2x across an edge: expect 429s)
                      sliding: SlidingCounterLimiter (approximate)
  --out FILE        where to write the SVG timeline              (default .tmp/demo-timeline.svg)
  --adaptive        the adaptive scene instead: a client told the wrong limit settles
                    (npm start -- --adaptive --help for its options)`);
  process.exit(0);
}

function positive(name: string, value: string | undefined): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) {
    console.error(`--${name} must be a positive integer, got ${JSON.stringify(value)}`);
    process.exit(2);
  }
  return n;
}
const rate = positive("rate", args.rate);
const total = positive("requests", args.requests);
const concurrency = positive("concurrency", args.concurrency);
const algorithm = args.algorithm as Algorithm;
if (!ALGORITHMS.includes(algorithm)) {
  console.error(`--algorithm must be one of ${ALGORITHMS.join(", ")}, got ${JSON.stringify(args.algorithm)}`);
  process.exit(2);
}

/** What one run did, for the summary and the timeline. */
interface RunResult {
  readonly name: string;
  readonly ms: number;
  readonly ok: number;
  readonly refused: number;
  readonly retries: number;
  /** Arrival times at the server (ms from the run's start) and whether each was accepted. */
  readonly arrivals: ReadonlyArray<{ at: number; ok: boolean }>;
}

const interactive = process.stdout.isTTY === true;

/** Live progress: one rewritten line on a terminal, a line a second otherwise. */
function progress(name: string, done: () => number, api: LocalApi): () => void {
  let lastPrinted = 0;
  const draw = () => {
    const now = performance.now();
    const d = done();
    // Accepted by the server in the last rolling second: the rate the API actually sees.
    let current = 0;
    for (let i = api.log.length - 1; i >= 0 && api.log[i]!.at > now - 1000; i--) if (api.log[i]!.ok) current++;
    const width = 24;
    const filled = Math.round((d / total) * width);
    const line = `  ${name.padEnd(12)} [${"#".repeat(filled)}${".".repeat(width - filled)}] ${String(d).padStart(4)}/${total}` +
      `  ${String(current).padStart(4)} in the last second  429s so far: ${api.refused}`;
    if (interactive) process.stdout.write(`\r${line}`);
    else if (now - lastPrinted >= 1000) {
      console.log(line);
      lastPrinted = now;
    }
  };
  const timer = setInterval(draw, interactive ? 200 : 250);
  return () => {
    clearInterval(timer);
    draw();
    if (interactive) process.stdout.write("\n");
  };
}

/** Runs `total` requests through `send`, `concurrency` callers at a time, against a fresh API. */
async function run(
  name: string,
  makeSend: (counters: { retries: number }) => (url: string) => Promise<Response>,
): Promise<RunResult> {
  const api = await startLocalApi({ limit: rate, window: 1000, jitter: 10 });
  const counters = { retries: 0 };
  const send = makeSend(counters);
  let next = 0;
  let done = 0;
  const started = performance.now();
  const stop = progress(name, () => done, api);
  const caller = async () => {
    while (next < total) {
      const i = next++;
      const response = await send(`${api.url}/items/${i}`);
      await response.body?.cancel();
      done++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, caller));
  const ms = performance.now() - started;
  stop();
  const result: RunResult = {
    name,
    ms,
    ok: api.accepted,
    refused: api.refused,
    retries: counters.retries,
    arrivals: api.log.map((a) => ({ at: a.at - started, ok: a.ok })),
  };
  await api.close();
  return result;
}

/** Plain fetch as usually written: on a 429, sleep for the Retry-After given, then try again. */
const plainSend = (counters: { retries: number }) => async (url: string): Promise<Response> => {
  for (;;) {
    const response = await fetch(url);
    if (response.status !== 429) return response;
    await response.body?.cancel();
    counters.retries++;
    const seconds = Number(response.headers.get("retry-after") ?? "1");
    await new Promise((r) => setTimeout(r, Math.max(0, seconds) * 1000));
  }
};

function sluiceLimiter(): Limiter {
  switch (algorithm) {
    case "window":
      return new WindowLimiter({ limit: rate, interval: 1000, countFrom: "completion" });
    case "smooth":
      return new SmoothLimiter({ limit: rate, interval: 1000 });
    case "fixed":
      return new FixedWindowLimiter({ limit: rate, interval: 1000 });
    case "sliding":
      return new SlidingCounterLimiter({ limit: rate, interval: 1000 });
  }
}

console.log(`A local API allows ${rate} requests in any rolling second (429 + Retry-After beyond).`);
console.log(`Workload: ${total} requests from ${concurrency} concurrent callers.\n`);

const plain = await run("plain fetch", plainSend);
// One throttled fetch shared by every caller; a 429 (if any) pauses them all and is retried.
const sluice = await run("sluice", (counters) =>
  createThrottledFetch({ limiter: sluiceLimiter(), retry: { limit: 10 }, onRetry: () => counters.retries++ }));

function row(label: string, a: string, b: string): string {
  return `  ${label.padEnd(24)} ${a.padStart(14)} ${b.padStart(14)}`;
}
/** Accepted per second after the first window (whose permits all go at t = 0). */
function steadyRate(r: RunResult): string {
  const ok = r.arrivals.filter((a) => a.ok).map((a) => a.at);
  if (ok.length <= rate) return "-";
  return `${(((ok.length - rate) * 1000) / (ok[ok.length - 1]! - ok[0]!)).toFixed(1)}/s`;
}
/** The most requests the server accepted in any rolling second (≤ the limit, by the server's rule). */
function busiest(r: RunResult): number {
  const ok = r.arrivals.filter((a) => a.ok).map((a) => a.at);
  let most = 0;
  for (let i = 0, j = 0; i < ok.length; i++) {
    while (ok[i]! - ok[j]! >= 1000) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}
console.log("\n" + row("", "plain fetch", `sluice (${algorithm})`));
console.log(row("429s received", String(plain.refused), String(sluice.refused)));
console.log(row("retries", String(plain.retries), String(sluice.retries)));
console.log(row("requests sent", String(plain.ok + plain.refused), String(sluice.ok + sluice.refused)));
console.log(row("total time", `${(plain.ms / 1000).toFixed(2)} s`, `${(sluice.ms / 1000).toFixed(2)} s`));
console.log(row("achieved rate (steady)", steadyRate(plain), steadyRate(sluice)));
console.log(row("busiest rolling second", String(busiest(plain)), String(busiest(sluice))));
console.log(row("limit", `${rate}/s`, `${rate}/s`));
console.log(`\n  The fastest any client can finish: ${Math.ceil(total / rate) - 1} s (the first ${rate} go at once).`);

const out = resolve(args.out!);
mkdirSync(resolve(out, ".."), { recursive: true });
writeFileSync(out, timeline([plain, sluice]));
console.log(`\nTimeline (accepted and refused per 100 ms, against the limit): ${out}`);

/** An SVG of requests per 100 ms for each run: accepted in blue, refused (429) in red. */
function timeline(runs: RunResult[]): string {
  const bucket = 100;
  const end = Math.max(...runs.flatMap((r) => r.arrivals.map((a) => a.at))) + bucket;
  const buckets = Math.ceil(end / bucket);
  const w = 900;
  const laneH = 150;
  const left = 60;
  const x = (i: number) => left + (i / buckets) * (w - left - 20);
  const counts = runs.map((r) => {
    const okC = new Array<number>(buckets).fill(0);
    const noC = new Array<number>(buckets).fill(0);
    for (const a of r.arrivals) (a.ok ? okC : noC)[Math.floor(a.at / bucket)]!++;
    return { okC, noC };
  });
  const peak = Math.max(rate / 10 * 2, ...counts.flatMap((c) => c.okC.map((v, i) => v + c.noC[i]!)));
  const parts: string[] = [];
  runs.forEach((r, lane) => {
    const top = 30 + lane * (laneH + 40);
    const y = (v: number) => top + laneH - (v / peak) * laneH;
    const bw = Math.max(1, (w - left - 20) / buckets - 1);
    parts.push(`<text x="${left}" y="${top - 8}" font-size="13">${r.name}: ${r.refused} × 429, ${(r.ms / 1000).toFixed(1)} s</text>`);
    parts.push(`<line x1="${left}" y1="${top + laneH}" x2="${w - 20}" y2="${top + laneH}" stroke="#999"/>`);
    counts[lane]!.okC.forEach((v, i) => {
      const n = counts[lane]!.noC[i]!;
      if (v > 0) parts.push(`<rect x="${x(i).toFixed(1)}" y="${y(v).toFixed(1)}" width="${bw.toFixed(1)}" height="${(top + laneH - y(v)).toFixed(1)}" fill="#3b73b9"/>`);
      if (n > 0) parts.push(`<rect x="${x(i).toFixed(1)}" y="${y(v + n).toFixed(1)}" width="${bw.toFixed(1)}" height="${(y(v) - y(v + n)).toFixed(1)}" fill="#d9534f"/>`);
    });
    const limitY = y(rate / 10);
    parts.push(`<line x1="${left}" y1="${limitY.toFixed(1)}" x2="${w - 20}" y2="${limitY.toFixed(1)}" stroke="#2a2" stroke-dasharray="4 3"/>`);
    parts.push(`<text x="4" y="${(limitY + 4).toFixed(1)}" font-size="11" fill="#2a2">${rate / 10}/100ms</text>`);
  });
  const h = 30 + runs.length * (laneH + 40);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif">` +
    `<rect width="100%" height="100%" fill="white"/>${parts.join("")}` +
    `<text x="${left}" y="${h - 8}" font-size="11" fill="#555">requests arriving per 100 ms (blue accepted, red 429); dashed: the average allowed per 100 ms; ${(end / 1000).toFixed(1)} s shown</text></svg>\n`;
}
