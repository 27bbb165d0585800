/**
 * Reach counts for property tests: a property whose assertion sits behind an `if` passes vacuously
 * when the generator rarely reaches it. Count each interesting branch while the property runs, then
 * assert it was reached a meaningful number of times — so a generator that drifts away from the
 * cases it was written for fails loudly. Seeds are never fixed: fast-check prints the seed of a
 * failing run. Each threshold sits at least five standard deviations below the count measured over
 * repeated runs (a binomial count: mean m, deviation about √m), so chance alone trips it less than
 * once in a million runs, while a generator that lost the branch fails at once.
 *
 * `SLUICE_REACH=1` prints every count (to measure them for the docs or a report).
 *
 * @example
 * ```ts
 * const reach = new Reach("never retries a stream");
 * fc.assert(fc.property(arb, (i) => {
 *   if (reach.hit("would retry if replayable", wouldRetry(i))) expect(decide(i).retry).toBe(false);
 * }));
 * reach.atLeast({ "would retry if replayable": 30 });
 * ```
 */
import { expect } from "vitest";

export class Reach {
  readonly #name: string;
  readonly #counts = new Map<string, number>();
  runs = 0;

  constructor(name: string) {
    this.#name = name;
  }

  /** Counts one run of the property (call once per generated case). */
  run(): void {
    this.runs++;
  }

  /** Counts `label` when `condition` holds, and returns `condition` (use it as the `if`'s test). */
  hit(label: string, condition = true): boolean {
    if (condition) this.#counts.set(label, (this.#counts.get(label) ?? 0) + 1);
    return condition;
  }

  count(label: string): number {
    return this.#counts.get(label) ?? 0;
  }

  /** Fails unless each label was reached at least its minimum number of times. */
  atLeast(minimums: Record<string, number>): void {
    const counts = Object.fromEntries(Object.keys(minimums).map((label) => [label, this.count(label)]));
    if ((globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env.SLUICE_REACH === "1") {
      console.info(`reach: ${this.#name}: ${Object.entries(counts).map(([l, n]) => `${l} ${n}`).join("; ")} ${this.runs > 0 ? ` (of ${this.runs} runs)` : ""}`);
    }
    for (const [label, min] of Object.entries(minimums)) {
      expect(counts[label], `${this.#name}: "${label}" reached ${counts[label]} times${this.runs > 0 ? ` in ${this.runs} runs` : ""}, fewer than ${min}`)
        .toBeGreaterThanOrEqual(min);
    }
  }
}
