/**
 * Section 6 — the scheduler: what a concurrency cap costs per task, alone, with a rate limit and
 * with mixed priorities, in sluice, p-queue and Bottleneck (`scheduler-peers.ts`), and whether each
 * kept its promises in the same run: never more running than the cap, priorities and arrival order
 * respected (`lib/order.ts`). Memory per queued task is measured in fresh `node --expose-gc`
 * processes (`scheduler-child.ts`), like section 3.
 *
 * A cell submits `depth` tasks at once, awaits them all, and repeats on the same scheduler for a
 * time budget; its figure is the median batch. Rounds interleave the libraries round-robin, and the
 * figure reported is the median over the rounds after warm-up. A row "no scheduler" runs the same tasks through the same harness without
 * any library: what the harness itself costs, so a ratio can be read net of it.
 *
 * @module
 */
import { bytes, ns, ratio, table } from "../lib/format.ts";
import { benchScript, type ChildOutcome, runChild } from "../lib/child.ts";
import { gc, rotate, tick } from "../lib/measure.ts";
import { OrderTracker } from "../lib/order.ts";
import { median } from "../lib/stats.ts";
import { NEVER_BINDS } from "../peers.ts";
import type { CapConfig, CappedPeer, CappedScheduler } from "../scheduler-peers.ts";

export interface SchedulerOptions {
  rounds: number;
  warmup: number;
  /** ms per cell (at least one batch runs). */
  budgetMs: number;
  /** The cap: most tasks running at once. */
  concurrency: number;
  /** Tasks submitted at once per batch. */
  depth: number;
  /** Per-library depths, with the reason shown in RESULTS.md. */
  depthOverrides: Record<string, { depth: number; reason: string }>;
  memory: {
    rounds: number;
    /** Tasks queued behind the full cap. */
    waiters: number;
    overrides: Record<string, { waiters: number; reason: string }>;
    /** Time limit of one child, ms. */
    timeoutMs: number;
  };
}

/** Priority levels the mixed workloads draw from (0 = each library's default; higher first). */
export const LEVELS = 4;

interface Workload {
  id: string;
  label: string;
  rate: boolean;
  /** `sync`: the task returns a value; `microtask`: it awaits once, then returns. */
  task: "sync" | "microtask";
  priorities: boolean;
}

export const WORKLOADS: readonly Workload[] = [
  { id: "cap-sync", label: "cap, tasks that return at once", rate: false, task: "sync", priorities: false },
  { id: "cap-micro", label: "cap, tasks that await a microtask", rate: false, task: "microtask", priorities: false },
  { id: "cap-rate", label: "cap + rate limit (10⁹/s, never binds), microtask tasks", rate: true, task: "microtask", priorities: false },
  { id: "cap-prio", label: `cap, ${LEVELS} priorities mixed, microtask tasks`, rate: false, task: "microtask", priorities: true },
];

/**
 * An order check, not a cost: the cap is filled with tasks that wait on a gate, a batch at mixed
 * priorities is submitted and left to reach the library's queue, then the gate opens. It tells a
 * library's priority order apart from how fast it takes calls in.
 */
export const QUEUED_ORDER: Workload = { id: "prio-queued", label: `${LEVELS} priorities mixed, all queued before the cap frees`, rate: false, task: "microtask", priorities: true };

/** Memory modes of `scheduler-child.ts`, in table order. */
export const MEMORY_MODES = [
  { id: "cap", label: "cap, priority 0", priorities: false },
  { id: "cap-rate", label: "cap + rate limit, priority 0", priorities: false },
  { id: "prio", label: `cap, ${LEVELS} priorities mixed`, priorities: true },
] as const;

/**
 * The priority level of the i-th task of a batch: the same pseudo-random sequence for every library
 * (xorshift32 from a fixed start — a workload, not a test input, so it is the same on every run).
 */
export function levels(n: number): number[] {
  let x = 0x9e3779b9;
  return Array.from({ length: n }, () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % LEVELS;
  });
}

