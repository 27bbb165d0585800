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
/** Rounds, interleaved: each runs every server kind, then the fleet; the tables give medians and ranges. */
const ROUNDS = QUICK ? 1 : Number([...args].find((a) => a.startsWith("--rounds="))?.slice("--rounds=".length) ?? 3);
if (!(Number.isInteger(ROUNDS) && ROUNDS >= 1)) throw new RangeError(`--rounds must be a positive integer, got ${ROUNDS}`);

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
  /** The first round's figures (the chart's). */
  f: Figures;
  /** Every round's. */
  all: Figures[];
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
    return pairs.map((p, lane) => {
      const f = figures(recorders[lane]!.answers, RATE, DURATION);
      return { kind, telling: p.telling, client: p.client, f, all: [f] };
    });
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
    const start = Date.now() + 3000; // children wait for it and start together (8 Node processes take a while to load on 2 cores)
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
const median = (xs: readonly number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const m = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[m]! : (sorted[m - 1]! + sorted[m]!) / 2;
};
/** The median over the rounds and, with more than one, the range: `3.0 % (2.6 %–4.7 %)`. */
const spread = (xs: readonly number[], fmt: (x: number) => string) => {
  if (xs.length === 1) return fmt(xs[0]!);
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  return `${fmt(median(xs))} (${lo === hi ? fmt(lo) : `${fmt(lo)}–${fmt(hi)}`})`;
};

const env = environment();
console.error(`unknown limits: ${RATE} req/s servers, ${CALLERS} callers per client, ${DURATION / 1000} s per run, latency ${LATENCY.min}–${LATENCY.max} ms`);
const rows: Row[] = [];
const skipped: string[] = [];
const fleetRounds: FleetResult[][] = [];
for (let round = 1; round <= ROUNDS; round++) {
  for (const kind of SERVER_KINDS) {
    if (skipped.some((s) => s.startsWith(`${kind.label}:`))) continue;
    console.error(`  round ${round}/${ROUNDS}: ${kind.label} …`);
    const result = await scenario(kind);
    if (typeof result === "string") {
      skipped.push(`${kind.label}: ${result}`);
      continue;
    }
    for (const r of result) {
      const row = rows.find((x) => x.kind === r.kind && x.telling === r.telling && x.client === r.client);
      if (row === undefined) rows.push(r);
      else row.all.push(r.f);
    }
  }
  console.error(`  round ${round}/${ROUNDS}: fleet, ${FLEET} processes × ${FLEET_CALLERS} callers on one quota …`);
  fleetRounds.push(await fleet());
}
const fleets = fleetRounds[0]!;
/** Every round's fleet result of `client`. */
const fleetOf = (client: ClientId) => fleetRounds.map((round) => round.find((f) => f.client === client)!);

