/**
 * The profiles end to end: `createThrottledFetch({ ...profile })` against the simulated vendors, in
 * virtual time, through the fetch's `cost`/`settle` options.
 */
import { describe, expect, test } from "vitest";
import { createThrottledFetch } from "../../src/index.ts";
import { AnthropicSimulator, createSimulatedFetch, GitHubSimulator, ManualClock, OpenAISimulator } from "../../src/testing.ts";
import { anthropic, github, openai } from "../../src/vendors.ts";
import { runGitHubSync } from "../../examples/support/github-sync.ts";
import { runBatch } from "../../examples/support/llm-batch.ts";
import { runVirtually } from "../../examples/support/virtual-run.ts";

const json = { "content-type": "application/json" };

describe("profiles through createThrottledFetch", () => {
  for (const stream of [false, true]) {
    test(`OpenAI, 500 ${stream ? "streamed" : "JSON"} completions: no 429, ≥ 90 % of TPM used; reserving only leaves it unused`, async () => {
      const settled = await runBatch({ vendor: "openai", stream });
      expect(settled.ok).toBe(500);
      expect(settled.server429).toBe(0);
      expect(settled.budgets.tokens!.rateUsed).toBeGreaterThanOrEqual(0.9);
      const reservedOnly = await runBatch({ vendor: "openai", stream, settle: false });
      expect(reservedOnly.server429).toBe(0);
      expect(reservedOnly.budgets.tokens!.rateUsed).toBeLessThan(0.75);
    });

    test(`Anthropic, 500 ${stream ? "streamed" : "JSON"} messages: no 429, ≥ 90 % of OTPM used`, async () => {
      const r = await runBatch({ vendor: "anthropic", stream });
      expect(r.ok).toBe(500);
      expect(r.server429).toBe(0);
      expect(r.budgets.output!.rateUsed).toBeGreaterThanOrEqual(0.9);
      expect(r.budgets.input!.rateUsed).toBeLessThanOrEqual(1);
    });
  }

  test("GitHub: a secondary limit hit on purpose pauses every caller of the resource; no 403 storm; every call succeeds", async () => {
    const r = await runGitHubSync();
    expect(r.ok).toBe(r.calls);
    expect(r.sentDuringPause).toBe(0);
    expect(r.secondary403).toBeGreaterThan(0); // hit on purpose
    // One burst: the writes in flight when the first refusal came (at most the documented 80 the
    // profile starts from); then the writes budget is the 20 GitHub accepted, and nothing is refused.
    expect(r.secondary403).toBeLessThanOrEqual(80);
    expect(r.durationMs).toBeLessThan(7 * 60_000); // 120 comments at 20 a minute
    expect(r.maxInFlight).toBeLessThanOrEqual(100);
  });

  // Needs the fetch to compute `cost` (which reads the model from the body) before `key`.
  test("OpenAI: each model has its own budgets (a model at its limit does not hold another back)", async () => {
    const clock = new ManualClock();
    const server = new OpenAISimulator({ defaultLimits: { rpm: 2, tpm: 100_000 } });
    const simulated = createSimulatedFetch({ server, clock, latency: 100 });
    const api = createThrottledFetch({ ...openai({ rpm: 2, tpm: 100_000, clock }), fetch: simulated });
    const done: Record<string, number[]> = { a: [], b: [] };
    const call = async (model: "a" | "b") => {
      const r = await api("https://api.openai.com/v1/chat/completions", {
        method: "POST", headers: json, body: JSON.stringify({ model, max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
      });
      await r.text();
      done[model]!.push(clock.now());
    };
    await runVirtually(clock, Promise.all([call("a"), call("a"), call("a"), call("b"), call("b")]));
    expect(simulated.stats.byStatus[429]).toBeUndefined();
    expect(done.b).toEqual([100, 100]); // not behind model a's third call
    expect(done.a!.at(-1)).toBeGreaterThanOrEqual(60_000);
  });

  test("GitHub: a GraphQL mutation counts as a write, a query does not; a waiting REST write holds no read back", async () => {
    const clock = new ManualClock();
    const simulated = createSimulatedFetch({ server: new GitHubSimulator(), clock, latency: 10 });
    const gh = createThrottledFetch({ ...github({ clock, contentCreating: { perMinute: 1 } }), fetch: simulated });
    const at = async (path: string, init?: RequestInit) => {
      const r = await gh(`https://api.github.com${path}`, init);
      await r.text();
      return [r.status, clock.now()];
    };
    const graphql = (query: string) => ({ method: "POST", headers: json, body: JSON.stringify({ query }) });
    // The mutation takes the minute's only write…
    expect(await runVirtually(clock, at("/graphql", graphql("mutation { addStar(input: { starrableId: \"x\" }) { clientMutationId } }"))))
      .toEqual([200, 10]);
    const results = await runVirtually(clock, Promise.all([
      at("/repos/o/r/issues", { method: "POST", body: "{}" }), // …so this write waits for the next minute
      at("/repos/o/r"),                                         // a read does not wait behind it
      at("/graphql", graphql("query { viewer { login } }")),    // nor does a GraphQL query
    ]));
    expect(results).toEqual([[200, 60_010], [200, 20], [200, 20]]);
  });

  const concurrentBatch = async (fetchOptions: (clock: ManualClock) => object) => {
    const clock = new ManualClock();
    const server = new OpenAISimulator({ defaultLimits: { rpm: 100, tpm: 20_000 }, refundUnused: true });
    const simulated = createSimulatedFetch({ server, clock, latency: { min: 100, max: 1000 } });
    const api = createThrottledFetch({ ...fetchOptions(clock), fetch: simulated } as never);
    const statuses = await runVirtually(clock, Promise.all(Array.from({ length: 40 }, async (_, i) => {
      const r = await api("https://api.openai.com/v1/chat/completions", {
        method: "POST", headers: json, body: JSON.stringify({ model: "m", max_tokens: 100, messages: [{ role: "user", content: `#${i}` }] }),
      });
      await r.text();
      return r.status;
    })));
    return { statuses, stats: simulated.stats };
  };

  test("the profile's maxConcurrent: at most that many calls in flight, still no 429", async () => {
    const { statuses, stats } = await concurrentBatch((clock) => openai({ rpm: 100, tpm: 20_000, clock, maxConcurrent: 3 }));
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(stats.maxInFlight).toBe(3);
    expect(stats.byStatus[429]).toBeUndefined();
  });

  test("composes with the fetch's maxConcurrent", async () => {
    const { statuses, stats } = await concurrentBatch((clock) => ({ ...openai({ rpm: 100, tpm: 20_000, clock }), maxConcurrent: 3 }));
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(stats.maxInFlight).toBe(3);
    expect(stats.byStatus[429]).toBeUndefined();
  });

  test("OpenAI: x-should-retry: false is not retried (a request larger than TPM)", async () => {
    const clock = new ManualClock();
    const server = new OpenAISimulator({ defaultLimits: { rpm: 100, tpm: 50 } });
    const simulated = createSimulatedFetch({ server, clock });
    // The client's budget is larger than the server's, so the request reaches it.
    const api = createThrottledFetch({ ...openai({ rpm: 100, tpm: 10_000, clock }), fetch: simulated });
    const response = await runVirtually(clock, api("https://api.openai.com/v1/chat/completions", {
      method: "POST", headers: json, body: JSON.stringify({ model: "m", max_tokens: 500, messages: [{ role: "user", content: "hi" }] }),
    }));
    expect(response.status).toBe(429);
    expect(simulated.stats.requests).toBe(1);
  });

  test("Anthropic: 529 overloaded is retried after a shared wait (every caller of the model waits; no retry budget)", async () => {
    const clock = new ManualClock();
    const server = new AnthropicSimulator({ limits: { rpm: 50, inputTpm: 30_000, outputTpm: 8_000 } });
    server.overload(0, 1);
    const simulated = createSimulatedFetch({ server, clock, latency: 10 });
    const throttles: unknown[] = [];
    const api = createThrottledFetch({
      ...anthropic({ rpm: 50, inputTpm: 30_000, outputTpm: 8_000, clock }), fetch: simulated, random: () => 0.5,
      onThrottle: (e) => throttles.push(e),
    });
    const call = () => api("https://api.anthropic.com/v1/messages", {
      method: "POST", headers: json, body: JSON.stringify({ model: "m", max_tokens: 50, messages: [{ role: "user", content: "hi" }] }),
    }).then(async (r) => (await r.text(), [r.status, clock.now()]));
    const [first, second] = await runVirtually(clock, Promise.all([call(), call()]));
    expect(simulated.stats.byStatus[529]).toBe(2);
    expect(first![0]).toBe(200);
    expect(second![0]).toBe(200);
    expect(throttles).toHaveLength(2); // each a server-timed wait of 1 s for the model
    expect(first![1]).toBeGreaterThanOrEqual(1_000);
    expect(first![1]).toBeLessThan(1_100); // the wait + latency
  });

  test("Anthropic: a 5-s overload of 200 calls — every call succeeds (red-team, 2026-11-27: as plain retries, 40 spent the retry budget and returned 529)", async () => {
    const clock = new ManualClock();
    const server = new AnthropicSimulator({ limits: { rpm: 50, inputTpm: 30_000, outputTpm: 8_000 } });
    server.overload(0, 5_000);
    const simulated = createSimulatedFetch({ server, clock, latency: { min: 300, max: 3000 } });
    const api = createThrottledFetch({ ...anthropic({ rpm: 50, inputTpm: 30_000, outputTpm: 8_000, clock }), fetch: simulated });
    const statuses = await runVirtually(clock, Promise.all(Array.from({ length: 200 }, (_, i) => api("https://api.anthropic.com/v1/messages", {
      method: "POST", headers: json, body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 256, messages: [{ role: "user", content: `q ${i}` }] }),
    }).then(async (r) => (await r.text(), r.status)))));
    expect(statuses.filter((s) => s === 200)).toHaveLength(200);
    expect(simulated.stats.maxInWindow(60_000)).toBeLessThanOrEqual(50); // the overload spends requests, never more than the RPM
  }, 60_000);
});
