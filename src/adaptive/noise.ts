/**
 * Refusals that come alone, at any rate: telling a server that refuses a request now and then (1 %
 * of bare 429s against no limit at all) from one whose limit the client overstepped.
 *
 * Each such 429 used to cut the rate, and a cut at or below the rate believed to work lowers that
 * belief: the rate was dragged down for good (an outside red team, 2026-11-27: 400/s of demand held
 * at 1–2/s within minutes). Ignoring every refusal that comes alone would cost each overstepped limit
 * more refusals (an nginx `limit_req` answers a small overshoot with one 429 in tens of requests), so
 * the controller cuts on them until they show what they are: cut after cut on refusals that stayed
 * alone, each below where the first came, down to {@link DRAGGED} of it. A limit the client
 * overstepped is found again near the same rate, and a window used up refuses in runs; refusals at
 * any rate drag the rate down. From then on a lone refusal that names no delay is noise: no cut, and
 * no increase until the answers after it clear it; a second one among them cuts. (The controller then
 * searches up from where the drag left the rate, 10 % a step.)
 *
 * @module
 */
import type { SendTag } from "./types.ts";

/** A refusal with no other among this many answers before it (and, to count as noise, after it) is alone. */
export const LONE_ANSWERS = 20;
/** Cuts on refusals that stayed alone, each below where the first came, it takes to call them noise... */
const DRAGGED_CUTS = 3;
/** ...when the last took the rate below this share of where the first came. */
const DRAGGED = 0.8;

/**
 * The refusals of one adaptive key, counted in answers (accepted or refused; a server error is
 * neither).
 *
 * @example
 * ```ts
 * const lone = new LoneRefusals();
 * lone.answer(false);
 * lone.answer(true); // true: no other refusal among the 20 answers before it
 * lone.found();      // undefined: no noise shown yet
 * lone.noisy;        // false until cuts on lone refusals dragged the rate down
 * ```
 */
export class LoneRefusals {
  #answers = 0;
  #refusedAt = -Infinity;
  #noisy = false;
  /** The refusal let pass as noise, and the answer count at it: it holds increases until cleared. */
  #passed: SendTag | undefined = undefined;
  #passedAt = -Infinity;
  /** A cut on a lone refusal, at this rate and answer count, waiting for the answers after it (0: none). */
  #cutRate = 0;
  #cutAt = 0;
  /** The cuts on refusals that stayed alone since the rate was last higher, and where they began. */
  #draggedFrom = 0;
  #draggedCuts = 0;
  /** The rate where the cuts on noise began, until `found()` takes it. */
  #found: number | undefined = undefined;

  /** True once refusals were seen to come alone at any rate: from then on a lone one is noise. */
  get noisy(): boolean {
    return this.#noisy;
  }

  /**
   * Counts an answer. Returns whether it is a refusal with no other among the
   * {@link LONE_ANSWERS} answers before it. When this answer showed the refusals to be noise,
   * {@link LoneRefusals.found} says so once.
   */
  answer(refused: boolean): boolean {
    this.#answers++;
    if (this.#cutRate > 0) this.#afterCut(refused);
    const lone = refused && this.#answers - this.#refusedAt > LONE_ANSWERS;
    if (refused) this.#refusedAt = this.#answers;
    return lone;
  }

  /**
   * Once, right after the answer that showed the refusals to be noise: the rate where the cuts on
   * them began (the rate to climb back to at least). Otherwise undefined.
   */
  found(): number | undefined {
    const rate = this.#found;
    this.#found = undefined;
    return rate;
  }

  /** Lets the lone refusal of the request tagged `tag` (just counted) pass as noise. */
  pass(tag: SendTag): void {
    this.#passed = tag;
    this.#passedAt = this.#answers;
  }

  /** Whether a refusal let pass is not yet cleared by the answers after it: no increase meanwhile. */
  get holding(): boolean {
    return this.#answers - this.#passedAt <= LONE_ANSWERS;
  }

  /**
   * The refusal let pass that the one just counted confirms (it came within {@link LONE_ANSWERS}
   * answers, in the same overload epoch), or undefined: a cut is measured from its send.
   */
  confirmed(epoch: number): SendTag | undefined {
    return this.holding && this.#passed?.epoch === epoch ? this.#passed : undefined;
  }

  /**
   * Records a cut at `rate`; `lone` when on a lone refusal that might be noise (the answers after it
   * tell). Any other cut ends the sequence of cuts on lone refusals.
   */
  cut(rate: number, lone: boolean): void {
    if (this.#noisy) return;
    if (!lone) {
      this.#cutRate = 0;
      this.#draggedCuts = 0;
      return;
    }
    this.#cutRate = rate;
    this.#cutAt = this.#answers;
  }

  #afterCut(refused: boolean): void {
    if (refused) {
      // Not alone: a limit overstepped, a window used up.
      this.#cutRate = 0;
      this.#draggedCuts = 0;
      return;
    }
    if (this.#answers - this.#cutAt < LONE_ANSWERS) return;
    // The answers after the cut's refusal came, none refused: it stayed alone.
    const rate = this.#cutRate;
    this.#cutRate = 0;
    if (this.#draggedCuts === 0 || rate >= this.#draggedFrom) {
      this.#draggedFrom = rate;
      this.#draggedCuts = 1;
      return;
    }
    if (++this.#draggedCuts < DRAGGED_CUTS || rate > DRAGGED * this.#draggedFrom) return;
    this.#noisy = true;
    this.#found = this.#draggedFrom;
  }
}
