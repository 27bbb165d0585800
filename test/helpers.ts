/**
 * Test helpers: record when promises settle, in virtual time.
 */
import { expect } from "vitest";
import type { ManualClock } from "../src/clock.ts";

/** The outcome of one tracked promise, filled in when it settles. */
export interface Outcome<T = unknown> {
  settled: boolean;
  /** Virtual time at which it resolved. */
  at?: number;
  value?: T;
  error?: unknown;
}

/** Tracks `promise`: its outcome records the clock's time when it settles. Never leaves a rejection unhandled. */
export function track<T>(clock: ManualClock, promise: Promise<T>): Outcome<T> {
  const outcome: Outcome<T> = { settled: false };
  promise.then(
    (value) => {
      outcome.settled = true;
      outcome.at = clock.now();
      outcome.value = value;
    },
    (error: unknown) => {
      outcome.settled = true;
      outcome.at = clock.now();
      outcome.error = error;
    },
  );
  return outcome;
}

/** Records labels in the order their promises resolve, with the time of each. */
export class GrantLog {
  readonly entries: Array<{ label: string; at: number }> = [];
  readonly #clock: ManualClock;
  constructor(clock: ManualClock) {
    this.#clock = clock;
  }
  add(label: string, promise: Promise<unknown>): void {
    promise.then(() => this.entries.push({ label, at: this.#clock.now() }), () => {});
  }
  get labels(): string[] {
    return this.entries.map((e) => e.label);
  }
  get times(): number[] {
    return this.entries.map((e) => e.at);
  }
}

/** A small seeded generator (LCG) of numbers in [0, 1): the same seed, the same run. */
export function seededRandom(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32;
}

/**
 * Collects unhandled rejections while the calling file's tests run (registered in `beforeAll`,
 * removed in `afterAll`); `take()` returns and clears them.
 */
export function captureUnhandled(hooks: { beforeAll(fn: () => void): void; afterAll(fn: () => void): void }): { take(): unknown[] } {
  let seen: unknown[] = [];
  const listener = (reason: unknown) => seen.push(reason);
  hooks.beforeAll(() => void process.on("unhandledRejection", listener));
  hooks.afterAll(() => void process.off("unhandledRejection", listener));
  return {
    take() {
      const taken = seen;
      seen = [];
      return taken;
    },
  };
}

/**
 * The end of a soak: fires timers until none is left (at most 200,000: a timer re-arming itself at
 * one instant would stop there), checks that every call settled — before awaiting them, so a stuck
 * call fails at once instead of hanging — then lets `rest` ms more pass and checks no timer is left.
 */
export async function drainSoak(clock: ManualClock, calls: readonly Promise<unknown>[], settled: () => number, label: string, rest: number): Promise<void> {
  const drained = await clock.runAll(200_000);
  expect(settled(), `${label}: calls settled`).toBe(calls.length);
  await Promise.all(calls);
  expect(drained, `${label}: timers fired`).toBeLessThan(200_000);
  await clock.advance(rest);
  expect(clock.pendingTimers, `${label}: timers left`).toBe(0);
}
