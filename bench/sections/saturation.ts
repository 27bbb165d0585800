/**
 * Section 2 — accuracy under saturation, in REAL time (timer behaviour is the point): `limit` per
 * `interval`, `callers` concurrent callers sharing `tasks` tasks, each caller submitting its next task
 * as soon as the previous one started. Every task records `performance.now()` as its first statement;
 * all figures come from those timestamps.
 *
 * Libraries run one after another (running them side by side would make them compete for the event
 * loop and measure each other), in the order given.
 *
 * @module
 */
import { ms, percent, table } from "../lib/format.ts";
import { gc, sleep } from "../lib/measure.ts";
import {
  latenessPerGrant,
  latenessVsIdeal,
  maxInWindow,
  percentile,
  steadyUtilisation,
  windowViolations,
} from "../lib/stats.ts";
import type { Peer } from "../peers.ts";

export interface SaturationOptions {
  limit: number;
  interval: number;
  callers: number;
  tasks: number;
}

export interface SaturationRun {
  peer: string;
  /** Submission time of the first task. */
  t0: number;
  /** Start times of every task, in the order they ran. */
  starts: number[];
  /** Set when the run did not finish in time. */
  error?: string;
  wallMs: number;
  /** How long the synchronous start of all callers took (tasks granted at once start after it). */
  startupMs: number;
  /** sluice only: grant times from the limiter's own log (diagnostic). */
  grantTimes?: number[];
}

export interface SaturationStats {
  peer: string;
  grants: number;
  max1000: number;
  max999: number;
  violations1000: number;
  violations999: number;
  utilisation: number;
  lateP50: number;
  lateP99: number;
  lateMax: number;
  grantP50: number;
  grantP99: number;
  wallMs: number;
  startupMs: number;
  /** sluice only: the same window figures from the limiter's own grant times. */
  byGrant?: { max1000: number; max999: number; startLagP50: number; startLagP99: number; startLagMax: number };
  error?: string;
}

/** Runs one library through the workload. */
export async function saturate(peer: Peer, o: SaturationOptions): Promise<SaturationRun> {
  gc();
  await sleep(50); // let the previous library's leftovers settle
  const gated = peer.create(o.limit, o.interval);
  const starts: number[] = [];
  let submitted = 0;
  const record = (): void => {
    starts.push(performance.now());
  };
  const caller = async (): Promise<void> => {
    while (submitted < o.tasks) {
      submitted++;
      await gated.run(record);
    }
  };
  // Generous: the ideal schedule takes (tasks / limit − 1) intervals.
  const deadline = (Math.ceil(o.tasks / o.limit) + 10) * o.interval * 2;
  const t0 = performance.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`did not finish within ${ms(deadline)}`), deadline);
  });
  const all = Promise.all(Array.from({ length: o.callers }, caller));
  const startupMs = performance.now() - t0;
  const outcome = await Promise.race([
    all.then(
      () => undefined,
      (error: unknown) => `failed: ${String(error)}`,
    ),
    timedOut,
  ]);
  clearTimeout(timer);
  const wallMs = performance.now() - t0;
  await gated.close();
  const grants = gated.grantTimes === undefined ? {} : { grantTimes: [...gated.grantTimes] };
  return { peer: peer.id, t0, starts, wallMs, startupMs, ...grants, ...(outcome === undefined ? {} : { error: outcome }) };
}

/** The limiter's own view: windows over its grant times, and how long after its grant each task started. */
function byGrant(grants: readonly number[], starts: readonly number[], o: SaturationOptions): NonNullable<SaturationStats["byGrant"]> {
  const g = [...grants].sort((a, b) => a - b);
  const s = [...starts].sort((a, b) => a - b);
  const lag = s.map((t, k) => t - g[k]!); // FIFO: the k-th start belongs to the k-th grant
  return {
    max1000: maxInWindow(g, o.interval).max,
    max999: maxInWindow(g, o.interval - 1).max,
    startLagP50: percentile(lag, 50),
    startLagP99: percentile(lag, 99),
    startLagMax: Math.max(...lag),
  };
}

