/**
 * The scheduler section's adapters (the companion of `peers.ts`, which holds the "N per interval"
 * ones): a concurrency cap, optionally with a rate limit, and per-task priorities — for sluice,
 * p-queue and Bottleneck, each configured as its own docs recommend. As in `peers.ts`, these are the
 * only place the libraries' APIs appear in the section, so each configuration reads in one screen.
 *
 * Priorities are passed as a *level*, higher = more important (0 = the library's default), and each
 * adapter maps it to its library's scale: sluice and p-queue take it as is (higher first, default 0);
 * Bottleneck counts the other way (0–9, lower first, default 5), so level L is `5 − L`.
 *
 * @module
 */
import Bottleneck from "bottleneck";
import PQueue from "p-queue";
import { combine, ConcurrencyLimiter, WindowLimiter } from "../src/index.ts";
import { bottleneckPeer, pQueuePeer, sluiceWindow } from "./peers.ts";

/** What one capped scheduler is asked to enforce. */
export interface CapConfig {
  /** The most tasks running at once. */
  concurrency: number;
  /** Also at most `limit` starts per `interval` ms (a strict window where the library has one). */
  rate?: { limit: number; interval: number };
}

/** One configured scheduler instance. */
export interface CappedScheduler {
  /** Runs `task` once the scheduler lets it start; `level` is the priority (higher first, default 0). */
  run<T>(task: () => T | PromiseLike<T>, level?: number): Promise<T>;
  /** Releases background resources (Bottleneck's heartbeat) so nothing outlives the measurement. */
  close(): void | Promise<void>;
  /** Tasks waiting, where the library counts them. */
  waiting?(): number;
  /** Calls not yet taken into the library's queue (Bottleneck's RECEIVED jobs); 0 once all wait there. */
  intakePending?(): number;
}

export interface CappedPeer {
  id: string;
  label: string;
  /** npm package and version (shared with `peers.ts`). */
  pkg: string;
  version: string;
  /** The configuration used, for RESULTS.md. */
  config: string;
  /** Whether priorities are in the API (a library without them gets "—", never a FIFO run counted as one). */
  priorities: boolean;
  create(config: CapConfig): CappedScheduler;
}

const noop = (): void => {};

export const sluiceCapped: CappedPeer = {
  id: "sluice",
  label: "sluice",
  pkg: "sluice",
  version: sluiceWindow.version,
  config:
    "`new ConcurrencyLimiter({ limit: concurrency })`; with a rate: `combine(new WindowLimiter({ limit, interval }), cap)` (one grant takes the slot and counts the window, atomically); `schedule(task, { priority: level })` (defaults: priority 0, `priorityAging` 1000 ms)",
  priorities: true,
  create({ concurrency, rate }) {
    const cap = new ConcurrencyLimiter({ limit: concurrency });
    const limiter = rate === undefined ? cap : combine(new WindowLimiter({ limit: rate.limit, interval: rate.interval }), cap);
    return {
      run: (task, level) =>
        level === undefined || level === 0 ? limiter.schedule(task) : limiter.schedule(task, { priority: level }),
      close: noop,
      waiting: () => limiter.queued,
    };
  },
};

export const pQueueCapped: CappedPeer = {
  id: "p-queue",
  label: "p-queue",
  pkg: pQueuePeer.pkg,
  version: pQueuePeer.version,
  config:
    "`new PQueue({ concurrency })`; with a rate: `new PQueue({ concurrency, intervalCap: limit, interval, strict: true })` (its strict sliding window); `add(task, { priority: level })` (higher first, default 0)",
  priorities: true,
  create({ concurrency, rate }) {
    const queue = new PQueue(rate === undefined ? { concurrency } : { concurrency, intervalCap: rate.limit, interval: rate.interval, strict: true });
    return {
      run: (task, level) => queue.add(task, level === undefined || level === 0 ? {} : { priority: level }) as Promise<never>,
      close: () => queue.clear(),
      waiting: () => queue.size,
    };
  },
};

export const bottleneckCapped: CappedPeer = {
  id: "bottleneck",
  label: "Bottleneck",
  pkg: bottleneckPeer.pkg,
  version: bottleneckPeer.version,
  config:
    "`new Bottleneck({ maxConcurrent: concurrency })`; with a rate: `+ { reservoir: limit, reservoirRefreshAmount: limit, reservoirRefreshInterval: interval }` (its README's \"N per interval\" recipe); `schedule({ priority: 5 − level }, async () => task())` (0–9, lower first, default 5)",
  priorities: true,
  create({ concurrency, rate }) {
    const limiter = new Bottleneck(
      rate === undefined
        ? { maxConcurrent: concurrency }
        : { maxConcurrent: concurrency, reservoir: rate.limit, reservoirRefreshAmount: rate.limit, reservoirRefreshInterval: rate.interval },
    );
    return {
      run: (task, level) => limiter.schedule({ priority: 5 - (level ?? 0) }, async () => task()) as Promise<never>,
      close: () => limiter.disconnect(),
      intakePending: () => limiter.counts().RECEIVED,
    };
  },
};

/** sluice first: the order of the tables, and the reference of the ratios. */
export const CAPPED_PEERS: readonly CappedPeer[] = [sluiceCapped, pQueueCapped, bottleneckCapped];

/** Looks an adapter up by id (for the memory child). */
export function cappedPeerById(id: string): CappedPeer {
  const peer = CAPPED_PEERS.find((p) => p.id === id);
  if (peer === undefined) throw new RangeError(`unknown library \`${id}\`; known: ${CAPPED_PEERS.map((p) => p.id).join(", ")}`);
  return peer;
}
