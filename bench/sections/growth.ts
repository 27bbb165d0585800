/**
 * Section 5 — cost growth: how the per-waiter cost changes with queue depth (every library: the cost
 * of queueing more callers behind n waiting ones; sluice: also the gate's grant pass per granted
 * waiter) and with the number of keys in sluice's KeyedLimiter. Each measurement runs in a fresh
 * child process (`growth-child.ts`); rounds visit the libraries round-robin; medians.
 *
 * @module
 */
import { benchScript, runChild } from "../lib/child.ts";
import { ns, ratio, table } from "../lib/format.ts";
import { rotate } from "../lib/measure.ts";
import { median } from "../lib/stats.ts";
import { type Peer, sluiceWindow } from "../peers.ts";

export interface GrowthOptions {
  rounds: number;
  depths: number[];
  /** Smaller depth lists for libraries whose intake is slow, with the reason. */
  depthOverrides: Record<string, { depths: number[]; reason: string }>;
  keys: number[];
  timeoutMs: number;
}

type Series = Record<number, number>;

export interface GrowthResult {
  enqueue: Record<string, { series: Series; error?: string }>;
  grant: { series: Series; error?: string };
  keyed: { series: Series; error?: string };
}

function mergeMedians(runs: Series[]): Series {
  const out: Series = {};
  const keys = new Set(runs.flatMap((r) => Object.keys(r).map(Number)));
  for (const k of keys) out[k] = median(runs.map((r) => r[k]).filter((v): v is number => v !== undefined));
  return out;
}

export async function runGrowth(peers: readonly Peer[], o: GrowthOptions, log: (line: string) => void): Promise<GrowthResult> {
  const child = benchScript("growth-child.ts");
  const runs: Record<string, Series[]> = {};
  const errors: Record<string, string> = {};
  const collect = async (name: string, args: string[]): Promise<void> => {
    const outcome = await runChild<Series>(child, args, o.timeoutMs);
    if (outcome.result !== undefined) (runs[name] ??= []).push(outcome.result);
    else errors[name] ??= outcome.error ?? "no result";
  };
  for (let round = 0; round < o.rounds; round++) {
    for (const p of rotate(peers, round)) {
      const depths = o.depthOverrides[p.id]?.depths ?? o.depths;
      await collect(p.id, ["enqueue", p.id, depths.join(",")]);
    }
    await collect("grant", ["grant", sluiceWindow.id, o.depths.join(",")]);
    await collect("keyed", ["keyed", sluiceWindow.id, o.keys.join(",")]);
    log(`  growth round ${round + 1}/${o.rounds}`);
  }
  const pick = (name: string): { series: Series; error?: string } => ({
    series: mergeMedians(runs[name] ?? []),
    ...(errors[name] === undefined ? {} : { error: errors[name] }),
  });
  return {
    enqueue: Object.fromEntries(peers.map((p) => [p.id, pick(p.id)])),
    grant: pick("grant"),
    keyed: pick("keyed"),
  };
}

/** Largest ÷ smallest of a series' values at its first and last point ("how much it grew"). */
export function growthFactor(series: Series): number | undefined {
  const keys = Object.keys(series).map(Number).sort((a, b) => a - b);
  if (keys.length < 2) return undefined;
  return series[keys.at(-1)!]! / series[keys[0]!]!;
}

export function growthMarkdown(r: GrowthResult, peers: readonly Peer[], o: GrowthOptions): string {
  const depths = o.depths;
  const enqueueRows = peers.map((p) => {
    const e = r.enqueue[p.id]!;
    const cells = depths.map((d) => (e.series[d] === undefined ? (o.depthOverrides[p.id] && !o.depthOverrides[p.id]!.depths.includes(d) ? "not run" : "—") : ns(e.series[d]!)));
    const g = growthFactor(e.series);
    return [p.label + (e.error === undefined ? "" : ` (${e.error})`), ...cells, g === undefined ? "—" : ratio(g)];
  });
  const grantRow = [
    "sluice WindowLimiter — grant pass, per granted waiter",
    ...depths.map((d) => (r.grant.series[d] === undefined ? "—" : ns(r.grant.series[d]!))),
    growthFactor(r.grant.series) === undefined ? "—" : ratio(growthFactor(r.grant.series)!),
  ];
  const keyedTable = table(
    ["KeyedLimiter of WindowLimiter, `tryAcquire(key)`", ...o.keys.map((k) => `${k.toLocaleString("en-US")} keys`), "Last ÷ first"],
    [[
      "ns per call" + (r.keyed.error === undefined ? "" : ` (${r.keyed.error})`),
      ...o.keys.map((k) => (r.keyed.series[k] === undefined ? "—" : ns(r.keyed.series[k]!))),
      growthFactor(r.keyed.series) === undefined ? "—" : ratio(growthFactor(r.keyed.series)!),
    ]],
    ["l", ...o.keys.map(() => "r" as const), "r"],
  );
  const notes = Object.entries(o.depthOverrides).map(([id, v]) => `- ${peers.find((p) => p.id === id)?.label ?? id}: depths ${v.depths.join(", ")} only — ${v.reason}`);
  return [
    `Median of ${o.rounds} round(s), fresh process per library per round. Enqueue: the cost of queueing 200 more callers (5 times, median) behind n waiting ones — the calls and one event-loop turn (work a library leaves to microtasks counts), the same rule for every library, plus Bottleneck's asynchronous intake. ` +
      "Grant: the time of the timer callback that grants a window of 100 waiters, ÷ 100, timed through an instrumenting `Clock` (sluice's public clock seam). Flat or log n is the goal.",
    "",
    table(["Per waiter, with n already queued", ...depths.map((d) => `n = ${d.toLocaleString("en-US")}`), "Last ÷ first"], [...enqueueRows, grantRow], ["l", ...depths.map(() => "r" as const), "r"]),
    "",
    keyedTable,
    "",
    ...notes,
  ].join("\n");
}
