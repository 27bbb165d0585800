/**
 * `npm run bench:adaptive`: unknown limits, in real time on 127.0.0.1. Closed-loop callers against
 * servers whose limit the client is told nothing about, told 2× too much, or told right: sluice's
 * adaptive rate beside the AWS SDK's adaptive rate limiter and today's non-adaptive sluice, all in
 * the same run (side by side, each on its own quota of the same server process). Then a fleet: 4
 * processes, each with its own client, on one shared quota.
 *
 * Writes the "Unknown limits" section of `bench/RESULTS.md` (between `<!-- adaptive:start -->` and
 * `<!-- adaptive:end -->`, the rest of the file intact), `bench/adaptive.svg`, and the generated
 * summary in the README. `--quick` runs shorter and writes nothing; `--no-write` only prints.
 *
 * The real-nginx row needs `nginx` on the PATH; without it the row is skipped with a note.
 *
 * @module
 */
import { readFileSync, writeFileSync } from "node:fs";
import { type ClientId, drive, Recorder } from "./adaptive/drivers.ts";
import { adaptiveSvg, type Panel } from "./adaptive/chart.ts";
import { type Figures, figures, jain } from "./adaptive/metrics.ts";
import { nginxMissing, SERVER_KINDS, type ServerKind } from "./adaptive/servers.ts";
import { benchScript, runChild } from "./lib/child.ts";
import { environment } from "./lib/env.ts";
import { table } from "./lib/format.ts";
import { replaceBetween } from "./lib/markers.ts";
import type { Answer } from "./adaptive/drivers.ts";

const args = new Set(process.argv.slice(2));
const QUICK = args.has("--quick");
const WRITE = !QUICK && !args.has("--no-write");
const RATE = 20;
const CALLERS = 20;
const DURATION = QUICK ? 15_000 : 30_000;
const LATENCY = { min: 20, max: 80 };
const FLEET = 4;
const FLEET_CALLERS = 10;

const CLIENT_LABEL: Record<ClientId, string> = { aws: "AWS SDK adaptive", fixed: "sluice, fixed limit", adaptive: "sluice adaptive" };
type Telling = "nothing" | "2x" | "right";
const TELLINGS: readonly { id: Telling; label: string; told: number | undefined; clients: readonly ClientId[] }[] = [
  { id: "nothing", label: "told nothing", told: undefined, clients: ["aws", "adaptive"] },
  { id: "2x", label: "told 2× too much", told: 2 * RATE, clients: ["fixed", "adaptive"] },
  { id: "right", label: "told right", told: RATE, clients: ["fixed", "adaptive"] },
];

interface Row {
  kind: ServerKind;
  telling: (typeof TELLINGS)[number];
  client: ClientId;
  f: Figures;
}

async function scenario(kind: ServerKind): Promise<Row[] | string> {
  const pairs = TELLINGS.flatMap((telling) => telling.clients.map((client) => ({ telling, client })));
  const server = await kind.start(RATE, pairs.length, LATENCY);
  if (server === undefined) return nginxMissing() ?? "not available";
  try {
    const t0 = performance.now();
    const recorders = pairs.map(() => new Recorder(t0));
    await Promise.all(pairs.map((p, lane) =>
      drive(p.client, { url: `${server.url}/${lane}`, callers: CALLERS, durationMs: DURATION, told: p.telling.told, recorder: recorders[lane]!, endAt: t0 + DURATION })
    ));
    return pairs.map((p, lane) => ({ kind, telling: p.telling, client: p.client, f: figures(recorders[lane]!.answers, RATE, DURATION) }));
  } finally {
    await server.close();
  }
}

interface FleetResult {
  client: ClientId;
  perProcess: Figures[];
  total: Figures;
  fairness: number;
}

async function fleet(): Promise<FleetResult[]> {
  const kind = SERVER_KINDS.find((k) => k.id === "sliding-log")!;
  const clients: ClientId[] = ["adaptive", "aws"];
  const server = (await kind.start(RATE, clients.length, LATENCY))!;
  try {
    const start = Date.now() + 500; // children start together, half a second from now
    const runs = await Promise.all(clients.flatMap((client, lane) =>
      Array.from({ length: FLEET }, () =>
        runChild<Answer[]>(benchScript("adaptive-child.ts"), [client, `${server.url}/${lane}`, String(FLEET_CALLERS), String(start), String(DURATION)], DURATION + 30_000))
    ));
    return clients.map((client, c) => {
      const outcomes = runs.slice(c * FLEET, (c + 1) * FLEET).map((o) => {
        if (o.result === undefined) throw new Error(`fleet child failed: ${o.error}`);
        return o.result;
      });
      const perProcess = outcomes.map((answers) => figures(answers, RATE / FLEET, DURATION));
      const total = figures(outcomes.flat().sort((a, b) => a.at - b.at), RATE, DURATION);
      return { client, perProcess, total, fairness: jain(perProcess.map((f) => f.utilisation)) };
    });
  } finally {
    await server.close();
  }
}

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const secs = (x: number) => (x === Infinity ? "never" : `${x} s`);

