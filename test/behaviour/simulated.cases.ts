/**
 * A virtual-time run against a simulated vendor comes out the same every time on every runtime: the
 * simulated server reads each request's body with real event-loop turns (more of them in a browser,
 * the first time most), and the ManualClock holds its timers meanwhile. Red-team, 2026-11-27: in
 * Chromium the first run of a page differed from the later ones (1.82 against 1.73 virtual minutes).
 */
import { createThrottledFetch } from "../../src/index.ts";
import { createSimulatedFetch, ManualClock, OpenAISimulator } from "../../src/testing.ts";
import { expect } from "./expect.ts";
import { describe, test } from "./harness.ts";

async function run(): Promise<{ end: number; arrivals: string }> {
  const clock = new ManualClock();
  const openai = new OpenAISimulator({ models: { "gpt-4o-mini": { rpm: 120, tpm: 20_000 } } });
  const server = createSimulatedFetch({ server: openai, clock, latency: { min: 50, max: 800 } });
  const api = createThrottledFetch({ limit: 120, interval: 60_000, fetch: server, clock, random: () => 0.5 });
  const ask = (i: number) =>
    api("https://api.openai.com/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o-mini", max_tokens: 120 + (i % 7) * 40, messages: [{ role: "user", content: `item ${i} `.repeat(30) }] }),
    }).then((response) => response.status);
  const statuses = await clock.runUntil(Promise.all(Array.from({ length: 150 }, (_, i) => ask(i))), 1_000_000);
  expect(statuses.filter((s) => s !== 200)).toEqual([]);
  return { end: clock.now(), arrivals: server.stats.arrivals.map((r) => `${r.at}:${r.status}`).join(",") };
}

describe("simulated vendor in virtual time", () => {
  test("the same run twice gives the same virtual times, request by request", async () => {
    const first = await run();
    const second = await run();
    expect(second.end).toBe(first.end);
    expect(second.arrivals).toBe(first.arrivals);
  });
});
