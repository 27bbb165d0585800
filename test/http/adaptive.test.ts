/**
 * `createThrottledFetch({ adaptive })` in virtual time: closed-loop or bursty callers against the
 * simulated servers of `sluice/testing`, the server's own arrival log as the judge.
 */
import { describe, expect, test } from "vitest";
import {
  AdaptiveRates,
  createThrottledFetch,
  KeyedLimiter,
  type KeyedRateChange,
  ManualClock,
  SmoothLimiter,
  WindowLimiter,
} from "../../src/index.ts";
import {
  createSimulatedFetch,
  type ServerModel,
  serveModel,
  SlidingLogServer,
  TokenBucketServer,
} from "../../src/testing.ts";

function setup(server: ServerModel, latency: number | { min: number; max: number } = 100, seed = 1) {
  const clock = new ManualClock();
  const fetch = createSimulatedFetch({ server: serveModel(server), clock, latency, seed });
  const changes: KeyedRateChange[] = [];
  return { clock, fetch, changes, onChange: (c: KeyedRateChange) => changes.push(c) };
}

/** Runs `callers` closed loops of `api(url)` until `until` ms of virtual time. */
async function loops(clock: ManualClock, callers: number, until: number, send: () => Promise<Response>) {
  const running = Promise.all(Array.from({ length: callers }, async () => {
    while (clock.now() < until) await (await send()).arrayBuffer();
  }));
  await clock.runAll(Infinity);
  await running;
}

/** The most arrivals in any window of `ms` (a strict server's view). */
function busiest(times: readonly number[], ms: number): number {
  let most = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[i]! - times[j]! >= ms) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

