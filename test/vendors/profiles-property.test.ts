/**
 * The central claim of the LLM profiles, as a property: whatever the prompts, `max_tokens`, `n`,
 * completion lengths, streaming and latency, a batch through `openai()` at the server's own limits
 * draws no 429 from the simulated OpenAI (which charges up front and refunds on delivery) — a call
 * whose reservation cannot fit the TPM budget at all is refused locally, before anything is sent.
 * Every call sets `max_tokens`: then the reservation bounds what the call can use. (Without it the
 * reservation is the prompt alone, as OpenAI's own up-front count, and the output settles as debt
 * once read; the server counts it on delivery, a moment before the client reads it — a call sent in
 * between can meet a 429, found by this property before the README said so.)
 * A call whose prompt + output passes the TPM while its up-front count (the larger of the two) fits
 * is reserved at the whole TPM rather than refused (the server accepts it); its usage can then pass a
 * minute's budget, which the server counts on delivery — the call after it can meet a 429 (one per
 * such call at most, retried after the server's delay). The property holds without such calls.
 * Runs through the fetch's `cost`/`settle` options.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { createThrottledFetch } from "../../src/index.ts";
import { createSimulatedFetch, ManualClock, OpenAISimulator } from "../../src/testing.ts";
import { estimateOpenAIRequest, openai } from "../../src/vendors.ts";
import { runVirtually } from "../../examples/support/virtual-run.ts";
import { Reach } from "../reach.ts";

const callArb = fc.record({
  chars: fc.integer({ min: 0, max: 3000 }),
  maxTokens: fc.integer({ min: 1, max: 600 }),
  n: fc.integer({ min: 1, max: 3 }),
  stream: fc.boolean(),
});
const caseArb = fc.record({
  rpm: fc.integer({ min: 3, max: 60 }),
  tpm: fc.integer({ min: 800, max: 6000 }),
  calls: fc.array(callArb, { minLength: 1, maxLength: 30 }),
  latency: fc.integer({ min: 0, max: 3000 }),
  seed: fc.integer({ min: 1, max: 1_000_000 }),
});

describe("openai() against the simulated OpenAI", () => {
  test("no 429 at the server's own limits; an oversized call is refused before it is sent", async () => {
    const reach = new Reach("openai() never draws a 429");
    await fc.assert(fc.asyncProperty(caseArb, async ({ rpm, tpm, calls, latency, seed }) => {
      reach.run();
      const clock = new ManualClock();
      const server = new OpenAISimulator({ defaultLimits: { rpm, tpm }, refundUnused: true, seed });
      const simulated = createSimulatedFetch({ server, clock, latency: { min: 0, max: latency }, seed });
      const api = createThrottledFetch({ ...openai({ rpm, tpm, clock }), fetch: simulated });
      const outcomes = await runVirtually(clock, Promise.all(calls.map(async (c, i) => {
        const body = {
          model: "m", n: c.n, messages: [{ role: "user", content: `#${i} ${"x".repeat(c.chars)}` }],
          max_tokens: c.maxTokens,
          ...(c.stream ? { stream: true, stream_options: { include_usage: true } } : {}),
        };
        try {
          const r = await api("https://api.openai.com/v1/chat/completions", { method: "POST", body: JSON.stringify(body) });
          await r.text();
          return r.status;
        } catch (error) {
          expect(error).toBeInstanceOf(RangeError); // the reservation can never fit the budget
          return "refused locally";
        }
      })));
      const reserved = calls.map((c, i) => estimateOpenAIRequest(JSON.stringify({
        model: "m", n: c.n, messages: [{ role: "user", content: `#${i} ${"x".repeat(c.chars)}` }], max_tokens: c.maxTokens,
      }))!);
      const wholeMinute = reserved.filter((e) => e.tokens > tpm && Math.max(e.inputTokens, e.outputTokens * e.choices) <= tpm).length;
      reach.hit("a call reserved the whole minute", wholeMinute > 0);
      expect(simulated.stats.byStatus[429] ?? 0).toBeLessThanOrEqual(wholeMinute);
      reach.hit("a budget made calls wait", clock.now() > latency + 1);
      reach.hit("a call was refused locally", outcomes.includes("refused locally"));
      reach.hit("a streamed call settled", calls.some((c, i) => c.stream && outcomes[i] === 200));
    }), { numRuns: 200 });
    reach.atLeast({ "a budget made calls wait": 50, "a call was refused locally": 20, "a streamed call settled": 130, "a call reserved the whole minute": 10 });
  }, 120_000);
});