/** The harness without a scheduler: the task runs when submitted. */
const direct: CappedPeer = {
  id: "none",
  label: "no scheduler (the harness alone)",
  pkg: "",
  version: "",
  config: "",
  priorities: true,
  create: (): CappedScheduler => ({ run: (task) => Promise.resolve(task()), close: () => {} }),
};

export interface CellFigures {
  /** Wall time per task, ns: the median batch ÷ its tasks. */
  ns: number;
  /** CPU time of this process per task, ns (user + system over the whole cell, GC threads included). */
  cpuNs: number;
  tasks: number;
  maxInFlight: number;
  priorityInversions: number;
  fifoInversions: number;
  /** Tasks that never ran or never settled. */
  lost: number;
}

/** Runs batches of `depth` tasks on one scheduler for about `budgetMs`. */
export async function runCell(peer: CappedPeer, w: Workload, o: Pick<SchedulerOptions, "budgetMs" | "concurrency">, depth: number): Promise<CellFigures> {
  const config: CapConfig = { concurrency: o.concurrency, ...(w.rate ? { rate: { limit: NEVER_BINDS, interval: 1000 } } : {}) };
  const scheduler = peer.create(config);
  const order = w.priorities ? levels(depth) : new Array<number>(depth).fill(0);
  const promises = new Array<Promise<unknown>>(depth);
  const figures: CellFigures = { ns: 0, cpuNs: 0, tasks: 0, maxInFlight: 0, priorityInversions: 0, fifoInversions: 0, lost: 0 };
  // The median batch, not the mean: on a shared machine a batch that another process preempted (or
  // that a major GC landed in) is an outlier, and one batch is 1–5 ms, about one time slice.
  const batches: number[] = [];
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let elapsed = 0;
  do {
    const b0 = performance.now();
    // A tracker per batch: the batches are separated by their `await`, and its arrays stay small.
    const tracker = new OrderTracker(LEVELS);
    for (let i = 0; i < depth; i++) {
      const level = order[i]!;
      const id = tracker.submit(level);
      const task = w.task === "sync"
        ? (): number => {
          tracker.start(id);
          tracker.finish();
          return id;
        }
        : async (): Promise<number> => {
          tracker.start(id);
          await null;
          tracker.finish();
          return id;
        };
      promises[i] = scheduler.run(task, w.priorities ? level : undefined);
    }
    await Promise.all(promises);
    batches.push(performance.now() - b0);
    figures.tasks += depth;
    figures.maxInFlight = Math.max(figures.maxInFlight, tracker.maxInFlight);
    figures.priorityInversions += tracker.priorityInversions;
    figures.fifoInversions += tracker.fifoInversions;
    figures.lost += depth - tracker.finishedCount;
    elapsed = performance.now() - t0;
  } while (elapsed < o.budgetMs);
  await scheduler.close();
  figures.ns = (median(batches) * 1e6) / depth;
  const cpu = process.cpuUsage(cpu0);
  figures.cpuNs = ((cpu.user + cpu.system) * 1e3) / figures.tasks;
  return figures;
}

/** Waits until the library holds `n` tasks in its queue (by its own count), then lets it settle. */
export async function untilQueued(s: CappedScheduler, n: number): Promise<void> {
  if (s.intakePending !== undefined) {
    while (s.intakePending() > 0) await tick();
  } else if (s.waiting !== undefined) {
    while (s.waiting() < n) await tick();
  }
  for (let i = 0; i < 3; i++) await tick();
}

/** {@link QUEUED_ORDER}: the start order of `depth` tasks queued behind a full cap. */
export async function runQueuedOrder(peer: CappedPeer, concurrency: number, depth: number): Promise<CellFigures> {
  const scheduler = peer.create({ concurrency });
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const blockers = Array.from({ length: concurrency }, () => scheduler.run(() => gate));
  await untilQueued(scheduler, 0);
  const tracker = new OrderTracker(LEVELS);
  const promises = levels(depth).map((level) => {
    const id = tracker.submit(level);
    return scheduler.run(async () => {
      tracker.start(id);
      await null;
      tracker.finish();
    }, level);
  });
  await untilQueued(scheduler, depth);
  open();
  await Promise.all([...blockers, ...promises]);
  await scheduler.close();
  return {
    ns: 0,
    cpuNs: 0,
    tasks: depth,
    maxInFlight: tracker.maxInFlight,
    priorityInversions: tracker.priorityInversions,
    fifoInversions: tracker.fifoInversions,
    lost: depth - tracker.finishedCount,
  };
}