describe("createThrottledFetch({ adaptive })", () => {
  test("memory: each attempt's slot of the learned rate ends with its send, so 1,000 hosts used once are all forgotten", async () => {
    // Before 2026-11-24 the slot was a reservation left open: every key stayed "in flight" for good,
    // never idle, never evicted (maxKeys is a soft bound), so memory grew with every host ever called.
    const clock = new ManualClock();
    const rates = new AdaptiveRates({ clock });
    const fetch = async () => new Response("ok");
    const api = createThrottledFetch({ adaptive: rates, fetch, clock });
    const calls = Array.from({ length: 1000 }, (_, i) => api(`https://h${i}.example/`).then((r) => r.text()));
    await clock.runAll(Infinity);
    await Promise.all(calls);
    expect(rates.get("https://h0.example").stats().inFlight).toBe(0);
    await clock.advance(61_000);
    expect(rates.prune()).toBe(1000);
  });

  test("no blind burst: told nothing, 50 callers at once start one a second, then slow start doubles", async () => {
    const { clock, fetch } = setup(new TokenBucketServer({ limit: 100 }));
    const api = createThrottledFetch({ adaptive: { clock }, fetch, clock, retry: 0 });
    const calls = Array.from({ length: 50 }, () => api("https://api.example.com/"));
    await clock.advance(2500);
    const at = fetch.stats.arrivals.map((a) => a.at);
    // 1/s until the first answer at the rate confirms it, then 2/s, then 4/s: never two at once.
    expect(at).toEqual([0, 1000, 1500, 2000, 2250, 2500]);
    await clock.runAll(Infinity);
    await Promise.all(calls);
  });

  test("one cut per overload event: 15 refusals of requests sent before the cut cut once", async () => {
    // Told 20/s against a strict 5/s: 20 requests leave spaced 50 ms apart before the first answer
    // (latency 1 s); 15 come back refused, all sent in epoch 0.
    const { clock, fetch, changes, onChange } = setup(new SlidingLogServer({ limit: 5, headers: ["retry-after"] }), 1000);
    const api = createThrottledFetch({ limit: 20, interval: 1000, adaptive: { onChange }, fetch, clock, retry: 0 });
    const calls = Array.from({ length: 20 }, () => api("https://api.example.com/"));
    await clock.runAll(Infinity);
    const statuses = (await Promise.all(calls)).map((r) => r.status);
    expect(statuses.filter((s) => s === 429)).toHaveLength(15);
    const cuts = changes.filter((c) => c.reason === "throttled");
    expect(cuts).toHaveLength(1);
    expect(cuts[0]).toMatchObject({ key: "https://api.example.com", previous: 20, epoch: 1 });
  });

  test("no burst after a pause: after Retry-After, callers resume spaced at the learned rate", async () => {
    const { clock, fetch, changes, onChange } = setup(new SlidingLogServer({ limit: 5, headers: ["retry-after"] }), 50);
    const api = createThrottledFetch({ limit: 20, interval: 1000, adaptive: { onChange }, fetch, clock, retry: 3 });
    await loops(clock, 30, 8000, () => api("https://api.example.com/"));
    const cut = changes.find((c) => c.reason === "throttled")!;
    expect(cut).toBeDefined();
    // After the first refusal's pause, arrivals are spaced at least at the rate in force then.
    const after = fetch.stats.arrivals.filter((a) => a.at > cut.at + 1000).map((a) => a.at);
    expect(after.length).toBeGreaterThan(10);
    // While the learned rate is below the told 20/s, the server sees no more than it in any second
    // (back at the ceiling, the told limit's window paces them, as without adaptive), and never two
    // requests at once.
    const rateAt = (t: number) => [...changes].reverse().find((c) => c.at <= t)!.rate;
    expect(busiest(after.filter((t) => rateAt(t) < 20), 1)).toBe(1);
    let paced = 0;
    for (let i = 0; i < after.length; i++) {
      const inSecond = after.filter((t) => t >= after[i]! && t < after[i]! + 1000);
      const most = Math.max(...changes.filter((c) => c.at <= after[i]! + 1000).slice(-8).map((c) => c.rate));
      if (most >= 20) continue;
      paced++;
      expect(inSecond.length).toBeLessThanOrEqual(Math.ceil(most) + 1);
    }
    expect(paced).toBeGreaterThan(10);
  });

  test("header authority: a stated limit becomes the rate at once, and nothing is refused", async () => {
    const { clock, fetch, changes, onChange } = setup(new TokenBucketServer({ limit: 10, headers: ["ietf", "retry-after"] }), 50);
    const api = createThrottledFetch({ adaptive: { onChange }, fetch, clock });
    await loops(clock, 20, 20_000, () => api("https://api.example.com/"));
    expect(changes[0]).toMatchObject({ reason: "server-limit", rate: 10 });
    expect(fetch.stats.arrivals.filter((a) => a.status === 429)).toHaveLength(0);
    const late = fetch.stats.arrivals.filter((a) => a.at >= 5000 && a.at < 20_000).length;
    expect(late / 15).toBeGreaterThanOrEqual(9);
  });

  test("the ceiling is never exceeded: told 10/s against a server allowing 100/s", async () => {
    const { clock, fetch, changes, onChange } = setup(new TokenBucketServer({ limit: 100 }), { min: 0, max: 200 });
    const api = createThrottledFetch({ limit: 10, interval: 1000, adaptive: { onChange }, fetch, clock });
    await loops(clock, 50, 30_000, () => api("https://api.example.com/"));
    expect(changes.every((c) => c.rate <= 10)).toBe(true);
    expect(busiest(fetch.stats.arrivals.map((a) => a.at), 1000)).toBeLessThanOrEqual(10);
  });

  test("told the right limit, adaptive costs nothing: 0 429s from a strict window, whatever the latency, and the same throughput", async () => {
    // Until the server has accepted a second's worth at the told limit, adaptive spaces callers
    // evenly at it instead of letting the told window send all of them at once (told 2x too much,
    // that first burst is where nearly every refusal came from). So the first second's send times
    // differ from the plain client's; what must not differ is the outcome: no 429 from a strict
    // server, never more than the told limit in any window, the same number of requests, done
    // within one interval of the plain client. (A fixed amount of work, 30 callers × 10 requests,
    // so "the same throughput" is a finishing time, not a count cut off at a deadline.)
    const work = async (clock: ManualClock, send: () => Promise<Response>) => {
      const running = Promise.all(Array.from({ length: 30 }, async () => {
        for (let i = 0; i < 10; i++) await (await send()).arrayBuffer();
      }));
      await clock.runAll(Infinity);
      await running;
    };
    for (const seed of [1, 2, 3]) {
      const { clock, fetch, changes, onChange } = setup(new SlidingLogServer({ limit: 10, headers: ["retry-after"] }), { min: 0, max: 300 }, seed);
      const api = createThrottledFetch({ limit: 10, interval: 1000, adaptive: { onChange }, fetch, clock });
      await work(clock, () => api("https://api.example.com/"));
      expect(fetch.stats.arrivals.filter((a) => a.status === 429)).toHaveLength(0);
      expect(changes).toEqual([]);
      const times = fetch.stats.arrivals.map((a) => a.at);
      expect(busiest(times, 1000)).toBeLessThanOrEqual(10);
      const plain = setup(new SlidingLogServer({ limit: 10, headers: ["retry-after"] }), { min: 0, max: 300 }, seed);
      const shorthand = createThrottledFetch({ limit: 10, interval: 1000, fetch: plain.fetch, clock: plain.clock });
      await work(plain.clock, () => shorthand("https://api.example.com/"));
      const plainTimes = plain.fetch.stats.arrivals.map((a) => a.at);
      expect(plain.fetch.stats.arrivals.filter((a) => a.status === 429)).toHaveLength(0);
      expect(times).toHaveLength(300);
      expect(plainTimes).toHaveLength(300);
      expect(Math.abs(clock.now() - plain.clock.now())).toBeLessThanOrEqual(1000);
    }
  });

  test("per-key rates are independent: a cut on one origin leaves the other's rate", async () => {
    const clock = new ManualClock();
    const slow = createSimulatedFetch({ server: serveModel(new SlidingLogServer({ limit: 2, headers: ["retry-after"] })), clock, latency: 50 });
    const fast = createSimulatedFetch({ server: serveModel(new TokenBucketServer({ limit: 1000 })), clock, latency: 50 });
    const changes: KeyedRateChange[] = [];
    const rates = new AdaptiveRates({ clock, maxRate: 20, onChange: (c) => changes.push(c) });
    const api = createThrottledFetch({
      adaptive: rates,
      clock,
      retry: 0,
      fetch: (input, init) => (String(input).startsWith("https://slow.example") ? slow : fast)(input as string, init),
    });
    await Promise.all([
      loops(clock, 10, 5000, () => api("https://slow.example/")),
      loops(clock, 10, 5000, () => api("https://fast.example/")),
    ]);
    expect(rates.rate("https://slow.example")).toBeLessThan(20);
    expect(changes.some((c) => c.key === "https://slow.example" && c.reason === "throttled")).toBe(true);
    expect(rates.lastChange("https://slow.example")).toBeDefined();
    expect(changes.filter((c) => c.key === "https://fast.example")).toEqual([]);
    expect(rates.rate("https://fast.example")).toBe(20);
    expect(fast.stats.arrivals.filter((a) => a.status === 429)).toHaveLength(0);
    expect(rates.rate("https://never.example")).toBeUndefined();
  });

  test("retries re-enter the learned rate: a refused request's retry waits its turn at the rate", async () => {
    const { clock, fetch } = setup(new SlidingLogServer({ limit: 3, headers: ["retry-after"] }), 10);
    const api = createThrottledFetch({ limit: 10, interval: 1000, adaptive: true, fetch, clock, retry: 5 });
    const calls = Array.from({ length: 12 }, () => api("https://api.example.com/"));
    await clock.runAll(Infinity);
    await Promise.all(calls);
    const at = fetch.stats.arrivals.map((a) => a.at);
    // Told 10/s, the window sends 10 at once (as without adaptive); 7 are refused, the rate is cut,
    // and every retry after that waits its turn at the learned rate: never two at once.
    const firstRefusal = fetch.stats.arrivals.find((a) => a.status === 429)!.at;
    expect(busiest(at.filter((t) => t > firstRefusal + 10), 1)).toBe(1);
    expect(at.length).toBeGreaterThan(12); // the retries were sent
    // Everything sent, retries included, stays at or under the told 10 per second.
    expect(busiest(at, 1000)).toBeLessThanOrEqual(10);
  });

  test("with a limiter the user builds: its rate is the ceiling, per key with a KeyedLimiter", async () => {
    const { clock, fetch, changes, onChange } = setup(new TokenBucketServer({ limit: 100 }), 10);
    const keyed = new KeyedLimiter({ create: () => new SmoothLimiter({ limit: 4, interval: 1000, clock }), clock });
    const api = createThrottledFetch({ limiter: keyed, adaptive: { onChange }, fetch, clock });
    await loops(clock, 5, 3000, () => api("https://api.example.com/"));
    expect(changes).toEqual([]); // started at the limiter's 4/s: nothing to learn below it
    expect(busiest(fetch.stats.arrivals.map((a) => a.at), 1000)).toBeLessThanOrEqual(4 + 1);
  });

  test("options are validated, naming the option and the value", () => {
    expect(() => createThrottledFetch({ adaptive: "yes" as never })).toThrow(
      new TypeError('`adaptive` must be a boolean, an options object or an AdaptiveRates, got "yes"'),
    );
    expect(() => createThrottledFetch({ adaptive: { decrease: 2 } })).toThrow(new RangeError("`decrease` must be at least 0.1 and below 1, got 2"));
    expect(() => createThrottledFetch({ adaptive: { onChange: 1 as never } })).toThrow(TypeError);
    expect(() => createThrottledFetch({ limiter: new WindowLimiter({ limit: 1, interval: 1000 }), key: () => "k" })).toThrow(TypeError);
  });
});

describe("a limiter the user builds is as safe as the shorthand", () => {
  test("a WindowLimiter counted from the grant, at a strict server's documented limit: 0 429s over 200 requests", async () => {
    for (const seed of [1, 2, 3, 4]) {
      const clock = new ManualClock();
      const fetch = createSimulatedFetch({
        server: serveModel(new SlidingLogServer({ limit: 10, interval: 1000, headers: ["retry-after"] })),
        clock,
        latency: { min: 0, max: 50 },
        requestLatency: { min: 0, max: 50 },
        seed,
      });
      const limiter = new WindowLimiter({ limit: 10, interval: 1000, clock }); // countFrom: "grant"
      const api = createThrottledFetch({ limiter, fetch, retry: 0 });
      const calls = Promise.all(Array.from({ length: 200 }, () => api("https://api.example.com/").then((r) => r.arrayBuffer())));
      await clock.runAll(Infinity);
      await calls;
      expect(fetch.stats.arrivals).toHaveLength(200);
      expect(fetch.stats.arrivals.filter((a) => a.status === 429)).toHaveLength(0);
    }
  });
});
