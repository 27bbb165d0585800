/**
 * A batch of chat calls through a vendor profile against a simulated OpenAI or Anthropic API, in
 * virtual time: what `examples/openai-batch.ts`, the tests and `bench/vendors.ts` measure.
 *
 * "Rate used" is what the run consumed of the most the server could have admitted during it: a
 * minute's worth at the start (the server's buckets start full) plus the refill over the run,
 * `limit × (1 + duration / 1 min)`. 100 % means the budget never sat unused.
 */
import { createThrottledFetch } from "../../src/index.ts";
import { AnthropicSimulator, createSimulatedFetch, ManualClock, OpenAISimulator, SeededRandom } from "../../src/testing.ts";
import { anthropic, openai } from "../../src/vendors.ts";
import { runVirtually } from "./virtual-run.ts";

export interface BatchOptions {
  readonly vendor: "openai" | "anthropic";
  /** Calls in the batch. @default 500 */
  readonly requests?: number;
  /** Stream the responses (SSE) instead of JSON. */
  readonly stream: boolean;
  /** Settle reservations from usage (the profile's default); false reserves prompt + max_tokens only. @default true */
  readonly settle?: boolean;
  /** `max_tokens` of every call; the simulators generate uniformly 1..min(max_tokens, 256). @default 256 */
  readonly maxTokens?: number;
  readonly seed?: number;
}

export interface BatchResult {
  readonly calls: number;
  /** Calls that ended 2xx. */
  readonly ok: number;
  /** 429s the server answered (retried ones included). */
  readonly server429: number;
  /** Virtual ms from the first call to the last body read. */
  readonly durationMs: number;
  /** Per token budget: tokens used (the servers' own count) and the share of the rate used. */
  readonly budgets: Readonly<Record<string, { readonly limit: number; readonly used: number; readonly rateUsed: number }>>;
}

/** OpenAI: RPM far from binding, TPM binding. Anthropic: output binding, input close to it. */
export const BATCH_LIMITS = {
  openai: { rpm: 1_000, tpm: 10_000 },
  anthropic: { rpm: 1_000, inputTpm: 10_000, outputTpm: 8_000 },
} as const;

export async function runBatch(options: BatchOptions): Promise<BatchResult> {
  const requests = options.requests ?? 500;
  const maxTokens = options.maxTokens ?? 256;
  const clock = new ManualClock();
  const random = new SeededRandom(options.seed ?? 1);
  const isOpenAI = options.vendor === "openai";
  const server = isOpenAI
    ? new OpenAISimulator({ defaultLimits: BATCH_LIMITS.openai, refundUnused: true, seed: options.seed ?? 1 })
    : new AnthropicSimulator({ limits: BATCH_LIMITS.anthropic, seed: options.seed ?? 1 });
  const simulated = createSimulatedFetch({ server, clock, latency: isOpenAI ? { min: 200, max: 2000 } : { min: 300, max: 3000 }, seed: options.seed ?? 1 });
  const profile = isOpenAI ? openai({ ...BATCH_LIMITS.openai, clock }) : anthropic({ ...BATCH_LIMITS.anthropic, clock });
  const api = createThrottledFetch({ ...profile, ...(options.settle === false ? { settle: undefined } : {}), fetch: simulated });

  const url = isOpenAI ? "https://api.openai.com/v1/chat/completions" : "https://api.anthropic.com/v1/messages";
  const used = { tokens: 0, input: 0, output: 0 };
  let ok = 0;
  let last = 0;
  const call = async (i: number): Promise<void> => {
    const content = `Summarise item #${i} in one line: ${"lorem ipsum dolor sit amet ".repeat(random.int(2, 16))}`;
    const body = isOpenAI
      ? { model: "gpt-4o-mini", max_tokens: maxTokens, messages: [{ role: "user", content }], ...(options.stream ? { stream: true, stream_options: { include_usage: true } } : {}) }
      : { model: "claude-sonnet-4-5", max_tokens: maxTokens, messages: [{ role: "user", content }], ...(options.stream ? { stream: true } : {}) };
    const response = await api(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const text = await response.text();
    last = Math.max(last, clock.now());
    if (response.status < 200 || response.status > 299) return;
    ok++;
    const numbers = (name: string) => [...text.matchAll(new RegExp(`"${name}":(\\d+)`, "g"))].map((m) => Number(m[1]));
    if (isOpenAI) used.tokens += numbers("total_tokens").at(-1) ?? 0;
    else {
      used.input += numbers("input_tokens").at(0) ?? 0;
      used.output += numbers("output_tokens").at(-1) ?? 0;
    }
  };
  await runVirtually(clock, Promise.all(Array.from({ length: requests }, (_, i) => call(i))));

  const minutes = 1 + last / 60_000;
  const budget = (limit: number, tokens: number) => ({ limit, used: tokens, rateUsed: tokens / (limit * minutes) });
  return {
    calls: requests,
    ok,
    server429: simulated.stats.byStatus[429] ?? 0,
    durationMs: last,
    budgets: isOpenAI
      ? { tokens: budget(BATCH_LIMITS.openai.tpm, used.tokens) }
      : { input: budget(BATCH_LIMITS.anthropic.inputTpm, used.input), output: budget(BATCH_LIMITS.anthropic.outputTpm, used.output) },
  };
}
