/**
 * Timing loops and the interleaved-rounds driver. Each cell runs for a time budget rather than a
 * fixed count, so a library at 5 M grants/s and one at 1 k grants/s are both measured for long
 * enough without the slow one taking minutes. Rounds visit the libraries round-robin, starting one
 * further along each round, so drift in machine load (other engineers' test runs on this shared box)
 * spreads over every library instead of landing on whichever ran last.
 *
 * @module
 */

/** Runs a full garbage collection when the process was started with `--expose-gc`. */
export function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** True when `gc()` actually collects (heap figures need it). */
export function canGc(): boolean {
  return typeof (globalThis as { gc?: unknown }).gc === "function";
}

/** Waits `ms` on a real timer. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Lets pending I/O and timers run (one macrotask turn). */
export function tick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The result of one timed cell. */
export interface Rate {
  /** Operations completed. */
  ops: number;
  /** Nanoseconds per operation. */
  ns: number;
}

const MAX_BATCH = 4096;

/** Calls a synchronous `op` back to back for about `budgetMs`. */
export function rateSync(op: () => unknown, budgetMs: number): Rate {
  let ops = 0;
  let batch = 1;
  const t0 = performance.now();
  let elapsed = 0;
  do {
    for (let i = 0; i < batch; i++) op();
    ops += batch;
    if (batch < MAX_BATCH) batch *= 2;
    elapsed = performance.now() - t0;
  } while (elapsed < budgetMs);
  return { ops, ns: (elapsed * 1e6) / ops };
}

/** Awaits `op()` back to back (one caller, closed loop) for about `budgetMs`. */
export async function rateSerial(op: () => Promise<unknown>, budgetMs: number): Promise<Rate> {
  let ops = 0;
  let batch = 1;
  const t0 = performance.now();
  let elapsed = 0;
  do {
    for (let i = 0; i < batch; i++) await op();
    ops += batch;
    if (batch < MAX_BATCH) batch *= 2;
    elapsed = performance.now() - t0;
  } while (elapsed < budgetMs);
  return { ops, ns: (elapsed * 1e6) / ops };
}

/** Starts `width` calls at once and awaits them all, repeatedly, for about `budgetMs`. */
export async function rateConcurrent(op: () => Promise<unknown>, width: number, budgetMs: number): Promise<Rate> {
  let ops = 0;
  const pending = new Array<Promise<unknown>>(width);
  const t0 = performance.now();
  let elapsed = 0;
  do {
    for (let i = 0; i < width; i++) pending[i] = op();
    await Promise.all(pending);
    ops += width;
    elapsed = performance.now() - t0;
  } while (elapsed < budgetMs);
  return { ops, ns: (elapsed * 1e6) / ops };
}

/** `items` rotated left by `by` (round r starts with item r mod n). */
export function rotate<T>(items: readonly T[], by: number): T[] {
  const n = items.length;
  if (n === 0) return [];
  const k = ((by % n) + n) % n;
  return [...items.slice(k), ...items.slice(0, k)];
}
