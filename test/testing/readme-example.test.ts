/**
 * The README's "Testing against a simulated API" example, run as written (with a stand-in batch
 * job), so the sentence "zero 429s … and with max_tokens 1000 the test shows the 429s" stays true.
 */
import { expect, test } from "vitest";
import { createThrottledFetch } from "../../src/index.ts";
import { createSimulatedFetch, ManualClock, OpenAISimulator } from "../../src/testing.ts";

/** The user's code under test: summarises documents with whatever fetch it is given. */
async function runBatch(documents: string[], { fetch, maxTokens }: { fetch: typeof globalThis.fetch; maxTokens: number }) {
  return Promise.all(documents.map(async (text) => {
    const response = await fetch("https://api.openai.com/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({ model: "gpt-4o-mini", max_tokens: maxTokens, messages: [{ role: "user", content: `Summarise: ${text}` }] }),
    });
    return response.status;
  }));
}

async function nightly(maxTokens: number) {
  const documents = Array.from({ length: 1000 }, (_, i) => `document ${i} `.repeat(20));
  const clock = new ManualClock();
  const openai = new OpenAISimulator({ models: { "gpt-4o-mini": { rpm: 500, tpm: 200_000 } } });
  const server = createSimulatedFetch({ server: openai, clock, latency: { min: 300, max: 3000 } });
  const api = createThrottledFetch({ limit: 500, interval: 60_000, fetch: server, clock });

  await clock.runUntil(runBatch(documents, { fetch: api, maxTokens }), 1_000_000);
  return { server, minutes: clock.now() / 60_000 };
}

test("README: the batch job at the documented RPM sees zero 429s from the simulated OpenAI", async () => {
  const { server, minutes } = await nightly(256);
  expect(server.stats.byStatus[429] ?? 0).toBe(0);
  expect(server.stats.maxInWindow(60_000)).toBeLessThanOrEqual(500);
  expect(minutes).toBeGreaterThan(1);
  expect(minutes).toBeLessThan(1.2);
});

test("README: with max_tokens 1000 the same job overruns the TPM limit, and the test shows it", async () => {
  const { server } = await nightly(1000);
  console.info(`max_tokens 1000: ${server.stats.byStatus[429]} 429s`);
  expect(server.stats.byStatus[429]).toBeGreaterThan(200);
});

test("README: every run is the same, retries included (the default jitter is seeded under a ManualClock)", async () => {
  // A job with 20 workers whose prompts overrun the TPM limit: refusals retried with backoff.
  const once = async () => {
    const clock = new ManualClock();
    const openai = new OpenAISimulator({ models: { "gpt-4o-mini": { rpm: 500, tpm: 200_000 } } });
    const server = createSimulatedFetch({ server: openai, clock, latency: { min: 300, max: 3000 } });
    const api = createThrottledFetch({ limit: 500, interval: 60_000, fetch: server, clock });
    let next = 0;
    const worker = async () => {
      while (next < 400) {
        const i = next++;
        const response = await api("https://api.openai.com/v1/chat/completions", {
          method: "POST",
          body: JSON.stringify({ model: "gpt-4o-mini", max_tokens: 1000, messages: [{ role: "user", content: `document ${i} `.repeat(20 + (i % 50)) }] }),
        });
        await response.text();
      }
    };
    await clock.runUntil(Promise.all(Array.from({ length: 20 }, worker)), 1_000_000);
    return { refused: server.stats.byStatus[429] ?? 0, trace: `${clock.now()}|${server.stats.arrivals.map((a) => `${a.at}:${a.status}`).join(",")}` };
  };
  const first = await once();
  const second = await once();
  expect(first.refused).toBeGreaterThan(0); // retries happened
  expect(second.trace).toBe(first.trace);
});

test("the seeded default jitter differs between the fetches of one clock (their retries spread, as full jitter intends), and is the same on every run", async () => {
  // Each fetch's generator, read through its backoff: three clients failing at once.
  const clock = new ManualClock();
  const retryAt: number[] = [];
  const clients = Array.from({ length: 3 }, () =>
    createThrottledFetch({ limit: 100, clock, fetch: async () => new Response("down", { status: 500 }), retry: { limit: 1 }, onRetry: ({ delay }) => void retryAt.push(delay) }));
  await clock.runUntil(Promise.all(clients.map((api) => api("https://x.example/"))));
  expect(new Set(retryAt).size).toBe(3);
  const again: number[] = [];
  const clock2 = new ManualClock();
  const clients2 = Array.from({ length: 3 }, () =>
    createThrottledFetch({ limit: 100, clock: clock2, fetch: async () => new Response("down", { status: 500 }), retry: { limit: 1 }, onRetry: ({ delay }) => void again.push(delay) }));
  await clock2.runUntil(Promise.all(clients2.map((api) => api("https://x.example/"))));
  expect(again).toEqual(retryAt);
});
