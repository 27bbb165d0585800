/**
 * Every library the benchmark measures, behind one small adapter each, used the way its own docs
 * recommend for "at most N calls per interval" (strict modes where it has one). The adapters are the
 * only place library APIs appear, so a reader can check each configuration in one screen, and every
 * section drives all libraries through the same two shapes:
 *
 * - `create(limit, interval)` → a {@link Gated}: run a task once the limiter lets it start
 *   (sluice `schedule`, p-queue `add`, p-throttle's throttled function, Bottleneck `schedule`, …);
 * - `fastPaths()` → the cheapest grant paths when the limit never binds, for the overhead section.
 *
 * A capability the library does not have is `undefined` (or `"none"`), never emulated: the harness
 * then reports "—" instead of measuring something the library cannot do.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { AsyncRateLimiter, RateLimiter as PacerRateLimiter } from "@tanstack/pacer";
import Bottleneck from "bottleneck";
import { RateLimiter as TokenRateLimiter } from "limiter";
import PQueue from "p-queue";
import pThrottle from "p-throttle";
import { SmoothLimiter, WindowLimiter } from "../src/index.ts";
import { INTERNALS } from "../src/limiters/limiter.ts";
import type { Shape } from "./lib/stats.ts";

/** Options of one run: permits the task costs, and a signal that cancels it while it waits. */
export interface RunOptions {
  weight?: number;
  signal?: AbortSignal;
}

/** One configured limiter instance. */
export interface Gated {
  /** Runs `task` once the limiter lets it start; settles with its result (or the abort reason). */
  run<T>(task: () => T, options?: RunOptions): Promise<T>;
  /** Releases background resources (heartbeats, cleanup timers) so nothing outlives the measurement. */
  close(): void | Promise<void>;
  /** How many calls wait, where the library exposes it (lets the harness see when enqueueing is done). */
  waiting?(): number;
  /**
   * Calls not yet taken into the library's queue, for libraries that take calls in asynchronously
   * (Bottleneck: jobs in its RECEIVED state); 0 once every call so far waits in the queue.
   */
  intakePending?(): number;
  /** sluice only: a bare `acquire()` (a waiter without a task), beside `run` = `schedule`. */
  acquire?(): Promise<void>;
  /**
   * sluice only, diagnostic: the grant times the limiter itself recorded (its policy's log), to tell
   * the limiter's own contract apart from when the tasks actually started.
   */
  grantTimes?: number[];
}

/** The cheapest grant paths of a library when its limit never binds. */
export interface FastPaths {
  /** A synchronous "take one permit now if you can" (sluice `tryAcquire`). */
  trySync?: () => boolean;
  /** Wait for one permit (sluice `acquire`); a wrapped no-op where the library only wraps functions. */
  acquire: () => Promise<unknown>;
  /** Run a task (sluice `schedule`). */
  schedule: <T>(task: () => T) => Promise<T>;
  dispose(): void | Promise<void>;
}

/** How a library lets a caller cancel a waiting call. */
export type AbortSupport = "per-call" | "shared" | "none";

export interface Peer {
  /** Short stable id, used on the command line and in file names. */
  id: string;
  /** What the tables show. */
  label: string;
  /** npm package and the version actually loaded. */
  pkg: string;
  version: string;
  /** The configuration used, for RESULTS.md. */
  config: string;
  /** How a saturated queue comes out: bursts per window, or evenly spaced (picks the ideal schedule). */
  shape: Shape;
  /** True when the library enforces "≤ N in ANY window" (a sliding log), by its own docs. */
  strictClaim: boolean;
  /** Per-call weights (permits) in its API. */
  weights: boolean;
  /** Cancellation in its API: a signal per call, one signal for every pending call, or none. */
  abort: AbortSupport;
  /**
   * A limiter with `limit` per `interval` ms. `sharedSignal`: for libraries that take one signal for
   * all calls. `weighted`: the caller will pass weights (some libraries switch to a costlier mode).
   */
  create(limit: number, interval: number, sharedSignal?: AbortSignal, weighted?: boolean): Gated;
  /** Fast paths with a limit that never binds. */
  fastPaths(): FastPaths;
}

