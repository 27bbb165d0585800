/**
 * Cost growth, in a fresh process: `node --expose-gc bench/growth-child.ts MODE LIBRARY DEPTHS`.
 * Prints one `RESULT {json}` line and exits.
 *
 * Modes:
 * - `enqueue`: for each depth n (comma-separated), a fresh limiter that has spent its permits, n
 *   waiters queued, then the cost of queueing {@link PROBE} more (ns per waiter: the calls alone,
 *   plus the asynchronous intake of a library that has one);
 * - `grant` (sluice): for each depth n, the cost of the gate's grant pass per granted waiter, timed
 *   inside the timer callback through an instrumenting {@link Clock} (public API), with n (+800, so
 *   every pass grants a full window) waiters queued and 100 granted per 20 ms window;
 * - `keyed` (sluice): for each key count k, the cost of `KeyedLimiter.tryAcquire(key)` over k live
 *   keys visited in a shuffled order.
 *
 * @module
 */
import { type Clock, KeyedLimiter, systemClock, WindowLimiter } from "../src/index.ts";
import { gc, rateSync, sleep, tick } from "./lib/measure.ts";
import { median } from "./lib/stats.ts";
import { report, untilQueued } from "./lib/child.ts";
import { type Gated, NEVER_BINDS, peerById } from "./peers.ts";

const LIMIT = 100;
const INTERVAL = 360_000;
/** Waiters added and timed at each depth, {@link PROBES} times (median). */
const PROBE = 200;
const PROBES = 5;
const noop = (): void => {};



async function enqueueCost(id: string, depths: number[]): Promise<Record<number, number>> {
  const peer = peerById(id);
  const out: Record<number, number> = {};
  for (const n of depths) {
    const gated = peer.create(LIMIT, INTERVAL);
    // Evenly spacing limiters (Bottleneck's minTime, SmoothLimiter) hold every call after the first.
    const spend = peer.shape === "even" ? 1 : LIMIT;
    await Promise.all(Array.from({ length: spend }, () => gated.run(noop)));
    const held: unknown[] = [];
    for (let i = 0; i < n; i++) held.push(gated.run(noop));
    await untilQueued(gated, n);
    const samples: number[] = [];
    for (let probe = 1; probe <= PROBES; probe++) {
      gc();
      // The first event-loop turns after a forced collection are slow (≈ 45 µs each): taken
      // before the clock starts, so no library is charged for them.
      for (let i = 0; i < 3; i++) await tick();
      const t0 = performance.now();
      for (let i = 0; i < PROBE; i++) held.push(gated.run(noop));
      // The same rule for every library: the clock stops once the calls have returned and one
      // event-loop turn has run, except where the library takes calls in
      // asynchronously (Bottleneck's intake), which is timed until it has taken them all. (Stopping
      // after event-loop turns only for libraries that cannot report their queue charged limiter
      // and pacer ≈ 670 ns a waiter of idle turns: red-team audit, 2026-11-27.)
      // One event-loop turn for every library, so work a library leaves to microtasks counts too.
      await tick();
      if (gated.intakePending !== undefined) while (gated.intakePending() > 0) await tick();
      samples.push(((performance.now() - t0) * 1e6) / PROBE);
      await untilQueued(gated, n + probe * PROBE); // untimed: every waiter held before the next probe
    }
    out[n] = median(samples);
    // The waiters stay queued (most libraries cannot drop them); the process exits at the end.
    void held.length;
  }
  return out;
}

async function grantCost(depths: number[]): Promise<Record<number, number>> {
  const out: Record<number, number> = {};
  for (const n of depths) {
    const samples: number[] = [];
    let limiter: WindowLimiter | undefined;
    // Times every timer callback the limiter arms; the callback is the gate's grant pass.
    const clock: Clock = {
      now: systemClock.now,
      clearTimeout: systemClock.clearTimeout,
      setTimeout: (callback, delay) =>
        systemClock.setTimeout(() => {
          const before = limiter!.queued;
          const t0 = performance.now();
          callback();
          const elapsed = performance.now() - t0;
          const granted = before - limiter!.queued;
          if (granted > 0) samples.push((elapsed * 1e6) / granted);
        }, delay),
    };
    limiter = new WindowLimiter({ limit: 100, interval: 20, clock });
    limiter.tryAcquire(100); // one entry: each window then frees 100 permits at one instant
    const held: Promise<void>[] = [];
    for (let i = 0; i < n + 800; i++) held.push(limiter.acquire());
    gc();
    while (samples.length < 7) await sleep(20);
    out[n] = median(samples.slice(1)); // the first pass also pays for warming up
    void held.length;
  }
  return out;
}

function shuffled(n: number): number[] {
  const a = Array.from({ length: n }, (_, i) => i);
  let seed = 12345;
  for (let i = n - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const j = seed % (i + 1);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

function keyedCost(counts: number[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const k of counts) {
    const keyed = new KeyedLimiter<string, WindowLimiter>({
      create: () => new WindowLimiter({ limit: NEVER_BINDS, interval: 1000 }),
      maxKeys: Math.max(k, 10_000),
    });
    const keys = shuffled(k).map((i) => `tenant-${i}`);
    for (const key of keys) keyed.tryAcquire(key);
    // Visit the keys in a different shuffled order, many times over.
    const order = shuffled(Math.max(k, 4096)).map((i) => keys[i % k]!);
    const samples: number[] = [];
    for (let round = 0; round < 5; round++) {
      gc();
      let i = 0;
      samples.push(rateSync(() => keyed.tryAcquire(order[i++ % order.length]!), 100).ns);
    }
    out[k] = median(samples);
  }
  return out;
}

const [mode, id, list] = process.argv.slice(2);
const depths = (list ?? "10,100,1000").split(",").map(Number);
// A warm-up pass at a small depth first, so the first measured depth does not pay for the JIT.
if (mode === "enqueue") {
  await enqueueCost(id ?? "", [100]);
  report(await enqueueCost(id ?? "", depths));
} else if (mode === "grant") {
  await grantCost([1000]);
  report(await grantCost(depths));
}
else if (mode === "keyed") report(keyedCost(depths));
else throw new RangeError(`unknown mode \`${mode}\``);
