/**
 * Regressions from a second red-team pass over `adaptive` (2026-11-27, virtual time, the server's
 * own log as the judge): each failed before its fix.
 */
import { expect, test } from "vitest";
import { AdaptiveRates, createThrottledFetch, ManualClock, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import { AdaptiveLimiter } from "../../src/adaptive/limiter.ts";
import { MAX_ADAPTIVE_RATE } from "../../src/adaptive/options.ts";
import { createSimulatedFetch, LeakyBucketServer, SeededRandom, type ServerModel, serveModel, type SimulatedServer, SlidingLogServer, TokenBucketServer } from "../../src/testing.ts";

const URL = "https://api.example.com/";
const KEY = "https://api.example.com";

/** Closed-loop callers through an adaptive fetch until `until` (virtual ms); what they and the server saw. */
async function drive(options: {
  callers: number;
  until: number;
  fetch: (clock: ManualClock) => typeof globalThis.fetch;
  extra?: Record<string, unknown>;
}) {
  const clock = new ManualClock();
  const rates = new AdaptiveRates({ clock, wallClock: () => clock.now() });
  const api = createThrottledFetch({ adaptive: rates, fetch: options.fetch(clock), clock, wallClock: () => clock.now(), ...options.extra });
  const failures: string[] = [];
  let calls = 0;
  const caller = async () => {
    while (clock.now() < options.until) {
      calls++;
      try {
        await (await api(URL)).arrayBuffer();
      } catch (error) {
        failures.push(String(error));
      }
    }
  };
  const all = Promise.all(Array.from({ length: options.callers }, caller));
  await clock.runAll(Infinity);
  await all;
  return { rates, failures, calls, clock };
}

test("callers waiting for maxConcurrent slots, not for the rate, do not grow it: the learned rate stays near what is sent (it doubled every second to 1e22, and calls failed with a RangeError)", async () => {
  for (const [maxConcurrent, latency] of [[1, 1000], [2, 500]] as const) {
    let sent = 0;
    const { rates, failures } = await drive({
      callers: 20,
      until: 60_000,
      extra: { maxConcurrent },
      fetch: (clock) => async () => {
        sent++;
        await new Promise<void>((resolve) => clock.setTimeout(() => resolve(), latency));
        return new Response("ok");
      },
    });
    expect(failures, `maxConcurrent ${maxConcurrent}`).toEqual([]);
    const sendRate = sent / 60; // what the slots allow: 1 and 4 a second
    expect(rates.rate(KEY)!).toBeLessThanOrEqual(4 * sendRate);
  }
});

test("a server that never refuses, callers 0–5 ms away: no call fails, and the rate stays within what is sent and the most a limiter spaces (1e6/s)", async () => {
  const sentAt: number[] = [];
  const { rates, failures } = await drive({
    callers: 10,
    until: 10_000,
    fetch: (clock) => {
      const simulated = createSimulatedFetch({ server: { handle: () => ({ status: 200 }) }, clock, latency: { min: 0, max: 5 }, seed: 1 });
      return (input, init) => {
        sentAt.push(clock.now());
        return simulated(input, init);
      };
    },
  });
  expect(failures).toEqual([]);
  const lastSecond = sentAt.filter((at) => at >= 9000).length;
  expect(lastSecond).toBeGreaterThan(1000);
  expect(rates.rate(KEY)!).toBeLessThanOrEqual(Math.min(MAX_ADAPTIVE_RATE, 4 * lastSecond));
});

test("a server stating a limit past 1e6/s is held at 1e6/s, not thrown at the caller", () => {
  const limiter = new AdaptiveLimiter({ clock: new ManualClock() });
  const tag = limiter.onSent(false);
  const headers = new Headers({ "RateLimit-Policy": '"burst";q=100000000000;w=1' });
  expect(() => limiter.onResponse(tag, { status: 200, headers })).not.toThrow();
  expect(limiter.rate).toBe(MAX_ADAPTIVE_RATE);
});

test("a Retry-After longer than maxRetryAfter pauses nobody with adaptive either (it paused the key for the hour, and a hostile one for 2^53 ms)", async () => {
  for (const retryAfter of ["3600", "99999999999999999999"]) {
    for (const told of [{}, { limit: 10, interval: 1000 }]) {
      const clock = new ManualClock();
      let n = 0;
      const fetch = async () => (++n === 3 ? new Response("no", { status: 429, headers: { "retry-after": retryAfter } }) : new Response("ok"));
      const throttles: number[] = [];
      const api = createThrottledFetch({
        adaptive: true, ...told, fetch, clock, wallClock: () => clock.now(), onThrottle: (e) => throttles.push(e.paused),
      });
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const started = clock.now();
        const response = await clock.runUntil(api(URL), 1e9);
        statuses.push(response.status);
        // Paced at the learned rate (about a second apart at the start), never held for the hour.
        expect(clock.now() - started, `${retryAfter} ${JSON.stringify(told)} call ${i}`).toBeLessThanOrEqual(2000);
      }
      expect(statuses).toEqual([200, 200, 429, 200, 200]); // the caller got the 429: no retry, as without adaptive
      expect(throttles).toEqual([0]);
    }
  }
});

