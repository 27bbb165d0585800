/**
 * The README's benchmark summary (the `<!-- figures:bench -->` block), generated from a full run's
 * figures, so that no figure in it is typed by hand: each cell is formatted by the same functions
 * as bench/RESULTS.md (and `npm run check:docs` checks that every number in the block is in that
 * file). Only the *why* of a missed target is prose, keyed by the target.
 *
 * @module
 */
import { bytes, ms, ns, num, percent } from "./format.ts";
import type { OverheadResult } from "../sections/overhead.ts";
import { fastestPeer, OPERATIONS } from "../sections/overhead.ts";
import type { SaturationOptions, SaturationStats } from "../sections/saturation.ts";
import type { ScaleRow } from "../sections/scale.ts";
import type { GrowthResult } from "../sections/growth.ts";
import { type HttpOptions, type HttpResult, overheadOf } from "../sections/http.ts";
import type { Peer } from "../peers.ts";

/** What a full run measured, as `bench/main.ts` collects it. */
export interface SummaryInput {
  /** The run's date, as RESULTS.md states it (`2026-11-24T03:05:21Z`). */
  date: string;
  peers: readonly Peer[];
  /** The sluice limiter the summary speaks for (WindowLimiter). */
  reference: Peer;
  overhead: OverheadResult;
  saturation: readonly SaturationStats[];
  saturationOptions: SaturationOptions;
  scale: readonly ScaleRow[];
  growth: GrowthResult;
  http: HttpResult;
  httpOptions: HttpOptions;
  /** The targets table: [target, measured, met]. */
  checks: readonly [string, string, boolean | "median-met" | "median-missed" | "unresolved" | undefined][];
}

/** Why a target is missed, for the targets the project knows it misses (prose, not figures). */
const WHY: readonly [prefix: string, why: string][] = [
  ["Faster than the fastest peer: `tryAcquire()`",
    "each call reads `performance.now()`, about 45 ns on this machine and the largest single cost; and a strict window logs every grant still inside its interval, which at the section's never-binding 10⁹ a second is millions of entries (with a 1-ms interval, ~15 ns less in an isolated run)"],
  ["Faster than the fastest peer: `await schedule(task)`",
    "WindowLimiter: the same clock read and grant log; SmoothLimiter, without a log, is ahead"],
  ["≤ 200 bytes per queued waiter", "the promise and V8's resolving closure are most of it"],
  ["p99 start lateness vs the ideal schedule ≤ 2 ms — WindowLimiter",
    "a strict window cannot grant before the previous grant + interval, so about 1 ms of timer lateness per window compounds over the run; per grant it is the figure in brackets"],
  ["p99 start lateness vs the ideal schedule ≤ 2 ms — SmoothLimiter", "each grant waits for the previous one + interval ÷ limit, so timer lateness compounds; per grant it is the figure in brackets"],
  ["≥ 99% steady utilisation — SmoothLimiter", "with `burst: 0` a late timer's delay is never given back — the safe choice against a zero-tolerance leaky bucket"],
  ["HTTP overhead ≤ 5 % — throttled fetch", "sluice's own time per call is the figure above; over a socket the run-to-run noise of a shared 2-core machine is of the same size"],
  ["HTTP overhead ≤ 5 % — undici interceptor", "not explained: the interceptor's own CPU per request (`bench/undici-cpu.ts`) is a few per cent of a request, and the gap stays larger than this machine's noise run after run"],
];

const signed = (fraction: number): string => `${fraction >= 0 ? "+" : ""}${percent(fraction)}`;

function labelOf(peers: readonly Peer[], id: string): string {
  return peers.find((p) => p.id === id)?.label ?? id;
}

