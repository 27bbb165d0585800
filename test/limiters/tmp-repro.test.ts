import fc from "fast-check";
import { expect, test } from "vitest";
import { simulate } from "./reference-model.ts";
import { HORIZON, runReal, scenario } from "./scenarios.ts";

test("repro", async () => {
  const seeds = Number(process.env.SEEDS ?? 1);
  const failures: string[] = [];
  for (let k = 0; k < seeds; k++) {
    const seed = process.env.SEED !== undefined ? Number(process.env.SEED) : (Math.random() * 2 ** 31) | 0;
    const r = await fc.check(
      fc.asyncProperty(scenario, async (s) => {
        const real = await runReal(s);
        const expected = simulate(s.policies, s.queues, s.requests, HORIZON);
        expect(real).toEqual(expected);
      }),
      { numRuns: 300, seed },
    );
    if (r.failed) {
      failures.push(`seed ${seed} path ${r.counterexamplePath} ${JSON.stringify(r.counterexample)}`);
    }
  }
  console.log(`FAILURES ${failures.length}/${seeds}\n${failures.join("\n")}`);
}, 3_600_000);
