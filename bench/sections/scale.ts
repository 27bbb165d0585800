/**
 * Section 3 — scale: 100,000 waiters queued at once. Each measurement runs in a fresh child process
 * (`scale-child.ts`), so heap deltas start from a clean heap and a library that needs minutes cannot
 * stall the others; rounds visit the libraries round-robin and report medians.
 *
 * @module
 */
import { bytes, ms, ns, table } from "../lib/format.ts";
import { benchScript, type ChildOutcome, runChild } from "../lib/child.ts";
import { rotate } from "../lib/measure.ts";
import { median } from "../lib/stats.ts";
import type { Peer } from "../peers.ts";

export interface ScaleOptions {
  rounds: number;
  /** Waiters per library. */
  waiters: number;
  /** Per-library overrides, with the reason shown in RESULTS.md. */
  overrides: Record<string, { waiters: number; reason: string }>;
  /** Time limit of one child, ms. */
  timeoutMs: number;
}

interface QueueResult {
  callMs: number;
  queuedMs: number;
  bytesPerWaiter: number;
  timers: number;
}

interface AbortResult {
  abortCallMs: number;
  settledMs: number;
  rejected: number;
  timersLeft: number;
}

/** One table row: a library, or sluice's bare `acquire()`. */
export interface ScaleRow {
  peer: string;
  op: "run" | "acquire";
  waiters: number;
  enqueueMs?: number;
  bytesPerWaiter?: number;
  timers?: number;
  queueError?: string;
  abortEachMs?: number;
  abortEachError?: string;
  abortSharedMs?: number;
  abortSharedError?: string;
  exitAfterIdleMs?: number;
  exitError?: string;
}

function medianOf(values: (number | undefined)[]): number | undefined {
  const v = values.filter((x): x is number => x !== undefined);
  return v.length === 0 ? undefined : median(v);
}

export async function runScale(peers: readonly Peer[], o: ScaleOptions, log: (line: string) => void): Promise<ScaleRow[]> {
  const child = benchScript("scale-child.ts");
  const rows = new Map<string, { peer: Peer; op: "run" | "acquire"; waiters: number; queue: ChildOutcome<QueueResult>[]; each: ChildOutcome<AbortResult>[]; shared: ChildOutcome<AbortResult>[]; exit?: ChildOutcome<never> }>();
  const key = (p: Peer, op: string): string => `${p.id}:${op}`;
  for (const p of peers) {
    const waiters = o.overrides[p.id]?.waiters ?? o.waiters;
    rows.set(key(p, "run"), { peer: p, op: "run", waiters, queue: [], each: [], shared: [] });
    if (p.pkg === "sluice") rows.set(key(p, "acquire"), { peer: p, op: "acquire", waiters, queue: [], each: [], shared: [] });
  }
  // A measurement that hit the time limit once is not repeated: the limit is the figure.
  const gaveUp = new Set<string>();
  const measure = async <T>(into: ChildOutcome<T>[], args: string[]): Promise<void> => {
    const id = args.join(" ");
    if (gaveUp.has(id)) return;
    const outcome = await runChild<T>(child, args, o.timeoutMs);
    if (outcome.killed) gaveUp.add(id);
    into.push(outcome);
  };
  for (let round = 0; round < o.rounds; round++) {
    for (const p of rotate(peers, round)) {
      const run = rows.get(key(p, "run"))!;
      const n = String(run.waiters);
      await measure(run.queue, ["queue", p.id, n]);
      const acq = rows.get(key(p, "acquire"));
      if (acq !== undefined) await measure(acq.queue, ["queue", p.id, n, "acquire"]);
      if (p.abort === "per-call") await measure(run.each, ["abort-each", p.id, n]);
      if (p.abort !== "none") await measure(run.shared, ["abort-shared", p.id, n]);
      if (round === 0) run.exit = await runChild<never>(child, ["exit", p.id], 5000);
    }
    log(`  scale round ${round + 1}/${o.rounds}`);
  }
  return [...rows.values()].map((r) => {
    const firstError = (outcomes: ChildOutcome<unknown>[]): string | undefined => outcomes.find((x) => x.result === undefined)?.error;
    const row: ScaleRow = {
      peer: r.peer.id,
      op: r.op,
      waiters: r.waiters,
      enqueueMs: medianOf(r.queue.map((x) => x.result?.queuedMs)),
      bytesPerWaiter: medianOf(r.queue.map((x) => x.result?.bytesPerWaiter)),
      timers: medianOf(r.queue.map((x) => x.result?.timers)),
      abortEachMs: medianOf(r.each.map((x) => (x.result?.rejected === r.waiters ? x.result.settledMs : undefined))),
      abortSharedMs: medianOf(r.shared.map((x) => (x.result?.rejected === r.waiters ? x.result.settledMs : undefined))),
    };
    const qe = firstError(r.queue);
    if (row.enqueueMs === undefined && qe !== undefined) row.queueError = qe;
    const ee = firstError(r.each) ?? (r.each.some((x) => x.result !== undefined && x.result.rejected !== r.waiters) ? "not every promise rejected" : undefined);
    if (row.abortEachMs === undefined && ee !== undefined) row.abortEachError = ee;
    const se = firstError(r.shared) ?? (r.shared.some((x) => x.result !== undefined && x.result.rejected !== r.waiters) ? "not every promise rejected" : undefined);
    if (row.abortSharedMs === undefined && se !== undefined) row.abortSharedError = se;
    if (r.exit !== undefined) {
      if (r.exit.exitAfterIdleMs !== undefined) row.exitAfterIdleMs = r.exit.exitAfterIdleMs;
      else row.exitError = r.exit.error ?? (r.exit.killed ? "still running 5 s after its last task: killed" : "no IDLE line");
    }
    return row;
  });
}

