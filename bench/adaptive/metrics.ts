/**
 * Figures of one client's run, from the answers it got: the server-side refusal share, the share of
 * the server's rate it used, and when it reached (and held) 90 % of that rate.
 *
 * @module
 */
import type { Answer } from "./drivers.ts";

export interface Figures {
  readonly requests: number;
  readonly refused: number;
  /** Refused / requests over the run. */
  readonly refusedShare: number;
  /** Refused / requests over the second half (steady state). */
  readonly steadyRefusedShare: number;
  /** Accepted per second from `from` on / the server's rate. */
  readonly utilisation: number;
  /** The first second whose 5-s window holds ≥ 90 % of the rate (Infinity if never). */
  readonly reached90At: number;
  /** The first second from which every 5-s window holds ≥ 90 % of the rate (Infinity if never). */
  readonly convergedAt: number;
  /** Accepted per second, second by second (for the chart). */
  readonly perSecond: readonly number[];
}

const refused = (a: Answer) => a.status === 429 || a.status === 503;

export function figures(answers: readonly Answer[], rate: number, durationMs: number, from = 10_000): Figures {
  const inRun = answers.filter((a) => a.at < durationMs);
  const half = inRun.filter((a) => a.at >= durationMs / 2);
  const ok = inRun.filter((a) => !refused(a));
  const perSecond = new Array<number>(Math.ceil(durationMs / 1000)).fill(0);
  for (const a of ok) perSecond[Math.floor(a.at / 1000)]!++;
  const window5 = (t: number) => perSecond.slice(t, t + 5).reduce((x, y) => x + y, 0);
  let reached90At = Infinity;
  for (let t = 0; t + 5 <= perSecond.length; t++) {
    if (window5(t) >= 0.9 * 5 * rate) {
      reached90At = t;
      break;
    }
  }
  let convergedAt = Infinity;
  for (let t = perSecond.length - 5; t >= 0; t--) {
    if (window5(t) < 0.9 * 5 * rate) break;
    convergedAt = t;
  }
  const refusedCount = inRun.filter(refused).length;
  return {
    requests: inRun.length,
    refused: refusedCount,
    refusedShare: refusedCount / Math.max(1, inRun.length),
    steadyRefusedShare: half.filter(refused).length / Math.max(1, half.length),
    utilisation: ok.filter((a) => a.at >= from).length / ((rate * (durationMs - from)) / 1000),
    reached90At,
    convergedAt,
    perSecond,
  };
}

/** Jain's fairness index of per-client throughputs: 1 when all are equal, 1/n when one takes all. */
export function jain(values: readonly number[]): number {
  const sum = values.reduce((a, b) => a + b, 0);
  const squares = values.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? 1 : (sum * sum) / (values.length * squares);
}