interface MemoryResult {
  bytesPerTask: number;
  queuedMs: number;
  queued: number;
}

export interface SchedulerResult {
  /** workload id → peer id → ns per task, CPU and wall (medians), undefined when the library cannot do it. */
  medians: Record<string, Record<string, { cpu: number; wall: number } | undefined>>;
  /** workload id → peer id → the correctness figures summed (max for in flight) over measured rounds. */
  checks: Record<string, Record<string, CellFigures | undefined>>;
  /** memory mode → peer id → bytes per queued task (median), or why none. */
  memory: Record<string, Record<string, { bytes?: number; error?: string; waiters: number }>>;
  /** The peers' ids with the harness row first. */
  peers: readonly CappedPeer[];
}

/** The correctness figures of two cells together: counts add up, the most in flight is the larger. */
function addChecks(sum: CellFigures | undefined, f: CellFigures): CellFigures {
  if (sum === undefined) return f;
  return {
    ns: f.ns,
    cpuNs: f.cpuNs,
    tasks: sum.tasks + f.tasks,
    maxInFlight: Math.max(sum.maxInFlight, f.maxInFlight),
    priorityInversions: sum.priorityInversions + f.priorityInversions,
    fifoInversions: sum.fifoInversions + f.fifoInversions,
    lost: sum.lost + f.lost,
  };
}

function depthOf(peer: CappedPeer, o: SchedulerOptions): number {
  return o.depthOverrides[peer.id]?.depth ?? o.depth;
}

export async function runScheduler(peers: readonly CappedPeer[], o: SchedulerOptions, log: (line: string) => void): Promise<SchedulerResult> {
  const all = [direct, ...peers];
  const samples: Record<string, Record<string, CellFigures[]>> = {};
  const checks: SchedulerResult["checks"] = {};
  for (const w of WORKLOADS) {
    samples[w.id] = Object.fromEntries(all.map((p) => [p.id, []]));
    checks[w.id] = {};
  }
  checks[QUEUED_ORDER.id] = {};
  const total = o.warmup + o.rounds;
  for (let round = 0; round < total; round++) {
    const measured = round >= o.warmup;
    for (const w of WORKLOADS) {
      for (const peer of rotate(all, round)) {
        if (w.priorities && !peer.priorities) continue;
        gc();
        const f = await runCell(peer, w, o, depthOf(peer, o));
        if (!measured) continue;
        samples[w.id]![peer.id]!.push(f);
        checks[w.id]![peer.id] = addChecks(checks[w.id]![peer.id], f);
      }
    }
    if (measured) {
      for (const peer of rotate(peers, round)) {
        if (!peer.priorities) continue;
        const f = await runQueuedOrder(peer, o.concurrency, depthOf(peer, o));
        checks[QUEUED_ORDER.id]![peer.id] = addChecks(checks[QUEUED_ORDER.id]![peer.id], f);
      }
    }
    log(`  scheduler round ${round + 1}/${total}${measured ? "" : " (warm-up)"}`);
  }
  const medians: SchedulerResult["medians"] = {};
  for (const w of WORKLOADS) {
    medians[w.id] = Object.fromEntries(all.map((p) => {
      const s = samples[w.id]![p.id]!;
      return [p.id, s.length === 0 ? undefined : { cpu: median(s.map((x) => x.cpuNs)), wall: median(s.map((x) => x.ns)) }];
    }));
  }

  const child = benchScript("scheduler-child.ts");
  const memorySamples: Record<string, Record<string, ChildOutcome<MemoryResult>[]>> = {};
  for (const m of MEMORY_MODES) memorySamples[m.id] = Object.fromEntries(peers.map((p) => [p.id, []]));
  for (let round = 0; round < o.memory.rounds; round++) {
    for (const peer of rotate(peers, round)) {
      const waiters = o.memory.overrides[peer.id]?.waiters ?? o.memory.waiters;
      for (const m of MEMORY_MODES) {
        if (m.priorities && !peer.priorities) continue;
        const args = [m.id, peer.id, String(waiters), String(o.concurrency)];
        memorySamples[m.id]![peer.id]!.push(await runChild<MemoryResult>(child, args, o.memory.timeoutMs));
      }
    }
    log(`  scheduler memory round ${round + 1}/${o.memory.rounds}`);
  }
  const memory: SchedulerResult["memory"] = {};
  for (const m of MEMORY_MODES) {
    memory[m.id] = Object.fromEntries(peers.map((p) => {
      const waiters = o.memory.overrides[p.id]?.waiters ?? o.memory.waiters;
      const outcomes = memorySamples[m.id]![p.id]!;
      const ok = outcomes.flatMap((x) => (x.result !== undefined && x.result.queued >= waiters ? [x.result.bytesPerTask] : []));
      if (ok.length > 0) return [p.id, { bytes: median(ok), waiters }];
      const error = outcomes.find((x) => x.error !== undefined)?.error ?? (outcomes.length === 0 ? undefined : "not every task reached the queue");
      return [p.id, { waiters, ...(error === undefined ? {} : { error }) }];
    }));
  }
  return { medians, checks, memory, peers: all };
}