test("AdaptiveLimiter.onResponse: a delay or reset past maxDelay (default 60 s) pauses nobody and is no window; the 429 still cuts", () => {
  const cases: Record<string, string>[] = [{ "retry-after": "99999999999999999999" }, { "retry-after": "120" }, { "RateLimit": "limit=10, remaining=0, reset=7200" }];
  for (const headers of cases) {
    const limiter = new AdaptiveLimiter({ clock: new ManualClock(), maxRate: 10 });
    const advice = limiter.onResponse(limiter.onSent(true), { status: 429, headers: new Headers(headers) });
    expect(advice.pauseMs, JSON.stringify(headers)).toBe(0);
    expect(limiter.paused).toBe(false);
    expect(limiter.controller.step).toBe(1000); // no per-hour "window" inferred
    expect(advice.change?.reason).toBe("throttled");
  }
  // Within it, the pause holds; a fetch passes its own maxRetryAfter.
  const limiter = new AdaptiveLimiter({ clock: new ManualClock(), maxRate: 10 });
  expect(limiter.onResponse(limiter.onSent(true), { status: 429, headers: new Headers({ "retry-after": "120" }) }, { maxDelay: 300_000 }).pauseMs).toBe(120_000);
});

/** Closed-loop callers through an adaptive fetch against a simulated server; the server's log of arrivals. */
async function against(server: SimulatedServer, until: number, callers = 20) {
  const clock = new ManualClock();
  const simulated = createSimulatedFetch({ server, clock, latency: { min: 20, max: 80 }, seed: 1 });
  const changes: { at: number; rate: number; reason: string }[] = [];
  const rates = new AdaptiveRates({ clock, wallClock: () => clock.now(), onChange: (c) => changes.push(c) });
  const api = createThrottledFetch({ adaptive: rates, fetch: simulated, clock, wallClock: () => clock.now() });
  const loop = async () => {
    while (clock.now() < until) await (await api(URL)).arrayBuffer();
  };
  const all = Promise.all(Array.from({ length: callers }, loop));
  await clock.runAll(Infinity);
  await all;
  const arrivals = simulated.stats.arrivals;
  const between = (from: number, to: number) => arrivals.filter((a) => a.at >= from && a.at < to);
  const refused = (from: number, to: number) => between(from, to).filter((a) => a.status === 429 || a.status === 503).length;
  const rateAt = (at: number) => changes.filter((c) => c.at < at).at(-1)?.rate;
  const cuts = (from: number, to: number) => changes.filter((c) => c.reason === "throttled" && c.at >= from && c.at < to).length;
  return { between, refused, rateAt, cuts };
}

/** `model` answering `status` (with `headers`) from `from` to `to` instead. */
function outage(model: ServerModel, from: number, to: number, status: number, headers: Record<string, string> = {}): SimulatedServer {
  const base = serveModel(model);
  return { handle: (request, context) => (context.now >= from && context.now < to ? { status, headers } : base.handle(request, context)) };
}

test("an outage of 500s (no rate signal) never raises the rate: slow start does not run on in it, and no 429 storm follows", async () => {
  const run = await against(outage(new SlidingLogServer({ limit: 10 }), 2000, 20_000, 500), 60_000);
  // Before: slow start ran on to 262,144/s; 2,035–2,208 requests in the 18 s, then 46–50 % refused.
  expect(run.between(2000, 20_000).length).toBeLessThanOrEqual(10 * 18);
  expect(run.rateAt(20_000)!).toBeLessThanOrEqual(20);
  const after = run.between(20_000, 25_000).length;
  expect(run.refused(20_000, 25_000)).toBeLessThanOrEqual(0.1 * after);
});

