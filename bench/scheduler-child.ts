/**
 * One memory measurement of the scheduler section in a fresh process (so the heap starts clean):
 * `node --expose-gc bench/scheduler-child.ts MODE LIBRARY N CAP`. The cap is filled with CAP tasks
 * that never end, then N tasks are submitted at once and wait behind it; prints one
 * `RESULT {json}` line with the heap bytes per queued task, then exits.
 *
 * Modes: `cap` (a concurrency cap, priority 0), `cap-rate` (the cap with a rate limit that never
 * binds), `prio` (the cap, tasks at mixed priorities).
 *
 * @module
 */
import { canGc, gc } from "./lib/measure.ts";
import { report } from "./lib/child.ts";
import { NEVER_BINDS } from "./peers.ts";
import { cappedPeerById } from "./scheduler-peers.ts";
import { levels, untilQueued } from "./sections/scheduler.ts";

function heap(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

const noop = (): void => {};

async function main(): Promise<void> {
  const [mode, id, nArg, capArg] = process.argv.slice(2);
  if (!canGc()) throw new Error("run with --expose-gc");
  if (mode !== "cap" && mode !== "cap-rate" && mode !== "prio") throw new RangeError(`\`mode\` must be cap, cap-rate or prio, got ${mode}`);
  const peer = cappedPeerById(id ?? "");
  const n = Number(nArg);
  const cap = Number(capArg);
  const s = peer.create({ concurrency: cap, ...(mode === "cap-rate" ? { rate: { limit: NEVER_BINDS, interval: 1000 } } : {}) });
  const never = new Promise<never>(() => {});
  for (let i = 0; i < cap; i++) void s.run(() => never);
  await untilQueued(s, 0);
  const order = mode === "prio" ? levels(n) : undefined;
  const promises: unknown[] = new Array<unknown>(n).fill(0);
  const before = heap();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) promises[i] = s.run(noop, order?.[i]);
  await untilQueued(s, n);
  const queuedMs = performance.now() - t0;
  const after = heap();
  const queued = s.waiting?.() ?? n;
  // `promises.length` keeps the caller's promises alive up to here (V8 frees what is no longer read).
  report({ bytesPerTask: (after - before) / n, queuedMs, queued, n: promises.length });
}

await main();
