/**
 * Regressions from a second red-team pass over `adaptive` (2026-11-27, virtual time, the server's
 * own log as the judge): each failed before its fix.
 */
import { expect, test } from "vitest";
import { AdaptiveRates, createThrottledFetch, ManualClock } from "../../src/index.ts";
import { AdaptiveLimiter } from "../../src/adaptive/limiter.ts";
import { MAX_ADAPTIVE_RATE } from "../../src/adaptive/options.ts";
import { createSimulatedFetch } from "../../src/testing.ts";

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
