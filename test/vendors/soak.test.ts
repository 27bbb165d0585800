/**
 * Soak of the LLM vendor profiles in virtual time, against the simulated vendors of
 * `sluice/testing`: calls to two models, JSON and streamed, with the profile's `maxConcurrent`,
 * random caller aborts, and bodies read, cancelled or never read. Afterwards every call has
 * settled, no model is left with calls queued or in flight, and no timer is left.
 *
 * It found that an unread stream held its model's slot for good (2026-11-24): one forgotten
 * response stalled every later call of that model.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createThrottledFetch, type KeyedLimiter } from "../../src/index.ts";
import { AnthropicSimulator, createSimulatedFetch, ManualClock, OpenAISimulator } from "../../src/testing.ts";
import { anthropic, openai } from "../../src/vendors.ts";
import { captureUnhandled, drainSoak, seededRandom } from "../helpers.ts";
import { Reach } from "../reach.ts";

const unhandled = captureUnhandled({ beforeAll, afterAll });
const reach = new Reach("vendor soak");

const VENDORS = {
  openai: {
    url: "https://api.openai.com/v1/chat/completions",
    models: ["gpt-4o-mini", "gpt-4o"],
    make: (clock: ManualClock, seed: number) => ({
      server: new OpenAISimulator({ defaultLimits: { rpm: 60, tpm: 20_000 }, seed }),
      profile: openai({ rpm: 60, tpm: 20_000, clock, maxConcurrent: 4 }),
    }),
    streamed: { stream: true, stream_options: { include_usage: true } },
  },
  anthropic: {
    url: "https://api.anthropic.com/v1/messages",
    models: ["claude-3-5-haiku-latest", "claude-sonnet-4-5"],
    make: (clock: ManualClock, seed: number) => ({
      server: new AnthropicSimulator({ seed }),
      profile: anthropic({ rpm: 50, inputTpm: 30_000, outputTpm: 8_000, clock, maxConcurrent: 4 }),
    }),
    streamed: { stream: true },
  },
} as const;

async function soak(vendor: keyof typeof VENDORS, seed: number): Promise<void> {
  const v = VENDORS[vendor];
  const r = seededRandom(seed * 13 + vendor.length);
  const clock = new ManualClock();
  const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimeout(resolve, ms));
  const { server, profile } = v.make(clock, seed);
  const simulated = createSimulatedFetch({ server, clock, latency: { min: 100, max: 2000 }, seed });
  const api = createThrottledFetch({ ...profile, fetch: simulated, timeout: 5000 });
  let settled = 0;
  const calls = Array.from({ length: 150 }, async () => {
    await sleep(r() * 60_000);
    const controller = new AbortController();
    if (r() < 0.2) clock.setTimeout(() => controller.abort(new Error("abort")), r() * 5000);
    const streamed = reach.hit("streamed", r() < 0.4);
    const model = v.models[Math.floor(r() * v.models.length)]!;
    const body = { model, max_tokens: 200, messages: [{ role: "user", content: "hello ".repeat(1 + Math.floor(r() * 50)) }], ...(streamed && v.streamed) };
    const reading = r();
    try {
      const response = await api(v.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal: controller.signal });
      if (reach.hit("read", reading < 0.6)) await response.text();
      else if (reach.hit("cancelled", reading < 0.8)) await response.body?.cancel();
      else reach.hit(streamed ? "stream never read" : "JSON never read");
    } catch {
      reach.hit("failed");
    } finally {
      settled++;
    }
  });
  const label = `${vendor}, seed ${seed}`;
  await drainSoak(clock, calls, () => settled, label, 700_000);
  const budgets = profile.limiter as KeyedLimiter<string>;
  for (const model of v.models) {
    if (budgets.has(model)) expect(budgets.get(model).stats!(), `${label}: ${model}`).toMatchObject({ queued: 0, inFlight: 0 });
  }
}

describe("vendor profile soak: streams, aborts and unread bodies never stall a model", () => {
  test.each(Object.keys(VENDORS) as (keyof typeof VENDORS)[])("%s, 5 seeds × 150 calls", async (vendor) => {
    unhandled.take();
    for (let seed = 1; seed <= 5; seed++) await soak(vendor, seed);
    expect(unhandled.take()).toEqual([]);
  });

  test("the runs reached what they are about", () => {
    reach.atLeast({ streamed: 400, read: 600, cancelled: 150, "stream never read": 40, "JSON never read": 80, failed: 150 });
  });
});
