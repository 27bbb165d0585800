/**
 * The adaptive simulation harness: closed-loop callers on one or more clients (each an
 * AdaptiveLimiter, as one process each) send through `sendAdaptive` to a simulated server in virtual
 * time, and the server's own log gives the figures: 429 share, share of the server's real rate, and
 * when that share was reached for good.
 */
import { ManualClock } from "../../src/clock.ts";
import { AdaptiveLimiter, sendAdaptive } from "../../src/adaptive/limiter.ts";
import type { AdaptiveOptions } from "../../src/adaptive/options.ts";
import type { RateChange } from "../../src/adaptive/controller.ts";
import type { ServerModel } from "../../src/testing/decision.ts";
import { serveModel } from "../../src/testing/server.ts";
import { createSimulatedFetch } from "../../src/testing/simulated-fetch.ts";
import { AdaptiveRates } from "../../src/adaptive/rates.ts";
import { createThrottledFetch } from "../../src/http/throttled-fetch.ts";

export interface Sim {
  /** The server (decides by arrival time). */
  server: ServerModel;
  /** The server's real rate over the run, requests per second (for utilisation). */
  realRate: number;
  /** How many clients share the quota, and callers on each. */
  clients?: number;
  callers: number;
  /** Virtual run length, ms. */
  duration: number;
  adaptive?: AdaptiveOptions;
  /** Response latency range, ms. @default 0–2000 */
  latency?: { min: number; max: number };
  seed?: number;
  /**
   * Through `createThrottledFetch({ adaptive })` (retries, the told limit as a window limiter) instead
   * of `sendAdaptive` on a bare AdaptiveLimiter. @default false
   */
  viaFetch?: boolean;
  /** Utilisation is counted from this time on, ms. @default 10000 */
  from?: number;
  /** When each client's callers start, ms (as processes that start apart). @default all at 0 */
  startAt?: readonly number[];
}

export interface SimResult {
  requests: number;
  throttled: number;
  /** 429s / requests over the run. */
  share429: number;
  /** 429s / requests over the second half of the run (steady state). */
  steady429: number;
  /** Accepted requests (by arrival) from 10 s on / (real rate × that time). */
  utilisation: number;
  /** The first second from which every 5-s window holds ≥ 90 % of the real rate (Infinity if never). */
  convergedAt: number;
  /** The first second whose 5-s window holds ≥ 90 % of the real rate: time to reach the rate (Infinity if never). */
  reached90At: number;
  /** Rate changes of client 0. */
  changes: RateChange[];
  limiters: AdaptiveLimiter[];
  /** Accepted requests of each client over the run. */
  perClient: number[];
  /** Jain's fairness index over the clients' accepted requests (1: equal shares). */
  fairness: number;
  /** Accepted requests per second (by arrival at the server) in [from, to). */
  acceptedRate(from: number, to: number): number;
  /** 429 share of the requests that arrived in [from, to). */
  share429In(from: number, to: number): number;
}

