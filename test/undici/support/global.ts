/**
 * Helpers for the real-server tests: install a dispatcher as the process's global one for the length
 * of a test and put BOTH slots back exactly as they were (undici 8's `setGlobalDispatcher` writes
 * `undici.globalDispatcher.2` and mirrors a wrapper into `.1`, the slot Node's bundled fetch reads);
 * and a limiter wrapper that records when permits were granted and when a pause came.
 */
import type { Limiter } from "../../../src/index.ts";

export const SLOT_1 = Symbol.for("undici.globalDispatcher.1");
export const SLOT_2 = Symbol.for("undici.globalDispatcher.2");

type Slots = Record<symbol, unknown>;

/** Runs `fn` with `install(dispatcher)` in effect, then restores both global slots as they were. */
export async function withGlobalDispatcher<T>(install: () => void, fn: () => Promise<T>): Promise<T> {
  const g = globalThis as unknown as Slots;
  const saved = [g[SLOT_1], g[SLOT_2]] as const;
  install();
  try {
    return await fn();
  } finally {
    g[SLOT_1] = saved[0];
    g[SLOT_2] = saved[1];
  }
}

/** The two global slots, for checking they were restored. */
export function globalSlots(): readonly unknown[] {
  const g = globalThis as unknown as Slots;
  return [g[SLOT_1], g[SLOT_2]];
}

/**
 * A limiter that records, in performance.now() time, each grant (its task starting), each task's end
 * (before the inner limiter releases its permits) and each pause.
 */
export function recording(inner: Limiter): Limiter & { grants: number[]; ends: number[]; pauses: Array<{ at: number; ms: number }> } {
  const grants: number[] = [];
  const ends: number[] = [];
  const pauses: Array<{ at: number; ms: number }> = [];
  return {
    grants,
    ends,
    pauses,
    acquire: (permits, options) => inner.acquire(permits, options),
    tryAcquire: (permits) => inner.tryAcquire(permits),
    schedule: (task, options) =>
      inner.schedule(async () => {
        grants.push(performance.now());
        try {
          return await task();
        } finally {
          ends.push(performance.now());
        }
      }, options),
    pause: (ms) => {
      pauses.push({ at: performance.now(), ms });
      inner.pause(ms);
    },
  };
}