test("a maintenance window (503 + Retry-After: 1 for 20 s) cuts once, not once per pause: the rate is back within a minute", async () => {
  const run = await against(outage(new SlidingLogServer({ limit: 10 }), 20_000, 40_000, 503, { "retry-after": "1" }), 120_000);
  const before = run.rateAt(20_000)!;
  // Before: 12 cuts, to 0.17/s, and 90 % of the rate again only after about 460 s.
  expect(run.cuts(20_000, 40_000)).toBe(1);
  expect(run.rateAt(40_000)!).toBeGreaterThanOrEqual(0.6 * before);
  expect(run.between(60_000, 120_000).filter((a) => a.status === 200).length).toBeGreaterThanOrEqual(0.85 * 10 * 60);
});

test("nginx limit_req at its default status (a bare 503) is read as overload while other answers succeed: few refusals", async () => {
  const run = await against(serveModel(new LeakyBucketServer({ rate: 10 })), 60_000);
  const all = run.between(0, 60_000).length;
  // Before: the 503s counted as accepted; 85 % of all requests were refused.
  expect(run.refused(0, 60_000)).toBeLessThanOrEqual(0.03 * all);
  expect(run.between(10_000, 60_000).filter((a) => a.status === 200).length).toBeGreaterThanOrEqual(0.85 * 10 * 50); // as against nginx with 429s
});

test("with adaptive, a call's priority holds at the learned rate (it went last: 20 s behind 40 low-priority calls)", async () => {
  for (const told of [{ limit: 2 }, {}]) {
    const clock = new ManualClock();
    const order: string[] = [];
    const fetch = async (input: RequestInfo | URL) => {
      order.push(new globalThis.URL(String(input instanceof Request ? input.url : input)).searchParams.get("p")!);
      await new Promise<void>((resolve) => clock.setTimeout(() => resolve(), 30));
      return new Response("ok");
    };
    const api = createThrottledFetch({ ...told, adaptive: { initialRate: 2 }, fetch, clock, wallClock: () => clock.now() });
    const lows = Array.from({ length: 40 }, (_, i) => api(`${URL}?p=low${i}`, { priority: "low" }).then((r) => r.arrayBuffer()));
    await clock.advance(100);
    const high = api(`${URL}?p=HIGH`, { priority: "high" }).then((r) => r.arrayBuffer());
    await clock.runUntil(high, 1e7);
    expect(order.indexOf("HIGH"), JSON.stringify(told)).toBeLessThanOrEqual(2);
    await clock.runUntil(Promise.all(lows), 1e7);
  }
});

test("with adaptive, a retry keeps its place at the learned rate (it went behind 500 later callers: 50 s)", async () => {
  const clock = new ManualClock();
  let n = 0;
  const fetch = async () => (++n === 1 ? new Response("busy", { status: 503 }) : new Response("ok"));
  const api = createThrottledFetch({
    limit: 10, adaptive: true, fetch, clock, wallClock: () => clock.now(), random: () => 0, retry: { backoff: { base: 1 } },
  });
  const first = api(`${URL}first`).then(async (r) => [r.status, clock.now()]);
  const rest = Array.from({ length: 500 }, () => api(`${URL}x`).then((r) => r.arrayBuffer()));
  const [status, at] = await clock.runUntil(first, 1e7);
  expect(status).toBe(200);
  expect(at).toBeLessThanOrEqual(1000);
  await clock.runUntil(Promise.all(rest), 1e7);
});

test("the learned rate's own probe is no refusal: 20 calls that all went count 0 refused (it counted 19, with 19 refuse events)", async () => {
  const clock = new ManualClock();
  const rates = new AdaptiveRates({ clock, wallClock: () => clock.now() });
  const api = createThrottledFetch({ adaptive: rates, fetch: async () => new Response("ok"), clock, wallClock: () => clock.now() });
  const limiter = rates.get(KEY);
  let refuseEvents = 0;
  limiter.events.addEventListener("refuse", () => refuseEvents++);
  const statuses = await clock.runUntil(Promise.all(Array.from({ length: 20 }, () => api(URL).then((r) => r.status))));
  expect(statuses.every((s) => s === 200)).toBe(true);
  expect(limiter.stats()).toMatchObject({ granted: 20, refused: 0 });
  expect(refuseEvents).toBe(0);
});

