/**
 * `LoneRefusals`: which refusals come alone, and when cuts on them show the server refuses at any
 * rate (noise). Examples, then a property against a model that rereads the whole history at every
 * step (the module keeps only counters).
 */
import { describe, expect, test } from "vitest";
import fc from "fast-check";
import { LONE_ANSWERS, LoneRefusals } from "../../src/adaptive/noise.ts";
import type { SendTag } from "../../src/adaptive/types.ts";
import { Reach } from "../reach.ts";

const tag = (epoch: number, seq = 0): SendTag => ({ epoch, gen: 0, at: 0, seq });
/** `n` accepted answers, none of which finds noise. */
const accept = (l: LoneRefusals, n: number) => {
  for (let i = 0; i < n; i++) {
    l.answer(false);
    expect(l.found()).toBeUndefined();
  }
};
/** `n` accepted answers; returns the rate to climb back to when one found noise. */
const acceptAll = (l: LoneRefusals, n: number) => {
  let recover: number | undefined;
  for (let i = 0; i < n; i++) {
    l.answer(false);
    recover ??= l.found();
  }
  return recover;
};

describe("LoneRefusals", () => {
  test("a refusal is lone when none other came among the 20 answers before it", () => {
    const l = new LoneRefusals();
    expect(l.answer(true)).toBe(true); // the first ever
    accept(l, LONE_ANSWERS - 1);
    expect(l.answer(true)).toBe(false); // the previous one is the 20th answer back
    accept(l, LONE_ANSWERS);
    expect(l.answer(true)).toBe(true);
    expect(l.answer(false)).toBe(false); // an accepted answer is no refusal
  });

  test("three cuts on refusals that stayed alone, each below the first and the last below 0.8 of it: noise, and the rate to climb back to", () => {
    const l = new LoneRefusals();
    for (const rate of [20, 18, 17]) {
      accept(l, LONE_ANSWERS);
      expect(l.answer(true)).toBe(true);
      l.cut(rate, true);
    }
    // 17 > 0.8 × 20: not dragged far enough yet.
    accept(l, LONE_ANSWERS);
    expect(l.noisy).toBe(false);
    expect(l.answer(true)).toBe(true);
    l.cut(16, true); // 16 ≤ 0.8 × 20: the fourth, seen alone once the 20 answers after it came
    accept(l, LONE_ANSWERS - 1);
    expect(l.noisy).toBe(false);
    l.answer(false);
    expect(l.found()).toBe(20);
    expect(l.found()).toBeUndefined(); // once
    expect(l.noisy).toBe(true);
    // Once noisy, cuts are no longer watched.
    accept(l, LONE_ANSWERS);
    l.answer(true);
    l.cut(5, true);
    accept(l, 2 * LONE_ANSWERS);
    expect(l.noisy).toBe(true);
  });

  test("a sequence ends at a refusal among the answers after a cut, at any other cut, and starts again at a cut no lower than its first", () => {
    const company = new LoneRefusals();
    const other = new LoneRefusals();
    const higher = new LoneRefusals();
    for (const [l, rates] of [[company, [20, 18, 17, 16]], [other, [20, 18, 17, 16]], [higher, [20, 18, 21, 16, 15]]] as const) {
      let recover: number | undefined;
      for (const [i, rate] of rates.entries()) {
        recover ??= acceptAll(l, LONE_ANSWERS + 1);
        expect(l.answer(true)).toBe(true);
        l.cut(rate, true);
        if (l === company && i === 1) {
          acceptAll(l, 5);
          l.answer(true); // company for the cut at 18: a limit overstepped
        }
        if (l === other && i === 1) {
          acceptAll(l, 5);
          l.answer(true);
          l.cut(18, false); // a cut on a refusal that was not lone
        }
      }
      recover ??= acceptAll(l, LONE_ANSWERS + 1);
      // company / other: 17 and 16 begin again from 17; higher: 21 begins again, and 16, 15 follow it.
      expect(l.noisy).toBe(l === higher);
      expect(recover).toBe(l === higher ? 21 : undefined);
    }
  });

  test("a refusal let pass holds increases for 20 answers, and one confirming it is measured from it, in the same epoch only", () => {
    const l = new LoneRefusals();
    accept(l, 30);
    l.answer(true);
    const first = tag(3, 30);
    l.pass(first);
    expect(l.holding).toBe(true);
    accept(l, 5);
    l.answer(true);
    expect(l.confirmed(3)).toBe(first);
    expect(l.confirmed(4)).toBeUndefined();
    accept(l, LONE_ANSWERS);
    expect(l.holding).toBe(false);
    expect(l.confirmed(3)).toBeUndefined();
  });
});