const env = environment();
console.error(`unknown limits: ${RATE} req/s servers, ${CALLERS} callers per client, ${DURATION / 1000} s per run, latency ${LATENCY.min}–${LATENCY.max} ms`);
const rows: Row[] = [];
const skipped: string[] = [];
for (const kind of SERVER_KINDS) {
  console.error(`  ${kind.label} …`);
  const result = await scenario(kind);
  if (typeof result === "string") skipped.push(`${kind.label}: ${result}`);
  else rows.push(...result);
}
console.error(`  fleet: ${FLEET} processes × ${FLEET_CALLERS} callers on one quota …`);
const fleets = await fleet();

const date = env.date.slice(0, 10);
const tableRows = rows.map((r) => [
  r.kind.label,
  r.telling.label,
  CLIENT_LABEL[r.client],
  `${r.f.refused} of ${r.f.requests} (${pct(r.f.refusedShare)})`,
  pct(r.f.steadyRefusedShare),
  pct(r.f.utilisation),
  secs(r.f.reached90At),
  secs(r.f.convergedAt),
]);
const fleetRows = fleets.map((f) => [
  CLIENT_LABEL[f.client],
  `${f.total.refused} of ${f.total.requests} (${pct(f.total.refusedShare)})`,
  pct(f.total.steadyRefusedShare),
  pct(f.total.utilisation),
  f.perProcess.map((p) => pct(p.utilisation / FLEET)).join(" / "),
  f.fairness.toFixed(3),
]);
const section = [
  "<!-- adaptive:start -->",
  "## Unknown limits: adaptive rate",
  "",
  `Generated by \`npm run bench:adaptive\` on ${env.date}: ${env.cores} cores, ${env.cpu}, ${env.os}, load average at start ${env.load}; Node ${env.node}. ` +
  `Servers on 127.0.0.1 allowing ${RATE} requests a second; ${CALLERS} closed-loop callers per client (each sends, awaits the answer, sends again) for ` +
  `${DURATION / 1000} s; the simulated servers hold each answer ${LATENCY.min}–${LATENCY.max} ms (real nginx: loopback latency). ` +
  "All clients of one server kind run at the same time, each on its own quota. Refusals are counted from every answer the server gave " +
  "(retries included). *Share of the server's rate*: accepted requests from 10 s on ÷ (rate × time). *90 % reached*: the first second whose " +
  "5-s window holds 90 % of the rate; *held from*: from then on every 5-s window does. The AWS SDK's `DefaultRateLimiter` " +
  "(`@smithy/util-retry`) is used as its adaptive retry strategy uses it (`getSendToken` before each send, `updateClientSendingRate` after " +
  "each answer, a throttled request retried after the SDK's throttling backoff) and cannot be told a limit; today's non-adaptive sluice " +
  "(`createThrottledFetch({ limit, interval })`) needs one.",
  "",
  table(
    ["server", "client told", "client", "refused (429)", "refused, 2nd half", "share of the server's rate", "90 % reached", "held from"],
    tableRows,
    ["l", "l", "l", "r", "r", "r", "r", "r"],
  ),
  ...(skipped.length > 0 ? ["", ...skipped.map((s) => `Skipped: ${s}.`)] : []),
  "",
  `### ${FLEET} processes on one quota`,
  "",
  `${FLEET} processes, each with its own client told nothing and ${FLEET_CALLERS} callers, against one strict rolling window of ${RATE}/s ` +
  "(the AWS fleet on a second quota of the same server, at the same time). Fairness is Jain's index over the processes' accepted requests " +
  "(1 = equal shares).",
  "",
  table(
    ["client (each process)", "refused (429), all processes", "refused, 2nd half", "share of the server's rate, together", "per process", "fairness"],
    fleetRows,
    ["l", "r", "r", "r", "r", "r"],
  ),
  "",
  "![accepted requests per second](adaptive.svg)",
  "<!-- adaptive:end -->",
].join("\n");
process.stdout.write(`${section}\n`);

