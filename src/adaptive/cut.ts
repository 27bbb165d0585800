/**
 * How deep a cut goes and which phase follows it: a pure decision over the controller's state at
 * a throttle (the controller applies it). See the controller's module note for the phases.
 *
 * @module
 */
import { CUT_TRUST, cutFactor } from "./curve.ts";

/** Where the controller is: ramping with nothing known, stepping toward a rough estimate, or on the cubic curve. */
export type Phase = "start" | "search" | "curve";

/** A cut below this share of `decrease` × the rate at the cut went too deep: search back up. */
const DEEP_CUT = 0.8;

/** The controller's state at a throttle that cuts. */
export interface CutInput {
  readonly phase: Phase;
  /** The rate at the cut, requests per second. */
  readonly rate: number;
  /** What the server accepted just before the throttled send (see `SendLog.measured`), capped by a known window's measure. */
  readonly measured: number;
  /** The last rate known to work (the curve's W), if any. */
  readonly known: number | undefined;
  /** The rate was last raised by a search step (the limit lies one step below). */
  readonly afterSearchStep: boolean;
  /** Where the search in force started (a search's cut never goes below it). */
  readonly searchFrom: number;
  /** The `decrease` option. */
  readonly decrease: number;
  /** The lowest rate a cut goes to. */
  readonly floor: number;
  /** The first cut of a told limit, at the told rate: no measure of the server (its shape may be wrong, not its rate). */
  readonly firstOfTold: boolean;
  /** The rate had stayed within 5 % of where it stood for two probe steps before the throttle. */
  readonly held: boolean;
}

/** What a cut does: the new rate, the phase after it, and where the cubic curve starts. */
export interface CutPlan {
  readonly rate: number;
  readonly phase: Phase;
  /** The curve's known rate W after the cut. */
  readonly known: number;
  /** The curve starts at its plateau (t = K: already at W, only slow probing past it). */
  readonly plateau: boolean;
  /** A search that begins here: up to `cap`, never below `from`. */
  readonly search?: { readonly cap: number; readonly from: number };
}

/**
 * The cut for a throttle of the current epoch.
 *
 * @example
 * ```ts
 * planCut({ phase: "start", rate: 32, measured: 20, known: undefined, afterSearchStep: false, searchFrom: 0, decrease: 0.9, floor: 1 / 60, firstOfTold: false, held: false });
 * // { rate: 18, phase: "search", known: 20, plateau: false, search: { cap: Infinity, from: 0 } }
 * ```
 */
export function planCut(s: CutInput): CutPlan {
  const { rate, measured, decrease } = s;
  // Trusted down to `share` of the rate at the cut, never further in one cut: a window's measure
  // trusted all the way down cut a sliding log's rate to the floor for half an hour (an outside
  // red team, 2026-11-27: a reset there frees one slot, and one accepted per window was "the
  // server's own count").
  const trusted = (share: number) => Math.min(rate, Math.max(rate * share, measured));
  const floor = (r: number) => Math.max(s.floor, r);
  if (s.phase === "start") {
    // Slow start may be far past the server's rate (it doubled while the answers were on their
    // way): what the server accepted says how far — but never below half (the rate before the
    // last doubling worked), as successes are counted as they arrive and lag. Then search up.
    const base = trusted(0.5);
    return { rate: floor(base * decrease), phase: "search", known: base, plateau: false, search: { cap: Infinity, from: 0 } };
  }
  const base = trusted(CUT_TRUST);
  if (s.phase === "search" && s.afterSearchStep) {
    // One search step past a rate that held for a whole step: the limit lies near. What the
    // server accepted says where (a burst it allows may have hidden more than one step).
    const next = floor(base * cutFactor(decrease, Math.max(measured, base), rate));
    // Never below where the search started (that rate held a step): its plateau from there —
    // even when a cut since left the rate below it. (Held to the rate at the cut instead, as a
    // property test's sequence suggested on 2026-11-27, a server's burst hid the limit: told
    // 2× too much, nginx without burst took 44–47 s, not 3–4, to reach 90 % of its rate.)
    if (next < s.searchFrom) return { rate: s.searchFrom, phase: "curve", known: s.searchFrom, plateau: true };
    return { rate: next, phase: "curve", known: base, plateau: false };
  }
  if (s.phase === "search") {
    // Still too high right after slow start's cut: sized by what the server accepted, then
    // search up from there.
    return { rate: floor(base * decrease), phase: "search", known: base, plateau: false };
  }
  // Later a probe oversteps by a few per cent, so the rate at the cut is the better measure —
  // unless the server now accepts much less (its limit dropped).
  const next = floor(base * cutFactor(decrease, measured, rate));
  if (s.known === undefined || rate > s.known * 1.001) return { rate: next, phase: "curve", known: base, plateau: false };
  // Overloaded at or below the rate believed to work: that belief was wrong (the limit dropped,
  // or a server's burst hid an earlier overshoot). Climbing back to it would overload again, so
  // the new rate becomes the known one, reached already (the curve's plateau), and only slow
  // probing goes past it. (Searching again from below was tried: with a server's burst hiding
  // each step it loops, overshooting every few seconds.)
  // A cut measured far below a rate that had held for a while (a pause in the span, a window's
  // phase) would leave the plateau there for good: search back up, 10 % a step, to `decrease`
  // × that rate — no further (a server whose burst hides each step would make an open search
  // loop). A rate that had not held (a told limit at its first throttle) is no such guide; and the
  // first cut of a told limit is no measure of the server either: the told rate may be right and
  // only its shape wrong (a window's burst against a `limit_req`).
  const cap = rate * decrease;
  if (next < cap && (s.firstOfTold || (next < DEEP_CUT * cap && s.held))) {
    return { rate: next, phase: "search", known: next, plateau: true, search: { cap, from: next } };
  }
  return { rate: next, phase: "curve", known: next, plateau: true };
}
