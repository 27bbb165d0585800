/**
 * An LLM profile keeps budgets per model; a model at rest is forgotten once its combination was
 * evicted, so distinct model names (a fine-tuned model per job) cannot grow memory without bound
 * (they kept about 8 KB each for good) — and forgetting never lets more through.
 */
import { expect, test } from "vitest";
import { ManualClock } from "../../src/index.ts";
import { ModelBudgets } from "../../src/vendors/model-budgets.ts";

test("models at rest are forgotten as new ones come: rounds of 1,000 new model names keep at most about twice a round's (they kept them all)", async () => {
  for (const maxConcurrent of [undefined, 2]) {
    const clock = new ManualClock();
    const budgets = new ModelBudgets(() => ({ requests: 5, tokens: 1000 }), clock, maxConcurrent);
    let next = 0;
    const most: number[] = [];
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 1000; i++) {
        const reservation = await budgets.keyed.get(`ft:job${next++}`).reserve!({ requests: 1, tokens: 100, ...budgets.slot });
        reservation.settle({ requests: 1, tokens: 10, ...budgets.slot });
        await clock.advance(100);
      }
      most.push(budgets.models);
      await clock.advance(3_600_000); // an hour with no use
    }
    expect(Math.max(...most), `maxConcurrent ${maxConcurrent}: ${most.join(", ")}`).toBeLessThanOrEqual(2 * 1000 + 64);
  }
});

test("a model whose window still counts grants is kept, so a model made again never doubles its budget", async () => {
  const clock = new ManualClock();
  const budgets = new ModelBudgets(() => ({ requests: 2, tokens: 1000 }), clock);
  const busy = budgets.keyed.get("busy");
  (await busy.reserve!({ requests: 1, tokens: 10 })).settle({ requests: 1, tokens: 10 });
  (await busy.reserve!({ requests: 1, tokens: 10 })).settle({ requests: 1, tokens: 10 });
  budgets.keyed.prune();
  for (let i = 0; i < 200; i++) await budgets.keyed.get(`other${i}`).reserve!({ requests: 1, tokens: 1 }); // sweeps run
  // The window of "busy" is full for this minute: a third request waits for it.
  let granted = false;
  void budgets.keyed.get("busy").reserve!({ requests: 1, tokens: 10 }).then(() => (granted = true));
  await clock.advance(59_000);
  expect(granted).toBe(false);
  await clock.advance(1000);
  expect(granted).toBe(true);
});

test("a combination the KeyedLimiter revives (a caller still held it) brings its model back: a limit the server reports reaches the budgets in use (review: 11 granted after learn(2))", async () => {
  const clock = new ManualClock();
  const budgets = new ModelBudgets(() => ({ requests: 100, tokens: 100_000 }), clock);
  const held = budgets.keyed.get("ft:a");
  (await held.reserve!({ requests: 1, tokens: 10 })).settle({ requests: 1, tokens: 10 });
  await clock.advance(3_600_000);
  for (let i = 0; i < 70; i++) (await budgets.keyed.get(`ft:other${i}`).reserve!({ requests: 1, tokens: 1 })).settle({ requests: 1, tokens: 1 });
  const again = budgets.keyed.get("ft:a");
  expect(again).toBe(held); // revived, not made anew
  (await again.reserve!({ requests: 1, tokens: 1 })).settle({ requests: 1, tokens: 1 });
  budgets.learn("ft:a", "requests", 2);
  let granted = 1;
  for (let i = 0; i < 10; i++) void budgets.keyed.get("ft:a").reserve!({ requests: 1, tokens: 1 }).then((r) => { granted++; r.settle({ requests: 1, tokens: 1 }); });
  await clock.advance(0);
  expect(granted).toBe(2);
});