/** Every figure of one run. */
export function saturationStats(run: SaturationRun, peer: Peer, o: SaturationOptions): SaturationStats {
  const { starts, t0 } = run;
  const ideal = latenessVsIdeal(starts, peer.shape, t0, o.limit, o.interval);
  const perGrant = latenessPerGrant(starts, peer.shape, t0, o.limit, o.interval);
  const enough = starts.length > o.limit;
  return {
    peer: peer.id,
    grants: starts.length,
    max1000: maxInWindow(starts, o.interval).max,
    max999: maxInWindow(starts, o.interval - 1).max,
    violations1000: windowViolations(starts, o.interval, o.limit),
    violations999: windowViolations(starts, o.interval - 1, o.limit),
    utilisation: enough ? steadyUtilisation(starts, o.limit, o.interval) : Number.NaN,
    lateP50: percentile(ideal, 50),
    lateP99: percentile(ideal, 99),
    lateMax: Math.max(...ideal),
    grantP50: percentile(perGrant, 50),
    grantP99: percentile(perGrant, 99),
    wallMs: run.wallMs,
    startupMs: run.startupMs,
    ...(run.grantTimes === undefined || run.grantTimes.length !== starts.length ? {} : { byGrant: byGrant(run.grantTimes, starts, o) }),
    ...(run.error === undefined ? {} : { error: run.error }),
  };
}

export function saturationMarkdown(stats: readonly SaturationStats[], peers: readonly Peer[], o: SaturationOptions): string {
  const byId = new Map(peers.map((p) => [p.id, p]));
  const rows = stats.map((s) => {
    const p = byId.get(s.peer)!;
    return [
      p.label + (s.error === undefined ? "" : ` (${s.error})`),
      p.shape === "window" ? "bursts" : "even",
      `${s.max1000}${s.max1000 > o.limit ? " ✘" : ""}`,
      `${s.max999}${s.max999 > o.limit ? " ✘" : ""}`,
      `${s.violations1000} / ${s.violations999}`,
      percent(s.utilisation),
      `${ms(s.lateP50)} / ${ms(s.lateP99)}`,
      `${ms(s.grantP50)} / ${ms(s.grantP99)}`,
      `${s.grants} in ${ms(s.wallMs)}`,
      ms(s.startupMs),
    ];
  });
  return [
    `Limit ${o.limit} per ${o.interval} ms, ${o.callers} concurrent callers, ${o.tasks.toLocaleString("en-US")} tasks, real time; ` +
      "one library at a time. ✘ marks a window holding more than the limit.",
    "",
    table(
      [
        "Library",
        "Shape",
        `Max in any ${o.interval} ms`,
        `Max in any ${o.interval - 1} ms`,
        `Violating grants (${o.interval} / ${o.interval - 1} ms)`,
        "Steady utilisation",
        "Lateness vs ideal schedule p50 / p99",
        "Per-grant lateness p50 / p99",
        "Grants / wall time",
        "Callers' start-up",
      ],
      rows,
      ["l", "l", "r", "r", "r", "r", "r", "r", "r", "r"],
    ),
    "",
    "- *Max in any window*: exact, from every start timestamp (two pointers over the sorted times), " +
      `half-open windows [t, t + w). The ${o.interval - 1} ms column gives 1 ms of slack for the time between a grant and the task's first statement.`,
    "- *Violating grants*: grants that had `limit` others less than one window before them.",
    "- *Callers' start-up*: how long starting the callers took (one synchronous loop). A library that grants at once but starts " +
      "the task in a later microtask (sluice's `schedule` and p-throttle call it synchronously when no delay is needed; p-queue does not) starts the first window's " +
      "tasks only after this loop, so their timestamps lag their grants by up to this much.",
    ...stats
      .filter((s) => s.byGrant !== undefined)
      .map((s) => {
        const b = s.byGrant!;
        return `- ${byId.get(s.peer)!.label}, diagnostic from the limiter's own grant log: max ${b.max1000} grants in any ${o.interval} ms (${b.max999} in ${o.interval - 1} ms); ` +
          `each task started ${ms(b.startLagP50)} (p50) / ${ms(b.startLagP99)} (p99) / ${ms(b.startLagMax)} (max) after its grant. ` +
          "The columns above count task starts — what a server would see — so that lag counts against the limiter.";
      }),
    "- *Steady utilisation*: achieved rate ÷ limit without the start-up burst: " +
      "W·(n − L) / (L·(mean of the last L starts − mean of the first L starts)); above 100% means over the limit.",
    "- *Lateness vs ideal schedule*: k-th start minus the ideal k-th start — bursts: t0 + ⌊k / L⌋·W (the best any strict " +
      "limiter can do); even: t0 + k·W / L. Cumulative: a limiter 1 ms late per window is 14 ms late by the 15th window.",
    "- *Per-grant lateness*: start minus the earliest start the contract allowed given the grants actually made " +
      "(bursts: t_{k−L} + W; even: t_{k−1} + W / L) — how promptly the limiter grants once it may, without accumulated drift. " +
      "Negative = earlier than allowed.",
  ].join("\n");
}