test("property: lone refusals and the noise verdict match a model that rereads the whole history", () => {
  const reach = new Reach("lone refusals");
  fc.assert(
    fc.property(
      fc.array(
        fc.record({
          accepted: fc.oneof({ weight: 1, arbitrary: fc.integer({ min: 0, max: 5 }) }, { weight: 5, arbitrary: fc.integer({ min: 16, max: 40 }) }),
          cut: fc.constantFrom("none", "cut", "cut", "cut", "cut", "cut", "cut-not-noise"),
          // The rate moves as cuts and climbs would move it: mostly down a little, sometimes up.
          factor: fc.oneof({ weight: 6, arbitrary: fc.double({ min: 0.85, max: 1, noNaN: true }) }, { weight: 1, arbitrary: fc.double({ min: 1, max: 1.3, noNaN: true }) }),
        }),
        { minLength: 5, maxLength: 60 },
      ),
      (events) => {
        reach.run();
        const l = new LoneRefusals();
        const refusedAt: number[] = []; // answer numbers (1-based) of the refusals
        const cuts: { at: number; rate: number; lone: boolean }[] = [];
        let answers = 0;
        let rate = 20;
        // The model: reread everything. A cut on a lone refusal settles alone once 20 answers
        // followed it with no refusal; a refusal among them, or any other cut, ends the sequence.
        const model = () => {
          let from = 0;
          let count = 0;
          for (const c of cuts) {
            if (!c.lone) {
              count = 0;
              continue;
            }
            const company = refusedAt.some((r) => r > c.at && r <= c.at + LONE_ANSWERS && r <= answers);
            if (company) {
              count = 0;
              continue;
            }
            if (answers < c.at + LONE_ANSWERS) return undefined; // still open
            if (count === 0 || c.rate >= from) {
              from = c.rate;
              count = 1;
            } else if (++count >= 3 && c.rate <= 0.8 * from) {
              return { from, settledAt: c.at + LONE_ANSWERS };
            }
          }
          return undefined;
        };
        let noisyFrom: number | undefined;
        const step = (refused: boolean) => {
          answers++;
          const lone = l.answer(refused);
          const recover = l.found();
          const modelLone = refused && !refusedAt.some((r) => r >= answers - LONE_ANSWERS);
          if (refused) refusedAt.push(answers);
          expect(lone).toBe(modelLone);
          if (noisyFrom !== undefined) return lone;
          const verdict = model();
          if (verdict !== undefined && verdict.settledAt === answers) {
            noisyFrom = verdict.from;
            reach.hit("noise found");
            expect(recover).toBe(verdict.from);
          } else {
            expect(recover).toBeUndefined();
          }
          expect(l.noisy).toBe(noisyFrom !== undefined);
          return lone;
        };
        for (const e of events) {
          for (let i = 0; i < e.accepted; i++) step(false);
          if (e.cut === "none") continue;
          const lone = step(true);
          reach.hit(lone ? "lone refusal" : "refusal with company");
          rate *= e.factor;
          const noise = lone && e.cut === "cut";
          if (noisyFrom === undefined) {
            cuts.push({ at: answers, rate, lone: noise });
            reach.hit(noise ? "cut on a lone refusal" : "other cut");
          }
          l.cut(rate, noise);
        }
        // Close the open cuts: a long run of acceptances settles them.
        for (let i = 0; i <= LONE_ANSWERS; i++) step(false);
        if (noisyFrom === undefined) {
          const seq = model();
          expect(seq).toBeUndefined();
        }
        const settled = cuts.filter((c) => c.lone && !refusedAt.some((r) => r > c.at && r <= c.at + LONE_ANSWERS));
        reach.hit("three alone in a row, not dragged far enough", noisyFrom === undefined && settled.length >= 3);
      },
    ),
    { numRuns: 1000 },
  );
  reach.atLeast({ "lone refusal": 3000, "refusal with company": 1500, "cut on a lone refusal": 2000, "other cut": 1500, "noise found": 120, "three alone in a row, not dragged far enough": 300 });
});
