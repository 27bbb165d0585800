/**
 * What a simulated server saw, for tests to assert server-side outcomes: "zero 429s", "never more
 * than 10 in any second", "at most 4 in flight".
 *
 * @module
 */

/**
 * One request as the server saw it.
 *
 * @example
 * ```ts
 * fetch.stats.arrivals.filter((a) => a.status === 429).map((a) => a.at); // when the 429s came
 * ```
 */
export interface Arrival {
  /** Arrival time, ms. */
  readonly at: number;
  /** The request's method. */
  readonly method: string;
  /** Path and query of the URL. */
  readonly path: string;
  /** The status the server answered with. */
  readonly status: number;
}

/**
 * A fixed window's counts, from {@link ServerStats.perWindow}.
 *
 * @example
 * ```ts
 * fetch.stats.perWindow(60_000).every((w) => w.allowed <= 100);
 * ```
 */
export interface WindowCount {
  /** The window's start, ms. */
  readonly start: number;
  /** Requests answered 2xx. */
  readonly allowed: number;
  /** Requests answered otherwise. */
  readonly refused: number;
}

/**
 * Counters kept by a simulated server's adapter.
 *
 * @example
 * ```ts
 * import { ServerStats } from "sluice/testing";
 * const stats = new ServerStats();
 * stats.arrive();
 * stats.record({ at: 0, method: "GET", path: "/", status: 429 });
 * stats.depart();
 * stats.byStatus[429];        // 1
 * stats.maxInWindow(1000);    // 0 allowed requests in any second
 * ```
 */
export class ServerStats {
  /** Requests that reached the server. */
  requests: number = 0;
  /** Responses by status: `byStatus[429]`. */
  readonly byStatus: Record<number, number> = {};
  /** Requests being handled now (arrived, not yet answered or aborted). */
  inFlight: number = 0;
  /** The most ever in flight at once. */
  maxInFlight: number = 0;
  /** Every request in arrival order. */
  readonly arrivals: Arrival[] = [];

  /** Requests answered with anything but 2xx. */
  get refused(): number {
    return this.arrivals.filter((a) => !isOk(a.status)).length;
  }

  /** For adapters: a request arrived; returns how many are in flight now, this one included. */
  arrive(): number {
    this.requests++;
    this.inFlight++;
    if (this.inFlight > this.maxInFlight) this.maxInFlight = this.inFlight;
    return this.inFlight;
  }

  /** For adapters: the server answered a request with `arrival.status`. */
  record(arrival: Arrival): void {
    this.arrivals.push(arrival);
    this.byStatus[arrival.status] = (this.byStatus[arrival.status] ?? 0) + 1;
  }

  /** For adapters: a request left (answered or aborted). */
  depart(): void {
    this.inFlight--;
  }

  /** The most requests matching `which` (default: answered 2xx) that arrived in any window `[t, t + interval)`. */
  maxInWindow(interval: number, which: (a: Arrival) => boolean = (a) => isOk(a.status)): number {
    const times = this.arrivals.filter(which).map((a) => a.at);
    let max = 0;
    for (let lo = 0, hi = 0; hi < times.length; hi++) {
      while (times[hi]! - times[lo]! >= interval) lo++;
      max = Math.max(max, hi - lo + 1);
    }
    return max;
  }

  /** Counts per fixed window `[phase + k·interval, …)`, from the first arrival's window to the last's. */
  perWindow(interval: number, phase = 0): WindowCount[] {
    const out: WindowCount[] = [];
    for (const a of this.arrivals) {
      const start = phase + Math.floor((a.at - phase) / interval) * interval;
      while (out.length === 0 || out[out.length - 1]!.start < start) {
        const next = out.length === 0 ? start : out[out.length - 1]!.start + interval;
        out.push({ start: next, allowed: 0, refused: 0 });
      }
      const w = out[out.length - 1]! as { start: number; allowed: number; refused: number };
      if (isOk(a.status)) w.allowed++;
      else w.refused++;
    }
    return out;
  }
}

const isOk = (status: number) => status >= 200 && status < 300;