test("with adaptive, setLimit on the fetch's own limiter reaches the learned rate (it stayed at the old 10/s)", async () => {
  for (const make of [(clock: ManualClock) => new WindowLimiter({ limit: 10, interval: 1000, clock }), (clock: ManualClock) => new SmoothLimiter({ limit: 10, clock })]) {
    const clock = new ManualClock();
    const simulated = createSimulatedFetch({ server: serveModel(new SlidingLogServer({ limit: 40 })), clock, latency: { min: 20, max: 80 }, seed: 1 });
    const limiter = make(clock);
    const api = createThrottledFetch({ limiter, adaptive: true, fetch: simulated, clock, wallClock: () => clock.now() });
    const loop = async () => {
      while (clock.now() < 60_000) await (await api(URL)).arrayBuffer();
    };
    const all = Promise.all(Array.from({ length: 60 }, loop));
    await clock.advance(20_000);
    limiter.setLimit({ limit: 40 });
    await clock.runAll(Infinity);
    await all;
    const ok = simulated.stats.arrivals.filter((a) => a.at >= 30_000 && a.status === 200).length / 30;
    expect(ok, limiter.constructor.name).toBeGreaterThanOrEqual(0.95 * 40);
    expect(simulated.stats.arrivals.filter((a) => a.status === 429)).toHaveLength(0);
  }
});

test("two fetches sharing one AdaptiveRates with different told limits do not reset each other's learned rate (review: 17.8 % refused, 25 set-limit jumps)", async () => {
  const clock = new ManualClock();
  const simulated = createSimulatedFetch({ server: serveModel(new SlidingLogServer({ limit: 5 })), clock, latency: { min: 20, max: 80 }, seed: 1 });
  const changes: { reason: string }[] = [];
  const rates = new AdaptiveRates({ clock, wallClock: () => clock.now(), onChange: (c) => changes.push(c) });
  const common = { adaptive: rates, fetch: simulated, clock, wallClock: () => clock.now(), retry: { limit: 0 } };
  const a = createThrottledFetch({ ...common, limit: 10 });
  const b = createThrottledFetch({ ...common, limit: 20 });
  const loop = (api: typeof a) => async () => {
    while (clock.now() < 60_000) await (await api(URL)).arrayBuffer();
  };
  const all = Promise.all([...Array.from({ length: 10 }, loop(a)), ...Array.from({ length: 10 }, loop(b))]);
  await clock.runAll(Infinity);
  await all;
  const arrivals = simulated.stats.arrivals;
  expect(changes.filter((c) => c.reason === "set-limit")).toHaveLength(0);
  expect(arrivals.filter((x) => x.status === 429).length).toBeLessThanOrEqual(0.03 * arrivals.length);
});

test("told a limit a little too high, the told window and the learned rate do not halve the rate between them (6.1/s against a 10/s server, told 12)", async () => {
  for (const seed of [1, 2]) {
    const clock = new ManualClock();
    const simulated = createSimulatedFetch({ server: serveModel(new TokenBucketServer({ limit: 10, burst: 5 })), clock, latency: { min: 20, max: 80 }, seed });
    const api = createThrottledFetch({ limit: 12, adaptive: true, fetch: simulated, clock, wallClock: () => clock.now() });
    const loop = async () => {
      while (clock.now() < 120_000) await (await api(URL)).arrayBuffer();
    };
    const all = Promise.all(Array.from({ length: 20 }, loop));
    await clock.runAll(Infinity);
    await all;
    const accepted = simulated.stats.arrivals.filter((a) => a.at >= 30_000 && a.at < 120_000 && a.status === 200).length / 90;
    expect(accepted, `seed ${seed}`).toBeGreaterThanOrEqual(9);
  }
});

test("bursts after idle spells can grow the learned rate: 10 calls every 3 s no longer take 3x their time at a learned 16/s", async () => {
  const clock = new ManualClock();
  const simulated = createSimulatedFetch({ server: serveModel(new TokenBucketServer({ limit: 50, burst: 5 })), clock, latency: { min: 20, max: 80 }, seed: 1 });
  const api = createThrottledFetch({ adaptive: true, fetch: simulated, clock, wallClock: () => clock.now() });
  const took: number[] = [];
  const bursts = (async () => {
    for (let b = 0; b < 20; b++) {
      while (clock.now() < b * 3000) await new Promise<void>((resolve) => clock.setTimeout(() => resolve(), b * 3000 - clock.now()));
      const started = clock.now();
      await Promise.all(Array.from({ length: 10 }, async (_, i) => (await api(`${URL}${i}`)).arrayBuffer()));
      took.push(clock.now() - started);
    }
  })();
  await clock.runUntil(bursts, 1e6);
  const later = took.slice(10).sort((a, b) => a - b);
  expect(later[Math.floor(later.length / 2)]!, took.join(", ")).toBeLessThanOrEqual(400); // was 600 ms every time (ideal 200)
  expect(simulated.stats.arrivals.filter((a) => a.status === 429).length).toBeLessThanOrEqual(4);
});
