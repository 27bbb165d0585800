/**
 * The vendor profiles with `sluice/redis` budgets, against the real redis-server of the Redis suites:
 * two "processes" (two throttled fetches, each with its own profile) share one simulated vendor,
 * and a Redis limiter keeps the pair within one quota — which each profile alone cannot do, since
 * it budgets one process.
 *
 * Two compositions: the LLM profiles' `limiter` replaced by Redis combinations with the profile's
 * dimension names (`combineRedis({ requests, tokens })`: reserved and settled atomically on Redis);
 * and, for any profile (GitHub's budgets include slots, which Redis has no limiter for), a layer —
 * the profile's fetch calls a throttled fetch on Redis limiters (`fetch: fleet`), so every attempt
 * takes the fleet's permit after the process's own budgets. Virtual time: the store reads a
 * ManualClock (`now`), and the driver below advances it only once every Redis call has been answered.
 */
import { Redis } from "ioredis";
import { expect, test, vi } from "vitest";
import { createThrottledFetch, KeyedLimiter, ManualClock, type ThrottledFetch } from "../../src/index.ts";
import { combineRedis, fromIoredis, type RedisLimiter, RedisStore, RedisWindowLimiter } from "../../src/redis.ts";
import { AnthropicSimulator, createSimulatedFetch, GitHubSimulator, OpenAISimulator, type SimulatedFetch } from "../../src/testing.ts";
import { anthropic, estimateOpenAIRequest, github, githubResource, openai, readOpenAIUsage } from "../../src/vendors.ts";
import { describeRedis, useRedis } from "../redis/server.ts";

const T0 = 1_767_225_600_000_000; // 2026-01-01T00:00:00Z in µs: the simulators' virtual t = 0
const EPOCH_MS = T0 / 1000;

