/**
 * The capability matrix, tested rather than asserted: each library runs small real-time scenarios
 * through its adapter, and a cell says what was observed. A capability missing from a library's API
 * is reported as such without running (the adapter refuses it), never emulated.
 *
 * Scenarios (timings chosen so a right and a wrong outcome are ≥ 150 ms apart — safe on a loaded box):
 * - abort: limit 2 per 300 ms. A, B go at once; C (with a signal), D, E queue (FIFO: C, D at 300,
 *   E at 600). C is aborted at 100 ms. Pass: C rejects with the signal's reason at once, D and E are
 *   both granted before 450 ms (C's slot came back), and no 298 ms window holds more than 2 (2 ms of
 *   slack for the time between a grant and its task's first statement).
 * - weighted window: limit 10 per 100 ms, 6 callers × 5 tasks of weights 1–5. Pass: every task runs
 *   and no 100 ms window (nor 99 ms) holds more than 10 permits.
 * - together: limit 4 per 300 ms. A(2), B(2) at once; C(3, with a signal) and D(2) queue (C at 300,
 *   D at 600). C is aborted at 100 ms; E(2) arrives at 150 ms. Pass: C rejects at once, D and E are
 *   granted before 450 ms, no 298 ms window holds more than 4 permits.
 *
 * sluice's SmoothLimiter is not a window limiter (a request goes at once when no debt is pending, and
 * later callers pay), so the harness leaves it out of this matrix.
 *
 * @module
 */
import { ms, table } from "../lib/format.ts";
import { sleep } from "../lib/measure.ts";
import { maxWeightInWindow } from "../lib/stats.ts";
import type { Peer } from "../peers.ts";
import type { SaturationStats } from "./saturation.ts";

export interface Verdict {
  /** Whether the library did it (undefined: its API cannot express it, so not run). */
  pass: boolean | undefined;
  /** What was observed, in a few words. */
  note: string;
}

export interface CapabilityRow {
  peer: string;
  abort: Verdict;
  weighted: Verdict;
  together: Verdict;
}

/** Slack for the abort scenarios' window check: the time between a grant and its task's first line. */
const SLACK = 2;

interface Probe {
  at?: number;
  rejectedAt?: number;
  reasonOk?: boolean;
}

/** Runs one call and records when it started or when it was rejected. */
function track(run: () => Promise<unknown>, t0: number, probe: Probe, reason?: unknown): Promise<void> {
  return run().then(
    () => undefined,
    (error: unknown) => {
      probe.rejectedAt = performance.now() - t0;
      probe.reasonOk = reason === undefined || error === reason;
    },
  );
}

function describe(name: string, p: Probe): string {
  if (p.rejectedAt !== undefined) return `${name} rejected at ${ms(Math.round(p.rejectedAt))}`;
  if (p.at !== undefined) return `${name} at ${ms(Math.round(p.at))}`;
  return `${name} never settled`;
}

async function abortScenario(peer: Peer, weighted: boolean): Promise<Verdict> {
  const limit = weighted ? 4 : 2;
  const interval = 300;
  const controller = new AbortController();
  const shared = peer.abort === "shared" ? controller.signal : undefined;
  const gated = peer.create(limit, interval, shared, weighted);
  const t0 = performance.now();
  const probes: Record<string, Probe> = { A: {}, B: {}, C: {}, D: {}, E: {} };
  const weights: Record<string, number> = weighted ? { A: 2, B: 2, C: 3, D: 2, E: 2 } : { A: 1, B: 1, C: 1, D: 1, E: 1 };
  const stamp = (name: string) => (): void => {
    probes[name]!.at = performance.now() - t0;
  };
  const opts = (name: string, signal?: AbortSignal) => (weighted ? { weight: weights[name]!, ...(signal ? { signal } : {}) } : signal ? { signal } : undefined);
  const settled: Promise<void>[] = [];
  for (const name of ["A", "B"]) settled.push(track(() => gated.run(stamp(name), opts(name)), t0, probes[name]!));
  const reason = new Error("cancelled by the benchmark");
  settled.push(track(() => gated.run(stamp("C"), opts("C", controller.signal)), t0, probes.C!, reason));
  settled.push(track(() => gated.run(stamp("D"), opts("D")), t0, probes.D!));
  if (!weighted) settled.push(track(() => gated.run(stamp("E"), opts("E")), t0, probes.E!));
  await sleep(100);
  const abortedAt = performance.now() - t0;
  controller.abort(reason);
  if (weighted) {
    await sleep(50);
    settled.push(track(() => gated.run(stamp("E"), opts("E")), t0, probes.E!));
  }
  const deadline = sleep(1500).then(() => "timeout" as const);
  const outcome = await Promise.race([Promise.all(settled).then(() => "done" as const), deadline]);
  await gated.close();
  const grants = Object.entries(probes).filter(([, p]) => p.at !== undefined);
  // 2 ms of slack: A and B start in a microtask after the rest of the set-up code, D and E at once.
  const worst = maxWeightInWindow(grants.map(([, p]) => p.at!), grants.map(([n]) => weights[n]!), interval - SLACK).max;
  const { C, D, E } = probes as Record<"C" | "D" | "E", Probe>;
  const log = ["C", "D", "E"].map((n) => describe(n, probes[n]!)).join(", ") + `; most in any ${interval - SLACK} ms: ${worst}`;
  if (outcome === "timeout") return { pass: false, note: `not settled after 1.5 s (${log})` };
  const cOk = C.at === undefined && C.rejectedAt !== undefined && C.rejectedAt - abortedAt < 100 && C.reasonOk === true;
  const backInTime = D.at !== undefined && E.at !== undefined && D.at < 450 && E.at < 450;
  const pass = cOk && backInTime && worst <= limit;
  return { pass, note: log };
}