const date = env.date.slice(0, 10);
const tableRows = rows.map((r) => [
  r.kind.label,
  r.telling.label,
  CLIENT_LABEL[r.client],
  `${spread(r.all.map((f) => f.refusedShare), pct)}; ${r.all.map((f) => `${f.refused}/${f.requests}`).join(", ")}`,
  spread(r.all.map((f) => f.steadyRefusedShare), pct),
  spread(r.all.map((f) => f.utilisation), pct),
  spread(r.all.map((f) => f.reached90At), secs),
  spread(r.all.map((f) => f.convergedAt), secs),
]);
const fleetRows = fleets.map((f) => {
  const all = fleetOf(f.client);
  return [
    CLIENT_LABEL[f.client],
    `${spread(all.map((x) => x.total.refusedShare), pct)}; ${all.map((x) => `${x.total.refused}/${x.total.requests}`).join(", ")}`,
    spread(all.map((x) => x.total.steadyRefusedShare), pct),
    spread(all.map((x) => x.total.utilisation), pct),
    f.perProcess.map((p) => pct(p.utilisation / FLEET)).join(" / "),
    spread(all.map((x) => x.fairness), (x) => x.toFixed(3)),
  ];
});
const section = [
  "<!-- adaptive:start -->",
  "## Unknown limits: adaptive rate",
  "",
  `Generated by \`npm run bench:adaptive\` on ${env.date}: ${env.cores} cores, ${env.cpu}, ${env.os}, load average at start ${env.load}; Node ${env.node}. ` +
  `Servers on 127.0.0.1 allowing ${RATE} requests a second; ${CALLERS} closed-loop callers per client (each sends, awaits the answer, sends again) for ` +
  `${DURATION / 1000} s; the simulated servers hold each answer ${LATENCY.min}–${LATENCY.max} ms (real nginx: loopback latency). ` +
  `${ROUNDS} round${ROUNDS === 1 ? "" : "s"}, interleaved (each round runs every server kind, then the fleet): each cell gives the median over the ` +
  "rounds and, in brackets, their range; refusals also as refused/requests per round. On a shared, loaded machine: timers fire late under load, " +
  "and a client paced at a learned rate cannot make the lost time up, so real-time shares run a few points below the virtual-time simulation's. " +
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
  "(the AWS fleet on a second quota of the same server, at the same time), all starting at one common time (each waits for it once loaded). " +
  "Fairness is Jain's index over the processes' accepted requests " +
  "(1 = equal shares; 1/4 when one process takes all).",
  "",
  table(
    ["client (each process)", "refused (429), all processes", "refused, 2nd half", "share of the server's rate, together", "per process (round 1)", "Jain's fairness index"],
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
  writeFileSync(new URL("./adaptive.svg", import.meta.url), adaptiveSvg(panels, RATE, `Accepted requests per second, ${RATE}/s servers (${date}, round 1)`));
  // The README's figures are generated from this run, never typed by hand.
  // Across server kinds, the range of each kind's median over the rounds.
  const pick = (kind: string, telling: Telling, client: ClientId) => rows.find((r) => r.kind.id === kind && r.telling.id === telling && r.client === client)?.all;
  const range = (telling: Telling, client: ClientId, f: (x: Figures) => number, fmt: (x: number) => string) => {
    const xs = SERVER_KINDS.map((k) => pick(k.id, telling, client)).filter((x) => x !== undefined).map((all) => median(all.map(f)));
    const lo = Math.min(...xs);
    const hi = Math.max(...xs);
    return lo === hi ? fmt(lo) : `${fmt(lo)}–${fmt(hi)}`;
  };
  const fleetMedian = (client: ClientId) => {
    const all = fleetOf(client);
    return {
      refusedShare: median(all.map((x) => x.total.refusedShare)),
      utilisation: median(all.map((x) => x.total.utilisation)),
      fairness: median(all.map((x) => x.fairness)),
    };
  };
  const adaptiveFleet = fleetMedian("adaptive");
  const awsFleet = fleetMedian("aws");
  const kinds = SERVER_KINDS.filter((k) => rows.some((r) => r.kind === k)).length;
  const summary = `\nMeasured in real time by \`npm run bench:adaptive\` (${date}, ${kinds} server kinds at ${RATE}/s on 127.0.0.1 — ` +
    `strict rolling window, fixed window, nginx-like and${skipped.some((s) => s.includes("nginx")) ? " (skipped this run) " : " "}real nginx \`limit_req\` — ` +
    `${CALLERS} callers, ${DURATION / 1000} s; each figure the median of ${ROUNDS} interleaved round${ROUNDS === 1 ? "" : "s"}, ranges across server kinds; ` +
    `full table with each round's spread in [bench/RESULTS.md](bench/RESULTS.md#unknown-limits-adaptive-rate)):\n\n` +
    `- told nothing: ${range("nothing", "adaptive", (f) => f.refusedShare, pct)} of requests refused and ${range("nothing", "adaptive", (f) => f.utilisation, pct)} ` +
    `of the server's rate used; the AWS SDK's adaptive limiter in the same run: ${range("nothing", "aws", (f) => f.refusedShare, pct)} refused, ` +
    `${range("nothing", "aws", (f) => f.utilisation, pct)} of the rate;\n` +
    `- told 2× too much: ${range("2x", "adaptive", (f) => f.refusedShare, pct)} refused, ${range("2x", "adaptive", (f) => f.utilisation, pct)} of the rate ` +
    `(a fixed limit at 2×: ${range("2x", "fixed", (f) => f.refusedShare, pct)} refused);\n` +
    `- told right: ${range("right", "adaptive", (f) => f.refused, String)} refused, ${range("right", "adaptive", (f) => f.utilisation, pct)} of the rate ` +
    `(fixed limit: ${range("right", "fixed", (f) => f.refused, String)} refused, ${range("right", "fixed", (f) => f.utilisation, pct)});\n` +
    `- ${FLEET} processes told nothing on one quota: ${pct(adaptiveFleet.refusedShare)} refused, ${pct(adaptiveFleet.utilisation)} of the rate ` +
    `together, Jain's fairness index ${adaptiveFleet.fairness.toFixed(2)} (AWS: ${pct(awsFleet.refusedShare)} refused, ${pct(awsFleet.utilisation)}, ` +
    `fairness ${awsFleet.fairness.toFixed(2)}).\n`;
  const readme = new URL("../README.md", import.meta.url);
  writeFileSync(readme, replaceBetween(readFileSync(readme, "utf8"), "<!-- adaptive-bench:summary -->", "<!-- /adaptive-bench:summary -->", summary, false));
  console.error("wrote bench/RESULTS.md (unknown limits section), bench/adaptive.svg, and the generated summary in README.md");
}