describeRedis("vendor profiles on Redis budgets", () => {
  let redis: Redis;
  let family = 0;
  useRedis((_, r) => {
    redis = r;
  });

  function store(clock: ManualClock): RedisStore {
    return new RedisStore({ client: fromIoredis(redis), name: `vendors-${family++}`, clock, now: () => T0 + Math.round(clock.now() * 1000) });
  }

  /**
   * Runs `done` to the end in virtual time: waits (in real time) until no Redis call of `limiters`
   * is pending, then fires the next timer; repeats.
   */
  async function drive<T>(clock: ManualClock, limiters: () => RedisLimiter[], done: Promise<T>): Promise<T> {
    let finished = false;
    void done.then(() => (finished = true), () => (finished = true));
    for (let steps = 0; !finished; steps++) {
      if (steps > 100_000) throw new Error("the run does not end");
      await new Promise((resolve) => setImmediate(resolve));
      await vi.waitFor(() => expect(limiters().every((l) => l.inFlight === 0)).toBe(true), { timeout: 5000, interval: 1 });
      await new Promise((resolve) => setImmediate(resolve));
      if (limiters().some((l) => l.inFlight > 0)) continue;
      if (clock.nextTimerAt !== undefined) await clock.advanceTo(clock.nextTimerAt);
    }
    return done;
  }

  test("github(): two processes, one Redis budget per resource — no refusal; without it, the second process is refused", async () => {
    for (const shared of [true, false]) {
      const clock = new ManualClock();
      const server = new GitHubSimulator({ resources: { core: { limit: 10, interval: 60_000 }, search: { limit: 4, interval: 60_000 } } });
      const simulated = createSimulatedFetch({ server, clock, latency: 20 });
      const s = store(clock);
      const made: RedisLimiter[] = [];
      const quota: Record<string, number> = { core: 10, search: 4 };
      // One Redis window per resource, shared by every process (each process builds its own objects
      // on the same keys, as separate hosts would).
      const fleetFetch = () => createThrottledFetch({
        limiter: new KeyedLimiter<string>({
          create: (resource) => {
            const limiter = new RedisWindowLimiter({ store: s, key: `github:${resource}`, limit: quota[resource] ?? 10, interval: 60_000 });
            made.push(limiter);
            return limiter;
          },
          clock,
        }),
        key: (request) => githubResource(new URL(request.url).pathname),
        fetch: simulated,
        retry: 0, // the profile's fetch retries; this layer only takes the fleet's permit
        rateLimitHeaders: false,
        clock,
      });
      const processes = [0, 1].map(() =>
        createThrottledFetch({ ...github({ clock }), fetch: shared ? fleetFetch() : simulated, wallClock: () => EPOCH_MS + clock.now() })
      );
      const ended: { path: string; at: number; status: number }[] = [];
      const calls = processes.flatMap((gh) =>
        ["/repos/o/r/issues/1", "/repos/o/r/issues/2", "/repos/o/r/issues/3", "/repos/o/r/issues/4", "/repos/o/r/issues/5",
          "/repos/o/r/issues/6", "/repos/o/r/issues/7", "/search/issues?q=a", "/search/issues?q=b", "/search/issues?q=c"]
          .map((path) => gh(`https://api.github.com${path}`).then(async (r) => (await r.text(), ended.push({ path, at: clock.now(), status: r.status }))))
      );
      await drive(clock, () => made, Promise.all(calls));
      expect(ended.every((e) => e.status === 200)).toBe(true); // retried when refused
      const refused = simulated.stats.byStatus[403] ?? 0;
      if (shared) {
        expect(refused).toBe(0);
        expect(made.length).toBeGreaterThanOrEqual(4); // two resources, in each process
        // The fleet's 14 core calls: 10 in the first minute, 4 once the window slides.
        const core = ended.filter((e) => e.path.startsWith("/repos/")).map((e) => e.at).sort((a, b) => a - b);
        expect(core.filter((t) => t < 60_000)).toHaveLength(10);
        expect(core.filter((t) => t >= 60_000)).toHaveLength(4);
      } else {
        expect(refused).toBeGreaterThanOrEqual(6); // 14 core for 10 and 6 searches for 4, at t = 0
      }
    }
  });

  test("openai(): requests and tokens on Redis for two processes (tokens reserved, then settled from usage) — no 429; without it, 429s", async () => {
    for (const shared of [true, false]) {
      const rpm = 20;
      const tpm = 4_000;
      const clock = new ManualClock();
      const server = new OpenAISimulator({ defaultLimits: { rpm, tpm } });
      const simulated = createSimulatedFetch({ server, clock, latency: 100 });
      const s = store(clock);
      const made: RedisLimiter[] = [];
      const fleet = () => {
        const r = new RedisWindowLimiter({ store: s, key: "openai:m:requests", limit: rpm, interval: 60_000 });
        const t = new RedisWindowLimiter({ store: s, key: "openai:m:tokens", limit: tpm, interval: 60_000 });
        made.push(r, t);
        // Tokens: the estimate the profile reserves, settled to `usage.total_tokens` once read.
        const tokensLayer = createThrottledFetch({
          limiter: t,
          fetch: simulated,
          retry: 0,
          rateLimitHeaders: false,
          clock,
          cost: async (request) => estimateOpenAIRequest(await request.clone().text())?.tokens ?? 1,
          settle: async (response) => readOpenAIUsage(await response.clone().json())?.totalTokens,
        });
        return createThrottledFetch({ limiter: r, fetch: tokensLayer, retry: 0, rateLimitHeaders: false, clock });
      };
      const processes = [0, 1].map(() => createThrottledFetch({ ...openai({ rpm, tpm, clock }), fetch: shared ? fleet() : simulated }));
      let ok = 0;
      const calls = processes.flatMap((api) =>
        Array.from({ length: 15 }, (_, i) =>
          api("https://api.openai.com/v1/chat/completions", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ model: "m", max_tokens: 200, messages: [{ role: "user", content: `question ${i}` }] }),
          }).then(async (r) => {
            await r.text();
            if (r.status === 200) ok++;
          }))
      );
      await drive(clock, () => made, Promise.all(calls));
      if (shared) {
        expect(ok).toBe(30);
        expect(simulated.stats.byStatus[429]).toBeUndefined();
        // 30 requests at 20 a minute for the pair: the last ones wait for the second minute.
        expect(clock.now()).toBeGreaterThanOrEqual(60_000);
      } else {
        expect(simulated.stats.byStatus[429]).toBeGreaterThan(0); // each process spends the whole quota
      }
    }
  });

  test("openai() and anthropic() with their `limiter` on Redis (named dimensions, reserved and settled atomically): two processes, no 429", async () => {
    const body = (i: number) => JSON.stringify({ model: "m", max_tokens: 200, messages: [{ role: "user", content: `question ${i}` }] });
    for (const vendor of ["openai", "anthropic"] as const) {
      const clock = new ManualClock();
      const s = store(clock);
      const made: RedisLimiter[] = [];
      const window = (key: string, limit: number) => new RedisWindowLimiter({ store: s, key, limit, interval: 60_000 });
      // Per model (the profiles' key), Redis windows under the profile's dimension names.
      const keyed = (dimensions: Record<string, number>) =>
        new KeyedLimiter<string>({
          create: (model) => {
            const members = Object.fromEntries(Object.entries(dimensions).map(([name, limit]) => [name, window(`${vendor}:${model}:${name}`, limit)]));
            const combination = combineRedis(members);
            made.push(combination);
            return combination;
          },
          clock,
        });
      let simulated: SimulatedFetch;
      let url: string;
      let processes: ThrottledFetch[];
      if (vendor === "openai") {
        const limits = { rpm: 20, tpm: 4_000 };
        simulated = createSimulatedFetch({ server: new OpenAISimulator({ defaultLimits: limits }), clock, latency: 100 });
        url = "https://api.openai.com/v1/chat/completions";
        processes = [0, 1].map(() =>
          createThrottledFetch({ ...openai({ ...limits, clock }), limiter: keyed({ requests: limits.rpm, tokens: limits.tpm }), fetch: simulated })
        );
      } else {
        const limits = { rpm: 20, inputTpm: 4_000, outputTpm: 2_000 };
        simulated = createSimulatedFetch({ server: new AnthropicSimulator({ limits }), clock, latency: 100 });
        url = "https://api.anthropic.com/v1/messages";
        processes = [0, 1].map(() =>
          createThrottledFetch({
            ...anthropic({ ...limits, clock }),
            limiter: keyed({ requests: limits.rpm, input: limits.inputTpm, output: limits.outputTpm }),
            fetch: simulated,
          })
        );
      }
      let ok = 0;
      const calls = processes.flatMap((api) =>
        Array.from({ length: 15 }, (_, i) =>
          api(url, { method: "POST", headers: { "content-type": "application/json" }, body: body(i) }).then(async (r) => {
            await r.text();
            if (r.status === 200) ok++;
          }))
      );
      await drive(clock, () => made, Promise.all(calls));
      expect([vendor, ok, simulated.stats.byStatus[429] ?? 0]).toEqual([vendor, 30, 0]);
      expect(made).toHaveLength(2); // one combination per process, both on the same Redis keys
      expect(clock.now()).toBeGreaterThanOrEqual(60_000); // 30 requests at 20 a minute for the pair
    }
  });
});