/** A limit no benchmark reaches: 10⁹ per second. */
export const NEVER_BINDS = 1_000_000_000;

/** The version actually installed (read from disk: not every package exports its package.json). */
function versionOf(pkg: string): string {
  const path = pkg === "sluice" ? "../package.json" : `../node_modules/${pkg}/package.json`;
  return (JSON.parse(readFileSync(new URL(path, import.meta.url), "utf8")) as { version: string }).version;
}

const noop = (): void => {};
const call = (task: () => unknown): unknown => task();

function sluicePeer(id: string, label: string, shape: Shape, make: (limit: number, interval: number) => WindowLimiter | SmoothLimiter, config: string, strict: boolean): Peer {
  return {
    id,
    label,
    pkg: "sluice",
    version: versionOf("sluice"),
    config,
    shape,
    strictClaim: strict,
    weights: true,
    abort: "per-call",
    create(limit, interval) {
      const limiter = make(limit, interval);
      // Diagnostic only: record the time each permit counts from in the policy (an internal hook,
      // not public API) — at the grant, or, for a task held at its grant, when it starts (`release`).
      // Every argument passes through: dropping `hold` would change what the policy does.
      const grantTimes: number[] = [];
      const policy = limiter[INTERNALS].policies[0]!;
      const take = policy.take.bind(policy);
      policy.take = (permits, at, hold) => {
        if (hold !== true || policy.holdsUntilRelease !== true) for (let i = 0; i < permits; i++) grantTimes.push(at);
        take(permits, at, hold);
      };
      const release = policy.release?.bind(policy);
      if (release !== undefined) {
        policy.release = (permits, at) => {
          for (let i = 0; i < permits; i++) grantTimes.push(at);
          release(permits, at);
        };
      }
      return {
        grantTimes,
        run: (task, options) =>
          limiter.schedule(task, options === undefined ? undefined : { permits: options.weight ?? 1, signal: options.signal }),
        close: noop,
        waiting: () => limiter.queued,
        acquire: () => limiter.acquire(),
      };
    },
    fastPaths() {
      const limiter = make(NEVER_BINDS, 1000);
      return {
        trySync: () => limiter.tryAcquire() === 0,
        acquire: () => limiter.acquire(),
        schedule: (task) => limiter.schedule(task),
        dispose: noop,
      };
    },
  };
}

export const sluiceWindow: Peer = sluicePeer(
  "sluice-window",
  "sluice WindowLimiter",
  "window",
  (limit, interval) => new WindowLimiter({ limit, interval }),
  "`new WindowLimiter({ limit, interval })` (strict rolling window), `schedule(task, { permits, signal })`",
  true,
);

export const sluiceSmooth: Peer = sluicePeer(
  "sluice-smooth",
  "sluice SmoothLimiter",
  "even",
  // A limit that never binds also gets a burst that never binds, so spacing never queues a call.
  // A SmoothLimiter spaces grants at least 1 µs apart, so "never binds" is its fastest rate with a
  // store of 10⁹ permits: a benchmark never empties it.
  (limit, interval) => limit === NEVER_BINDS
    ? new SmoothLimiter({ limit: 1_000_000, interval: 1000, burst: NEVER_BINDS })
    : new SmoothLimiter({ limit, interval, burst: 0 }),
  "`new SmoothLimiter({ limit, interval })` (defaults: burst 0, evenly spaced); overhead runs use its fastest rate (1,000,000 a second) with a store of 10⁹ permits, so spacing never queues a call",
  false,
);