export async function simulate(s: Sim): Promise<SimResult> {
  const clock = new ManualClock();
  const fetch = createSimulatedFetch({ server: serveModel(s.server), clock, latency: s.latency ?? { min: 0, max: 2000 }, seed: s.seed ?? 1 });
  const changes: RateChange[] = [];
  const limiters = Array.from({ length: s.clients ?? 1 }, (_, i) =>
    new AdaptiveLimiter({ ...s.adaptive, clock, wallClock: () => clock.now(), onChange: i === 0 ? (c) => changes.push(c) : undefined }));
  const accepted = limiters.map(() => 0);
  const ratesOf: AdaptiveRates[] = [];
  const counted = (i: number) => async (input: string | URL | Request, init?: RequestInit) => {
    const response = await fetch(input, init);
    if (response.status !== 429 && response.status !== 503 && clock.now() < s.duration) accepted[i]!++;
    return response;
  };
  const startOf = (i: number) => {
    const at = s.startAt?.[i] ?? 0;
    return at > 0 ? new Promise<void>((resolve) => clock.setTimeout(resolve, at)) : Promise.resolve();
  };
  const caller = async (limiter: AdaptiveLimiter, i: number) => {
    await startOf(i);
    const send = counted(i);
    while (clock.now() < s.duration) {
      await sendAdaptive(limiter, () => send("https://api.example.com/"));
    }
  };
  const viaFetch = (i: number) => {
    const told = s.adaptive?.maxRate;
    const { maxRate: _, ...knobs } = s.adaptive ?? {};
    const rates = new AdaptiveRates({ ...knobs, clock, wallClock: () => clock.now(), ...(i === 0 && { onChange: (c: RateChange) => changes.push(c) }) });
    ratesOf[i] = rates;
    const api = createThrottledFetch({
      adaptive: rates,
      ...(told !== undefined && told !== Infinity && { limit: told, interval: 1000 }),
      fetch: counted(i),
      clock,
      wallClock: () => clock.now(),
    });
    return Array.from({ length: s.callers }, async () => {
      await startOf(i);
      while (clock.now() < s.duration) await (await api("https://api.example.com/")).arrayBuffer();
    });
  };
  const running = s.viaFetch
    ? Promise.all(limiters.flatMap((_, i) => viaFetch(i)))
    : Promise.all(limiters.flatMap((l, i) => Array.from({ length: s.callers }, () => caller(l, i))));
  await clock.runAll(Infinity);
  await running;
  // Through a fetch, each client's learned rate lives in its AdaptiveRates (the key is the origin).
  ratesOf.forEach((rates, i) => (limiters[i] = rates.get("https://api.example.com")));
  const arrivals = fetch.stats.arrivals.filter((a) => a.at < s.duration);
  const refused = (a: { status: number }) => a.status === 429 || a.status === 503;
  const half = arrivals.filter((a) => a.at >= s.duration / 2);
  const from = s.from ?? 10_000;
  const ok = arrivals.filter((a) => !refused(a));
  const utilisation = ok.filter((a) => a.at >= from).length / ((s.realRate * (s.duration - from)) / 1000);
  const perSecond = new Array<number>(Math.ceil(s.duration / 1000)).fill(0);
  for (const a of ok) perSecond[Math.floor(a.at / 1000)]!++;
  let convergedAt = Infinity;
  for (let t = perSecond.length - 5; t >= 0; t--) {
    const sum = perSecond.slice(t, t + 5).reduce((x, y) => x + y, 0);
    if (sum < 0.9 * 5 * s.realRate) break;
    convergedAt = t;
  }
  let reached90At = Infinity;
  for (let t = 0; t + 5 <= perSecond.length; t++) {
    if (perSecond.slice(t, t + 5).reduce((x, y) => x + y, 0) >= 0.9 * 5 * s.realRate) {
      reached90At = t;
      break;
    }
  }
  return {
    reached90At,
    requests: arrivals.length,
    throttled: arrivals.filter(refused).length,
    share429: arrivals.filter(refused).length / arrivals.length,
    steady429: half.filter(refused).length / Math.max(1, half.length),
    utilisation,
    convergedAt,
    changes,
    limiters,
    perClient: accepted,
    fairness: jain(accepted),
    acceptedRate: (a, b) => (ok.filter((x) => x.at >= a && x.at < b).length * 1000) / (b - a),
    share429In: (a, b) => {
      const inside = arrivals.filter((x) => x.at >= a && x.at < b);
      return inside.filter(refused).length / Math.max(1, inside.length);
    },
  };
}

/** One line of figures, for the report. */
export function describe(r: SimResult): string {
  return `requests ${r.requests}, 429 ${(100 * r.share429).toFixed(1)} % (steady ${(100 * r.steady429).toFixed(1)} %), ` +
    `utilisation ${(100 * r.utilisation).toFixed(0)} %, 90 % of the rate reached at ${r.reached90At} s, held from ${r.convergedAt} s`;
}

/** Jain's fairness index: (Σx)² / (n·Σx²); 1 when all are equal, 1/n when one takes all. */
export function jain(xs: readonly number[]): number {
  const sum = xs.reduce((a, b) => a + b, 0);
  const squares = xs.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? 1 : (sum * sum) / (xs.length * squares);
}
