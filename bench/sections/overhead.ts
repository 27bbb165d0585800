/**
 * Section 1 — overhead: grants per second when the limit never binds (10⁹ per second), i.e. what a
 * limiter costs on the path every request takes. Each cell is one library × one operation for a time
 * budget; rounds interleave the libraries round-robin; the figure is the median over the rounds
 * after warm-up. A fresh limiter per cell, so a strict mode's log starts empty each time.
 *
 * @module
 */
import { table, ns, perSecond, ratio } from "../lib/format.ts";
import { gc, rateConcurrent, rateSerial, rateSync, rotate } from "../lib/measure.ts";
import { median } from "../lib/stats.ts";
import type { FastPaths, Peer } from "../peers.ts";

export interface OverheadOptions {
  rounds: number;
  warmup: number;
  budgetMs: number;
}

interface Operation {
  id: string;
  label: string;
  run(paths: FastPaths, budgetMs: number): Promise<number | undefined> | number | undefined;
}

const CONCURRENT = 1000;
const noop = (): void => {};

/** The operations, each mapped to the equivalent fastest path of every library. */
export const OPERATIONS: readonly Operation[] = [
  {
    id: "try",
    label: "`tryAcquire()` (synchronous try)",
    run: (p, budget) => (p.trySync === undefined ? undefined : rateSync(p.trySync, budget).ns),
  },
  {
    id: "acquire",
    label: "`await acquire()`, one caller in a loop",
    run: async (p, budget) => (await rateSerial(p.acquire, budget)).ns,
  },
  {
    id: "acquire-1000",
    label: `\`acquire()\`, ${CONCURRENT.toLocaleString("en-US")} callers at once`,
    run: async (p, budget) => (await rateConcurrent(p.acquire, CONCURRENT, budget)).ns,
  },
  {
    id: "schedule",
    label: "`await schedule(task)`, one caller in a loop",
    run: async (p, budget) => (await rateSerial(() => p.schedule(noop), budget)).ns,
  },
];

export interface OverheadResult {
  /** ns per grant: operation id → peer id → median (undefined when the library has no such path). */
  medians: Record<string, Record<string, number | undefined>>;
  /** Every round's figure, for the record. */
  samples: Record<string, Record<string, number[]>>;
  rounds: number;
  warmup: number;
  budgetMs: number;
}

export async function runOverhead(peers: readonly Peer[], options: OverheadOptions, log: (line: string) => void): Promise<OverheadResult> {
  const samples: Record<string, Record<string, number[]>> = {};
  for (const op of OPERATIONS) samples[op.id] = Object.fromEntries(peers.map((p) => [p.id, []]));
  const total = options.warmup + options.rounds;
  for (let round = 0; round < total; round++) {
    const measured = round >= options.warmup;
    for (const op of OPERATIONS) {
      for (const peer of rotate(peers, round)) {
        const paths = peer.fastPaths();
        gc();
        const value = await op.run(paths, options.budgetMs);
        await paths.dispose();
        if (measured && value !== undefined) samples[op.id]![peer.id]!.push(value);
      }
    }
    log(`  overhead round ${round + 1}/${total}${measured ? "" : " (warm-up)"}`);
  }
  const medians: Record<string, Record<string, number | undefined>> = {};
  for (const op of OPERATIONS) {
    medians[op.id] = Object.fromEntries(
      peers.map((p) => {
        const s = samples[op.id]![p.id]!;
        return [p.id, s.length === 0 ? undefined : median(s)];
      }),
    );
  }
  return { medians, samples, rounds: options.rounds, warmup: options.warmup, budgetMs: options.budgetMs };
}

/** The fastest peer (not sluice) on an operation. */
export function fastestPeer(result: OverheadResult, opId: string, peers: readonly Peer[]): { peer: Peer; ns: number } | undefined {
  let best: { peer: Peer; ns: number } | undefined;
  for (const p of peers) {
    if (p.pkg === "sluice") continue;
    const v = result.medians[opId]![p.id];
    if (v !== undefined && (best === undefined || v < best.ns)) best = { peer: p, ns: v };
  }
  return best;
}

export function overheadMarkdown(result: OverheadResult, peers: readonly Peer[], reference: Peer): string {
  const headers = ["Library", ...OPERATIONS.map((o) => o.label)];
  const rows = peers.map((p) => [
    p.label,
    ...OPERATIONS.map((o) => {
      const v = result.medians[o.id]![p.id];
      if (v === undefined) return "— (no such path)";
      const ref = result.medians[o.id]![reference.id];
      const rel = ref === undefined ? "" : ` · ${ratio(v / ref)}`;
      return `${ns(v)} · ${perSecond(v)}${rel}`;
    }),
  ]);
  return [
    `Median of ${result.rounds} interleaved rounds after ${result.warmup} warm-up round(s), ${result.budgetMs} ms per cell. ` +
      `Each cell: ns per grant · grants per second · time relative to ${reference.label} (above 1× = slower than sluice).`,
    "",
    table(headers, rows, ["l", ...OPERATIONS.map(() => "r" as const)]),
  ].join("\n");
}