export const pThrottlePeer: Peer = {
  id: "p-throttle",
  label: "p-throttle (strict)",
  pkg: "p-throttle",
  version: versionOf("p-throttle"),
  config: "`pThrottle({ limit, interval, strict: true, weight })` wrapping `(task) => task()`; `signal` option (one per throttle). Strict mode, the one that keeps a rolling window as sluice's WindowLimiter does; its default mode is cheaper (an outside audit, 2026-11-27, found its `acquire()` level with WindowLimiter's there)",
  shape: "window",
  strictClaim: true,
  weights: true,
  abort: "shared",
  create(limit, interval, sharedSignal, weighted) {
    // The `weight` option switches p-throttle to its weighted algorithm, so it is only set when used.
    const throttle = pThrottle({
      limit,
      interval,
      strict: true,
      ...(weighted === true ? { weight: (_task: unknown, weight?: number) => weight ?? 1 } : {}),
      ...(sharedSignal === undefined ? {} : { signal: sharedSignal }),
    });
    const throttled = throttle(<T>(task: () => T, _weight?: number): T => task());
    return {
      run: (task, options) => {
        if (options?.signal !== undefined && options.signal !== sharedSignal) {
          return Promise.reject(new TypeError("p-throttle takes one signal per throttle, not per call"));
        }
        if (weighted !== true && options?.weight !== undefined && options.weight !== 1) {
          return Promise.reject(new TypeError("create the p-throttle adapter with `weighted` to pass weights"));
        }
        return throttled(task, options?.weight) as Promise<never>;
      },
      close: noop,
      waiting: () => throttled.queueSize,
    };
  },
  fastPaths() {
    const throttled = pThrottle({ limit: NEVER_BINDS, interval: 1000, strict: true })(call);
    return {
      acquire: () => throttled(noop) as Promise<unknown>,
      schedule: (task) => throttled(task) as Promise<never>,
      dispose: noop,
    };
  },
};

export const pQueuePeer: Peer = {
  id: "p-queue",
  label: "p-queue (strict)",
  pkg: "p-queue",
  version: versionOf("p-queue"),
  config: "`new PQueue({ intervalCap: limit, interval, strict: true })` (concurrency unlimited), `add(task, { signal })`",
  shape: "window",
  strictClaim: true,
  weights: false,
  abort: "per-call",
  create(limit, interval) {
    const queue = new PQueue({ intervalCap: limit, interval, strict: true });
    return {
      run: (task, options) => {
        if (options?.weight !== undefined && options.weight !== 1) {
          return Promise.reject(new TypeError("p-queue has no per-task weight"));
        }
        return queue.add(task, options?.signal === undefined ? {} : { signal: options.signal }) as Promise<never>;
      },
      close: () => queue.clear(),
      waiting: () => queue.size,
    };
  },
  fastPaths() {
    const queue = new PQueue({ intervalCap: NEVER_BINDS, interval: 1000, strict: true });
    return {
      acquire: () => queue.add(noop),
      schedule: (task) => queue.add(task) as Promise<never>,
      dispose: () => queue.clear(),
    };
  },
};

export const bottleneckPeer: Peer = {
  id: "bottleneck",
  label: "Bottleneck",
  pkg: "bottleneck",
  version: versionOf("bottleneck"),
  config:
    "`new Bottleneck({ reservoir: limit, reservoirRefreshAmount: limit, reservoirRefreshInterval: interval, minTime: interval / limit })` — the README's \"N per interval\" recipe (reservoir refresh, plus minTime to stagger jobs), `schedule({ weight }, task)`; overhead runs use `new Bottleneck()` (no limits)",
  shape: "even",
  strictClaim: false,
  weights: true,
  abort: "none",
  create(limit, interval) {
    const limiter = new Bottleneck({
      reservoir: limit,
      reservoirRefreshAmount: limit,
      reservoirRefreshInterval: interval,
      minTime: interval / limit,
    });
    return {
      run: (task, options) => {
        if (options?.signal !== undefined) return Promise.reject(new TypeError("Bottleneck has no per-job abort"));
        return limiter.schedule({ weight: options?.weight ?? 1 }, async () => task()) as Promise<never>;
      },
      close: () => limiter.disconnect(),
      intakePending: () => limiter.counts().RECEIVED,
    };
  },
  fastPaths() {
    const limiter = new Bottleneck();
    return {
      acquire: () => limiter.schedule(async () => undefined),
      schedule: (task) => limiter.schedule(async () => task()) as Promise<never>,
      dispose: () => limiter.disconnect(),
    };
  },
};