/** Said only when this run's figures show it: Bottleneck runs one job at a time and out of priority order. */
function bottleneckNote(r: SchedulerResult): string[] {
  const prio = r.checks["cap-prio"]?.["bottleneck"];
  const micro = r.checks["cap-micro"]?.["bottleneck"];
  if (prio === undefined || micro === undefined || micro.maxInFlight > 1 || prio.priorityInversions === 0) return [];
  const queued = r.checks[QUEUED_ORDER.id]?.["bottleneck"];
  const once = queued !== undefined && queued.priorityInversions === 0
    ? " Once every job is in its queue (last column), it starts them in priority order."
    : "";
  return [
    "- Bottleneck never had more than one task running, and started tasks ahead of more important ones: it takes each job in through asynchronous store calls that yield to a timer, " +
      `so a job finishes before the next submitted one reaches its queue, and jobs start roughly in the order they were submitted whatever their priority.${once}`,
  ];
}

const PENDING = "— (no priorities)";

export function schedulerMarkdown(r: SchedulerResult, o: SchedulerOptions): string {
  const [harness, ...peers] = r.peers;
  const reference = peers[0]!;
  const cost = (p: CappedPeer, w: Workload): string => {
    const v = r.medians[w.id]![p.id];
    if (v === undefined) return w.priorities && !p.priorities ? PENDING : "—";
    const ref = r.medians[w.id]![reference.id];
    const figures = `${ns(v.cpu)} · ${ns(v.wall)}`;
    return ref === undefined || p === harness ? figures : `${figures} · ${ratio(v.cpu / ref.cpu)}`;
  };
  const costTable = table(
    ["Library", ...WORKLOADS.map((w) => w.label)],
    [harness!, ...peers].map((p) => [p.label, ...WORKLOADS.map((w) => cost(p, w))]),
    ["l", ...WORKLOADS.map(() => "r" as const)],
  );

  const checkCell = (p: CappedPeer, w: Workload): string => {
    const f = r.checks[w.id]![p.id];
    if (f === undefined) return w.priorities && !p.priorities ? PENDING : "—";
    const flag = (bad: boolean): string => (bad ? " ✘" : "");
    const parts = [`max ${f.maxInFlight}${flag(f.maxInFlight > o.concurrency)}`];
    if (w.priorities) parts.push(`${f.priorityInversions.toLocaleString("en-US")} priority inversions${flag(f.priorityInversions > 0)}`);
    parts.push(`${f.fifoInversions.toLocaleString("en-US")} FIFO inversions${flag(f.fifoInversions > 0)}`);
    if (f.lost > 0) parts.push(`**${f.lost} tasks lost** ✘`);
    return `${parts.join(", ")} (${f.tasks.toLocaleString("en-US")} tasks)`;
  };
  const checked = [...WORKLOADS, QUEUED_ORDER];
  const checkTable = table(["Library", ...checked.map((w) => w.label)], peers.map((p) => [p.label, ...checked.map((w) => checkCell(p, w))]));

  const memCell = (p: CappedPeer, mode: (typeof MEMORY_MODES)[number]): string => {
    const m = r.memory[mode.id]![p.id]!;
    if (m.bytes === undefined) return mode.priorities && !p.priorities ? PENDING : `— (${m.error ?? "not measured"})`;
    const ref = r.memory[mode.id]![reference.id]?.bytes;
    return p === reference || ref === undefined ? bytes(m.bytes) : `${bytes(m.bytes)} · ${ratio(m.bytes / ref)}`;
  };
  const memTable = table(
    ["Library", "Tasks queued", ...MEMORY_MODES.map((m) => m.label)],
    peers.map((p) => [p.label, (o.memory.overrides[p.id]?.waiters ?? o.memory.waiters).toLocaleString("en-US"), ...MEMORY_MODES.map((m) => memCell(p, m))]),
    ["l", "r", ...MEMORY_MODES.map(() => "r" as const)],
  );

  const depthNotes = Object.entries(o.depthOverrides).map(([id, v]) => `- ${peers.find((p) => p.id === id)?.label ?? id}: ${v.depth} tasks per batch — ${v.reason}.`);
  const memoryNotes = Object.entries(o.memory.overrides).map(([id, v]) => `- Memory, ${peers.find((p) => p.id === id)?.label ?? id}: ${v.waiters.toLocaleString("en-US")} tasks — ${v.reason}.`);
  return [
    `A cap of ${o.concurrency} tasks running at once. Each cell submits ${o.depth.toLocaleString("en-US")} tasks at once, awaits them all, and repeats for ${o.budgetMs} ms on the same scheduler (a cell's figure: its median batch); ` +
      `median of ${o.rounds} interleaved rounds after ${o.warmup} warm-up round(s). Mixed priorities: ${LEVELS} levels drawn from one fixed pseudo-random sequence, the same for every library.`,
    "",
    table(["Library", "Version", "Configuration (as its docs recommend)"], peers.map((p) => [p.label, `${p.pkg}@${p.version}`, p.config])),
    "",
    "### Cost per task",
    "",
    "Per task, from submission to settled promise, with a batch's tasks all submitted at once: CPU time of the process (user + system, GC threads included, over the whole cell ÷ tasks) · wall time (the median batch ÷ its tasks) · " +
      `CPU time relative to ${reference.label} (above 1× = costlier than sluice). CPU time is the headline: on a shared machine it does not count the time other processes held the cores.`,
    "",
    costTable,
    "",
    "### Correctness, measured in the same run",
    "",
    `Counted at each task's first and last statement over the measured rounds: *max* running at once (✘ above the cap of ${o.concurrency}); ` +
      "a *priority inversion* is a task that started while a more important one, submitted before that moment, had not; " +
      "a *FIFO inversion* is a task that started while one of its own priority submitted before it had not. " +
      "The last column is an order check, once per measured round: the cap is filled with tasks that wait on a gate, a batch at mixed priorities is submitted and left to reach the library's queue, then the gate opens.",
    "",
    checkTable,
    "",
    "### Memory per queued task",
    "",
    `The cap is filled with ${o.concurrency} tasks that never end, then N tasks are submitted at once and wait; ` +
      "`heapUsed` after two forced GCs minus the same before, ÷ N (the promise each call returned included, held by the caller). " +
      `Median of ${o.memory.rounds} fresh \`node --expose-gc\` process(es) per cell · ratio to ${reference.label}.`,
    "",
    memTable,
    "",
    `- The *no scheduler* row calls each task directly through the same harness (the closures, the bookkeeping, \`Promise.all\`): subtract it to see a library's own cost.`,
    "- sluice's priorities keep their default aging (`priorityAging: 1000`): a task counts one level higher per second waited at the front of its level. Every batch here drains in far less than a second, so aging cannot explain an inversion; p-queue and Bottleneck have strict priorities.",
    ...bottleneckNote(r),
    ...depthNotes,
    ...memoryNotes,
  ].join("\n");
}
