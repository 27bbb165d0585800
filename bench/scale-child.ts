/**
 * One scale measurement in a fresh process (so heap figures start clean and a library that cannot
 * let go of 100,000 waiters cannot slow the next one): `node --expose-gc bench/scale-child.ts MODE
 * LIBRARY N`. Prints one `RESULT {json}` line, then exits — except in `exit` mode, where exiting by
 * itself is what is measured.
 *
 * Modes:
 * - `queue`: N waiters queued at once behind a limiter that just spent its only permit for the hour:
 *   time to enqueue, heap bytes per waiter after GC, live `Timeout` handles;
 * - `abort-each`: N waiters with an AbortController each; time to abort them all until every promise
 *   has settled;
 * - `abort-shared`: N waiters sharing one signal (p-throttle: the throttle's own signal); time from
 *   `abort()` until every promise has settled;
 * - `exit`: 20 tasks at 5 per 500 ms, then nothing: prints `IDLE` and must exit by itself.
 *
 * @module
 */
import { canGc, gc, tick } from "./lib/measure.ts";
import { report, untilQueued } from "./lib/child.ts";
import { type Gated, peerById } from "./peers.ts";

/**
 * The limiter allows LIMIT per INTERVAL (100 per 6 minutes) and has just spent them, so every later
 * call waits. Not 1 per hour: p-throttle gives waiter k a timer of about k intervals, and past 2³¹ ms
 * (about 596 h) Node fires such a timer at once (p-throttle#40) — a different experiment.
 */
const LIMIT = 100;
const INTERVAL = 360_000;
const noop = (): void => {};

function timers(): number {
  return process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
}

function heap(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}



async function main(): Promise<void> {
  const [mode, id, nArg, op] = process.argv.slice(2);
  const peer = peerById(id ?? "");
  const n = Number(nArg ?? "100000");
  if (mode === "exit") {
    const gated = peer.create(5, 500);
    await Promise.all(Array.from({ length: 20 }, () => gated.run(noop)));
    process.stdout.write(`IDLE ${performance.now()}\n`);
    return; // nothing else: the process should now exit by itself
  }
  if (!canGc()) throw new Error("run with --expose-gc");

  const shared = mode === "abort-shared" ? new AbortController() : undefined;
  const gated = peer.create(LIMIT, INTERVAL, peer.abort === "shared" ? shared?.signal : undefined);
  // Spend the interval's permits. Evenly spacing limiters (Bottleneck's recommended `minTime`,
  // sluice's SmoothLimiter) already hold every call after the first for INTERVAL / LIMIT = 3.6 s, and
  // spending 100 would take 6 minutes.
  const spend = peer.shape === "even" ? 1 : LIMIT;
  await Promise.all(Array.from({ length: spend }, () => gated.run(noop)));
  const promises: unknown[] = new Array<unknown>(n).fill(0);

  if (mode === "queue") {
    const timersBefore = timers();
    const before = heap();
    // The first event-loop turns after a forced collection are slow: taken before the clock starts.
    for (let i = 0; i < 3; i++) await tick();
    const t0 = performance.now();
    if (op === "acquire") {
      if (gated.acquire === undefined) throw new Error(`${id} has no acquire()`);
      for (let i = 0; i < n; i++) promises[i] = gated.acquire();
    } else {
      for (let i = 0; i < n; i++) promises[i] = gated.run(noop);
    }
    const callMs = performance.now() - t0;
    // The same rule as section 5 for every library: held when the calls have returned and one turn
    // has run (work left to microtasks counts), or, for a
    // library that takes calls in asynchronously (Bottleneck), once its intake is done — no idle
    // turns timed (an outside audit, 2026-11-27: they charged libraries without a queue count).
    // One event-loop turn for every library, so work a library leaves to microtasks counts too.
    await tick();
    if (gated.intakePending !== undefined) while (gated.intakePending() > 0) await tick();
    const queuedMs = performance.now() - t0;
    await untilQueued(gated, n); // untimed: every waiter held before the heap is read
    const after = heap();
    // `promises.length` keeps the caller's promises alive up to here (V8 frees what is no longer read).
    report({ callMs, queuedMs, bytesPerWaiter: (after - before) / n, timers: timers() - timersBefore, n: promises.length });
  }

  const controllers = mode === "abort-each" ? Array.from({ length: n }, () => new AbortController()) : [];
  let rejected = 0;
  const onReject = (): void => {
    rejected++;
  };
  for (let i = 0; i < n; i++) {
    const signal = mode === "abort-each" ? controllers[i]!.signal : shared!.signal;
    promises[i] = gated.run(noop, { signal }).then(noop, onReject);
  }
  await untilQueued(gated, n);
  const t0 = performance.now();
  if (mode === "abort-each") for (const c of controllers) c.abort();
  else shared!.abort();
  const abortCallMs = performance.now() - t0;
  await Promise.all(promises);
  const settledMs = performance.now() - t0;
  report({ abortCallMs, settledMs, rejected, timersLeft: timers(), n: promises.length });
}

await main();