/** The markdown between the README's `figures:bench` markers. */
export function readmeSummary(s: SummaryInput): string {
  const { peers, reference } = s;
  const others = peers.filter((p) => p.pkg !== "sluice");
  const rows: string[][] = [];

  // 1. The four limiter operations.
  const own = OPERATIONS.map((op) => s.overhead.medians[op.id]![reference.id]);
  const best = OPERATIONS.map((op) => fastestPeer(s.overhead, op.id, peers));
  rows.push([
    OPERATIONS.map((op) => op.label.replace(/ \(.*\)|, one caller in a loop/g, "")).join(" / "),
    `${own.map((v) => (v === undefined ? "—" : ns(v))).join(" / ")} (${reference.label.replace(/^sluice /, "")})`,
    best.map((b) => (b === undefined ? "—" : `${b.peer.label} ${ns(b.ns)}`)).join(" / "),
  ]);

  // 2. Saturation: windows over the limit, counted at task start.
  const o = s.saturationOptions;
  const w = s.saturation.find((x) => x.peer === reference.id);
  const isPeer = (id: string) => others.some((p) => p.id === id);
  const over = s.saturation.filter((x) => isPeer(x.peer) && x.max1000 > o.limit && !x.error);
  if (w !== undefined) {
    rows.push([
      `strict window under saturation (${o.limit} per ${o.interval} ms, ${o.callers} callers, ${o.tasks.toLocaleString("en-US")} tasks)`,
      `most in any ${o.interval} ms: ${w.max1000} (${w.violations1000} violating grants), counted at task start; ${percent(w.utilisation)} utilisation`,
      over.length === 0 ? "none over the limit" : `most in any ${o.interval} ms: ${over.map((x) => `${labelOf(peers, x.peer)} ${x.max1000}`).join(", ")}`,
    ]);
  }

  // 3. Scale: heap per waiter and timers; abort with one shared signal.
  const mine = s.scale.filter((r) => r.peer === reference.id);
  const run = mine.find((r) => r.op === "run");
  const bare = mine.find((r) => r.op === "acquire");
  // Peers measured at the same queue size only (one may be measured at fewer, where it is slow).
  const theirs = s.scale.filter((r) => isPeer(r.peer) && r.op === "run" && r.bytesPerWaiter !== undefined && r.waiters === run?.waiters);
  if (run !== undefined && bare !== undefined && theirs.length > 0) {
    const heap = theirs.map((r) => r.bytesPerWaiter!).sort((a, b) => a - b);
    const timers = theirs.filter((r) => r.timers !== undefined).map((r) => `${labelOf(peers, r.peer)} ${r.timers!.toLocaleString("en-US")}`);
    rows.push([
      `${run.waiters.toLocaleString("en-US")} queued waiters: heap per waiter, live timers`,
      `${bare.bytesPerWaiter === undefined ? "—" : bytes(bare.bytesPerWaiter)} (\`acquire\`), ${run.bytesPerWaiter === undefined ? "—" : bytes(run.bytesPerWaiter)} (\`schedule\`); ${run.timers === undefined ? "—" : `${run.timers.toLocaleString("en-US")} ${run.timers === 1 ? "timer" : "timers"}`}`,
      `${bytes(heap[0]!)}–${bytes(heap.at(-1)!)}; timers: ${timers.join(", ")}`,
    ]);
    // Both ways to abort, the one sluice is slower at included.
    for (const [key, what] of [["abortSharedMs", "sharing one signal"], ["abortEachMs", "with one controller each"]] as const) {
      const aborts = s.scale.filter((r) => isPeer(r.peer) && r.op === "run" && r[key] !== undefined && r.waiters === run.waiters)
        .sort((a, b) => a[key]! - b[key]!);
      const own = run[key];
      if (own !== undefined && aborts.length > 0) {
        rows.push([`abort ${run.waiters.toLocaleString("en-US")} waiters ${what}`, ms(own), `${labelOf(peers, aborts[0]!.peer)} ${ms(aborts[0]![key]!)}`]);
      }
    }
  }

  // 5. Growth: cost per waiter from the shallowest to the deepest queue.
  const series = (id: string) => s.growth.enqueue[id]?.series ?? {};
  const ends = (sr: Record<number, number>): [number, number] | undefined => {
    const keys = Object.keys(sr).map(Number).sort((a, b) => a - b);
    return keys.length < 2 ? undefined : [keys[0]!, keys.at(-1)!];
  };
  const mineEnds = ends(series(reference.id));
  if (mineEnds !== undefined) {
    const sr = series(reference.id);
    // The peer cheapest at the deepest queue, among those measured as deep.
    const deep = others.flatMap((p) => {
      const e = ends(series(p.id));
      return e === undefined || e[1] !== mineEnds[1] ? [] : [{ p, first: series(p.id)[e[0]]!, last: series(p.id)[e[1]]! }];
    }).sort((a, b) => a.last - b.last);
    const peerCells = deep.slice(0, 1).map((d) => `${d.p.label} ${ns(d.first)} → ${ns(d.last)}`);
    rows.push([
      `cost per waiter, ${mineEnds[0].toLocaleString("en-US")} → ${mineEnds[1].toLocaleString("en-US")} queued`,
      `${ns(sr[mineEnds[0]]!)} → ${ns(sr[mineEnds[1]]!)}`,
      peerCells.length === 0 ? "—" : peerCells.join("; "),
    ]);
  }

  // 4. HTTP: overhead over raw fetch, and a strict server at its documented limit.
  const h = s.http;
  const pair = (id: string, withSpread = false) => (["sequential", "concurrent"] as const).map((m) => {
    const v = overheadOf(h, m, id);
    const iqr = h.spread?.[m][id]; // absent from runs saved before it was measured
    if (v === undefined) return "—";
    return withSpread && iqr !== undefined ? `${signed(v)} (${signed(iqr[0])} … ${signed(iqr[1])})` : signed(v);
  }).join(" / ");
  rows.push([
    `throttled fetch overhead vs raw \`fetch\` (keep-alive server in a child process), sequential / ${s.httpOptions.overheadCallers} concurrent; in brackets the middle half of the per-round ratios`,
    `defaults ${pair("sluice", true)}; \`timeout: 60_000\` ${pair("sluice-timeout")}; own time per call ${num(h.ownCost.defaults)} µs (wall clock, a warm client, a fetch that answers at once); \`sluice/undici\` vs a plain Agent ${pair("agent-throttle", true)}`,
    `ky ${pair("ky")} (its defaults time out at 10 s: a signal and a timer per request, as sluice's \`timeout: 60_000\`); raw \`fetch\` with a signal ${pair("fetch-signal")}`,
  ]);
  const mineStrict = h.strict["sluice"];
  const ky = h.strict["ky"];
  if (mineStrict !== undefined) {
    const rate = mineStrict.achievedPerWindow === undefined ? "" : `, ${num(mineStrict.achievedPerWindow)}/s of ${s.httpOptions.limit}`;
    rows.push([
      `at a strict server's documented limit (${s.httpOptions.requests} requests, ${s.httpOptions.callers} callers)`,
      `${mineStrict.got429} × 429, ${mineStrict.ok} of ${s.httpOptions.requests} done${rate}`,
      ky === undefined ? "—" : `ky: ${ky.got429} × 429, ${ky.failed} failed`,
    ]);
  }

  // Missed by the median counts as missed (its spread only says the machine was noisy).
  const missed = s.checks.filter(([, , met]) => met === false || met === "median-missed" || met === "unresolved");
  const misses = missed.map(([target, measured, met]) => {
    const why = WHY.find(([prefix]) => target.startsWith(prefix))?.[1];
    const how = met === false ? "" : " — by the median; this run's spread reaches below the target";
    return `${target}: ${measured}${how}${why === undefined ? "" : ` (${why})`}`;
  });
  const unresolved = s.checks.filter(([, , met]) => met === "median-met").map(([target, measured]) => `${target}: ${measured}`);
  return [
    `From the full run of ${s.date.slice(0, 10)} committed in \`bench/RESULTS.md\` (Node 24, shared 2-core machine; ratios`,
    "hold better than absolute numbers). Generated by `npm run bench` from that run's figures; `npm run check:docs`",
    "fails if a figure here is not in that file.",
    "",
    "| | sluice | the best peer |",
    "|---|---|---|",
    ...rows.map((r) => `| ${r.map((c) => c.replaceAll("|", "\\|")).join(" | ")} |`),
    "",
    misses.length === 0
      ? unresolved.length === 0 ? "Every target of the run was met." : "No target was missed in this run."
      : `Targets missed in this run, with the measured figures (details in RESULTS.md):\n${misses.map((m) => `- ${m}`).join("\n")}`,
    ...(unresolved.length === 0 ? [] : [
      "",
      `Met by the median only — the middle half of the per-round ratios reaches past the target:\n${unresolved.map((m) => `- ${m}`).join("\n")}`,
    ]),
  ].join("\n");
}