if (WRITE) {
  const results = new URL("./RESULTS.md", import.meta.url);
  writeFileSync(results, replaceBetween(readFileSync(results, "utf8"), "<!-- adaptive:start -->", "<!-- adaptive:end -->", section, true));
  const panels: Panel[][] = SERVER_KINDS.filter((k) => rows.some((r) => r.kind === k)).map((kind) =>
    TELLINGS.map((telling) => ({
      title: `${kind.id}, ${telling.label}`,
      series: rows.filter((r) => r.kind === kind && r.telling === telling).map((r) => ({ client: CLIENT_LABEL[r.client], perSecond: r.f.perSecond })),
    }))
  );
  writeFileSync(new URL("./adaptive.svg", import.meta.url), adaptiveSvg(panels, RATE, `Accepted requests per second, ${RATE}/s servers (${date})`));
  // The README's figures are generated from this run, never typed by hand.
  const pick = (kind: string, telling: Telling, client: ClientId) => rows.find((r) => r.kind.id === kind && r.telling.id === telling && r.client === client)?.f;
  const range = (telling: Telling, client: ClientId, f: (x: Figures) => number, fmt: (x: number) => string) => {
    const xs = SERVER_KINDS.map((k) => pick(k.id, telling, client)).filter((x) => x !== undefined).map(f);
    const lo = Math.min(...xs);
    const hi = Math.max(...xs);
    return lo === hi ? fmt(lo) : `${fmt(lo)}–${fmt(hi)}`;
  };
  const adaptiveFleet = fleets.find((f) => f.client === "adaptive")!;
  const awsFleet = fleets.find((f) => f.client === "aws")!;
  const kinds = SERVER_KINDS.filter((k) => rows.some((r) => r.kind === k)).length;
  const summary = `\nMeasured in real time by \`npm run bench:adaptive\` (${date}, ${kinds} server kinds at ${RATE}/s on 127.0.0.1 — ` +
    `strict rolling window, fixed window, nginx-like and${skipped.some((s) => s.includes("nginx")) ? " (skipped this run) " : " "}real nginx \`limit_req\` — ` +
    `${CALLERS} callers, ${DURATION / 1000} s; full table in [bench/RESULTS.md](bench/RESULTS.md#unknown-limits-adaptive-rate)):\n\n` +
    `- told nothing: ${range("nothing", "adaptive", (f) => f.refusedShare, pct)} of requests refused and ${range("nothing", "adaptive", (f) => f.utilisation, pct)} ` +
    `of the server's rate used; the AWS SDK's adaptive limiter in the same run: ${range("nothing", "aws", (f) => f.refusedShare, pct)} refused, ` +
    `${range("nothing", "aws", (f) => f.utilisation, pct)} of the rate;\n` +
    `- told 2× too much: ${range("2x", "adaptive", (f) => f.refusedShare, pct)} refused, ${range("2x", "adaptive", (f) => f.utilisation, pct)} of the rate ` +
    `(a fixed limit at 2×: ${range("2x", "fixed", (f) => f.refusedShare, pct)} refused);\n` +
    `- told right: ${range("right", "adaptive", (f) => f.refused, String)} refused, ${range("right", "adaptive", (f) => f.utilisation, pct)} of the rate ` +
    `(fixed limit: ${range("right", "fixed", (f) => f.refused, String)} refused, ${range("right", "fixed", (f) => f.utilisation, pct)});\n` +
    `- ${FLEET} processes told nothing on one quota: ${pct(adaptiveFleet.total.refusedShare)} refused, ${pct(adaptiveFleet.total.utilisation)} of the rate ` +
    `together, Jain's fairness index ${adaptiveFleet.fairness.toFixed(2)} (AWS: ${pct(awsFleet.total.refusedShare)} refused, ${pct(awsFleet.total.utilisation)}, ` +
    `fairness ${awsFleet.fairness.toFixed(2)}).\n`;
  const readme = new URL("../README.md", import.meta.url);
  writeFileSync(readme, replaceBetween(readFileSync(readme, "utf8"), "<!-- adaptive-bench:summary -->", "<!-- /adaptive-bench:summary -->", summary, false));
  console.error("wrote bench/RESULTS.md (unknown limits section), bench/adaptive.svg, and the generated summary in README.md");
}
