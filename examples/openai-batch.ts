/**
 * 500 chat completions through `openai({ rpm, tpm })` against the simulated OpenAI API, in virtual
 * time (about a second of real time): no 429s, and the token budget used to the full — because each
 * reservation (prompt + max_tokens) is settled to the tokens the call really used.
 *
 *   node examples/openai-batch.ts
 *
 * In your project: `import { openai } from "sluice/vendors"`, give your own limits, and leave out
 * `clock` and `fetch` (the simulator's); everything else is as here:
 *
 *   const api = createThrottledFetch({ ...openai({ rpm: 500, tpm: 200_000 }) });
 *   const response = await api("https://api.openai.com/v1/chat/completions", { method: "POST", headers, body });
 *
 * Streamed calls settle from the final usage chunk as you read them: send
 * `stream_options: { include_usage: true }` (see examples/support/llm-batch.ts for the calls).
 */
import { BATCH_LIMITS, runBatch } from "./support/llm-batch.ts";

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
console.log(`500 chat completions, gpt-4o-mini at ${BATCH_LIMITS.openai.rpm} RPM / ${BATCH_LIMITS.openai.tpm} TPM, max_tokens 256, latency 200–2000 ms`);
for (const stream of [false, true]) {
  for (const settle of [true, false]) {
    const r = await runBatch({ vendor: "openai", stream, settle });
    const tokens = r.budgets.tokens!;
    console.log(
      `${stream ? "streamed" : "JSON    "} ${settle ? "settled from usage " : "reserved only      "}` +
        `ok ${r.ok}/${r.calls}  429s ${r.server429}  ${(r.durationMs / 60_000).toFixed(2)} min  TPM used ${pct(tokens.rateUsed)}`,
    );
  }
}
console.log("done: openai-batch");