async function weightedScenario(peer: Peer): Promise<Verdict> {
  const limit = 10;
  const interval = 100;
  const gated = peer.create(limit, interval, undefined, true);
  const times: number[] = [];
  const weights: number[] = [];
  const sequence = [3, 1, 4, 1, 5, 2, 2, 3, 5, 4, 1, 2, 5, 3, 4];
  let next = 0;
  const caller = async (): Promise<void> => {
    for (let i = 0; i < 5; i++) {
      const weight = sequence[next++ % sequence.length]!;
      await gated.run(() => {
        times.push(performance.now());
        weights.push(weight);
      }, { weight });
    }
  };
  const deadline = sleep(5000).then(() => "timeout" as const);
  const outcome = await Promise.race([Promise.all(Array.from({ length: 6 }, caller)).then(() => "done" as const), deadline]);
  await gated.close();
  const worst = maxWeightInWindow(times, weights, interval).max;
  const worst99 = maxWeightInWindow(times, weights, interval - 1).max;
  const note = `${times.length}/30 tasks; most permits in any ${interval} ms: ${worst} (${interval - 1} ms: ${worst99}), limit ${limit}`;
  if (outcome === "timeout") return { pass: false, note: `not finished after 5 s; ${note}` };
  return { pass: worst <= limit && worst99 <= limit && times.length === 30, note };
}

export async function runCapability(peers: readonly Peer[], log: (line: string) => void): Promise<CapabilityRow[]> {
  const rows: CapabilityRow[] = [];
  for (const peer of peers) {
    const noAbort: Verdict = { pass: undefined, note: "no way to cancel one waiting call" };
    const noWeights: Verdict = { pass: undefined, note: "no per-call weights" };
    const abort = peer.abort === "none" ? noAbort : await abortScenario(peer, false);
    const weighted = peer.weights ? await weightedScenario(peer) : noWeights;
    const together = !peer.weights ? noWeights : peer.abort === "none" ? noAbort : await abortScenario(peer, true);
    rows.push({ peer: peer.id, abort, weighted, together });
    log(`  capability: ${peer.id}`);
  }
  return rows;
}

function cell(v: Verdict): string {
  if (v.pass === undefined) return `— (${v.note})`;
  return `${v.pass ? "✔" : "✘"} ${v.note}`;
}

export function capabilityMarkdown(rows: readonly CapabilityRow[], peers: readonly Peer[], saturation: readonly SaturationStats[], limit: number, interval: number): string {
  const byId = new Map(peers.map((p) => [p.id, p]));
  const sat = new Map(saturation.map((s) => [s.peer, s]));
  const body = rows.map((r) => {
    const p = byId.get(r.peer)!;
    const s = sat.get(r.peer);
    const strict =
      s === undefined
        ? "not measured"
        : `${s.max1000 <= limit && s.max999 <= limit ? "✔" : "✘"} max ${s.max1000} in ${interval} ms, ${s.max999} in ${interval - 1} ms${p.strictClaim ? "" : " (no strict claim)"}`;
    return [p.label, cell(r.abort), strict, cell(r.weighted), cell(r.together)];
  });
  return [
    "Each cell is an observation from this run (scenarios in `bench/sections/capability.ts`); — means the library's API has no way to express it.",
    "",
    table(["Library", "Abort one waiter, capacity comes back", "Strict window (section 2)", "Weighted calls stay in the window", "Weights + abort + strict window together"], body),
  ].join("\n");
}
