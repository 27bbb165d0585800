/**
 * A small seeded pseudo-random generator, so simulated latency, phases and response sizes are the
 * same on every run and every runtime. Marsaglia's xorshift32 (13, 17, 5) over a seed mixed with a
 * multiplicative hash: fast, 2³²−1 period, and good enough for test jitter — not for cryptography.
 *
 * @module
 */
import { describeValue } from "../validate.ts";

/**
 * A deterministic source of uniform numbers in [0, 1): the same seed gives the same sequence.
 *
 * @example
 * ```ts
 * import { SeededRandom } from "sluice/testing";
 * const random = new SeededRandom(42);
 * const latency = random.int(0, 50); // an integer in [0, 50], the same on every run
 * ```
 */
export class SeededRandom {
  #state: number;

  /**
   * A generator whose sequence is fixed by `seed`.
   * @param seed any safe integer, taken as its low 32 bits (so 2³² + 1 repeats seed 1, and −1 is
   *   2³² − 1): the 2³² seeds from 0 give distinct sequences, though seeds close to each other, or s
   *   and −s, can start with close first draws — draw a few numbers before relying on them being unrelated.
   */
  constructor(seed = 1) {
    if (!Number.isSafeInteger(seed)) throw new RangeError(`\`seed\` must be a safe integer, got ${describeValue(seed)}`);
    // xorshift has one fixed point (0); hashing the seed spreads nearby seeds and avoids it.
    const mixed = Math.imul((seed ^ (seed / 2 ** 32)) | 0, 0x9e3779b1) ^ 0x5bd1e995;
    this.#state = mixed === 0 ? 0x6d2b79f5 : mixed;
  }

  /** The next number in [0, 1). */
  next(): number {
    let x = this.#state;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#state = x;
    return (x >>> 0) / 2 ** 32;
  }

  /** An integer in [min, max], both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
}