export function scaleMarkdown(rows: readonly ScaleRow[], peers: readonly Peer[], o: ScaleOptions): string {
  const byId = new Map(peers.map((p) => [p.id, p]));
  const body = rows.map((r) => {
    const p = byId.get(r.peer)!;
    const label = r.op === "acquire" ? `${p.label} — bare \`acquire()\`` : p.label;
    const enqueue = r.enqueueMs === undefined ? `— (${r.queueError ?? "no result"})` : `${ms(r.enqueueMs)} (${ns((r.enqueueMs * 1e6) / r.waiters)} each)`;
    const abortCell = (value: number | undefined, error: string | undefined, support: boolean): string =>
      !support ? "— (no such API)" : value === undefined ? `— (${error ?? "no result"})` : ms(value);
    return [
      label,
      r.waiters.toLocaleString("en-US"),
      enqueue,
      r.bytesPerWaiter === undefined ? "—" : bytes(r.bytesPerWaiter),
      r.timers === undefined ? "—" : r.timers.toLocaleString("en-US"),
      r.op === "acquire" ? "" : abortCell(r.abortEachMs, r.abortEachError, p.abort === "per-call"),
      r.op === "acquire" ? "" : abortCell(r.abortSharedMs, r.abortSharedError, p.abort !== "none"),
      r.op === "acquire" ? "" : r.exitAfterIdleMs !== undefined ? `yes, ${ms(r.exitAfterIdleMs)} after its last task` : `**no** (${r.exitError})`,
    ];
  });
  const notes = Object.entries(o.overrides).map(([id, v]) => `- ${byId.get(id)?.label ?? id}: ${v.waiters.toLocaleString("en-US")} waiters — ${v.reason}`);
  return [
    `Median of ${o.rounds} round(s), each measurement in a fresh \`node --expose-gc\` process, libraries round-robin. ` +
      "The limiter allows 100 per 6 minutes and has just spent them, then N calls are made at once (sluice and the queues: `schedule`/`add` with a no-op task).",
    "",
    table(
      ["Library", "Waiters", "Time to enqueue", "Heap per waiter (after GC)", "Live timers", "Abort all (controller each)", "Abort all (one shared signal)", "Process exits when idle"],
      body,
      ["l", "r", "r", "r", "r", "r", "r", "l"],
    ),
    "",
    "- *Time to enqueue*: the calls and one event-loop turn (work a library leaves to microtasks counts), plus Bottleneck's asynchronous intake — the same rule for every library, with the slow turns after the forced GC taken before the clock starts.",
    "- *Heap per waiter*: `heapUsed` after two forced GCs, minus the same before the calls, ÷ N; includes the promise each call returned (held by the caller).",
    "- *Live timers*: `Timeout` handles in `process.getActiveResourcesInfo()` added by the N calls.",
    "- *Abort all*: from the first `abort()` until every one of the N promises has rejected.",
    "- *Exits when idle*: a separate process runs 20 tasks at 5 per 500 ms and then does nothing; it must exit by itself (killed after 5 s).",
    ...notes,
  ].join("\n");
}