export const limiterPeer: Peer = {
  id: "limiter",
  label: "limiter (RateLimiter)",
  pkg: "limiter",
  version: versionOf("limiter"),
  config:
    "`new RateLimiter({ tokensPerInterval: limit, interval })` (token bucket + interval counter; the README says it is not a rolling window), `removeTokens(weight)` then the task",
  shape: "window",
  strictClaim: false,
  weights: true,
  abort: "none",
  create(limit, interval) {
    const limiter = new TokenRateLimiter({ tokensPerInterval: limit, interval });
    return {
      run: (task, options) => {
        if (options?.signal !== undefined) return Promise.reject(new TypeError("limiter has no abort"));
        return limiter.removeTokens(options?.weight ?? 1).then(task);
      },
      close: noop,
    };
  },
  fastPaths() {
    const limiter = new TokenRateLimiter({ tokensPerInterval: NEVER_BINDS, interval: 1000 });
    return {
      trySync: () => limiter.tryRemoveTokens(1),
      acquire: () => limiter.removeTokens(1),
      schedule: (task) => limiter.removeTokens(1).then(task),
      dispose: noop,
    };
  },
};

/** Waits `ms` on a real timer. */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export const pacerPeer: Peer = {
  id: "pacer",
  label: "@tanstack/pacer",
  pkg: "@tanstack/pacer",
  version: versionOf("@tanstack/pacer"),
  config:
    "`new AsyncRateLimiter(fn, { limit, window: interval, windowType: 'sliding' })`; it rejects over-limit calls instead of queueing them, so each caller retries after `getMsUntilNextWindow()` as its docs suggest; the synchronous `RateLimiter.maybeExecute()` is its try path. Its sliding window keeps every call of the last interval and scans them on each call, so at section 1's never-binding limit its cost grows with the calls made (an outside audit, 2026-11-27, found it several times cheaper with its default fixed window, still far behind): its ratios there measure that, not a typical load",
  shape: "window",
  strictClaim: true,
  weights: false,
  abort: "none",
  create(limit, interval) {
    const limiter = new AsyncRateLimiter(async (task: () => unknown) => ({ value: task() }), {
      limit,
      window: interval,
      windowType: "sliding",
    });
    return {
      run: async <T>(task: () => T, options?: RunOptions): Promise<T> => {
        if (options?.signal !== undefined) throw new TypeError("pacer's rate limiter has no per-call abort");
        if (options?.weight !== undefined && options.weight !== 1) throw new TypeError("pacer has no per-call weight");
        for (;;) {
          const result = await limiter.maybeExecute(task);
          if (result !== undefined) return result.value as T;
          await sleep(Math.max(1, limiter.getMsUntilNextWindow()));
        }
      },
      close: () => limiter.reset(),
    };
  },
  fastPaths() {
    const sync = new PacerRateLimiter(noop, { limit: NEVER_BINDS, window: 1000, windowType: "sliding" });
    const limiter = new AsyncRateLimiter(async (task: () => unknown) => task(), {
      limit: NEVER_BINDS,
      window: 1000,
      windowType: "sliding",
    });
    return {
      trySync: () => sync.maybeExecute(),
      acquire: () => limiter.maybeExecute(noop),
      schedule: (task) => limiter.maybeExecute(task) as Promise<never>,
      dispose: () => {
        sync.reset();
        limiter.reset();
      },
    };
  },
};

/** Every library, sluice first; the order of the tables. */
export const PEERS: readonly Peer[] = [
  sluiceWindow,
  sluiceSmooth,
  pThrottlePeer,
  pQueuePeer,
  bottleneckPeer,
  limiterPeer,
  pacerPeer,
];

/** Looks a peer up by id (for child processes). */
export function peerById(id: string): Peer {
  const peer = PEERS.find((p) => p.id === id);
  if (peer === undefined) throw new RangeError(`unknown library \`${id}\`; known: ${PEERS.map((p) => p.id).join(", ")}`);
  return peer;
}
