/**
 * A misspelt option is an error, not a silent default: every options bag read once (constructors,
 * factories, `setLimit`) names the unknown key and, when one is close, the option meant.
 */
import { describe, expect, test } from "vitest";
import {
  AdaptiveController,
  AdaptiveLimiter,
  AdaptiveRates,
  combine,
  CombinedLimiter,
  ConcurrencyLimiter,
  createThrottledFetch,
  FixedWindowLimiter,
  KeyedLimiter,
  RetryBudget,
  SlidingCounterLimiter,
  SmoothLimiter,
  WindowLimiter,
} from "../src/index.ts";
import { throttle } from "../src/undici.ts";
import { openaiHandler } from "../src/testing-msw.ts";
import { createSimulatedFetch, ManualClock as Clock, SlidingLogServer } from "../src/testing.ts";
import { RedisCombinedLimiter, RedisSmoothLimiter, RedisStore, RedisWindowLimiter } from "../src/redis.ts";

const fetchStub = async () => new Response("ok");
// Typed loosely on purpose: a JavaScript caller (or an object built elsewhere) reaches these at run time.
const loose = <T>(value: Record<string, unknown>) => value as T;

// A store checks its client's shape and calls Redis only when a limiter asks: none of these does.
const client = { evalsha: async () => null, eval: async () => null } as never;
const store = new RedisStore({ client, name: "typos" });

const cases: [what: string, call: () => unknown, message: string][] = [
  ["SlidingLogServer (sluice/testing)", () => new SlidingLogServer(loose({ limit: 5, intervall: 1000 })), "`intervall` is not an option of SlidingLogServer (did you mean `interval`?)"],
  ["openaiHandler (sluice/testing/msw): names the function called, not createSimulatedFetch", () => openaiHandler({ all: () => null } as never, loose({ latncy: 1 })), "`latncy` is not an option of openaiHandler() (did you mean `latency`?)"],
  ["createSimulatedFetch (sluice/testing)", () => createSimulatedFetch(loose({ server: () => ({ status: 200 }), clock: new Clock(), latancy: { min: 1, max: 2 } })), "`latancy` is not an option of createSimulatedFetch() (did you mean `latency`?)"],
  ["RedisStore", () => new RedisStore(loose({ client, name: "x", timout: 100 })), "`timout` is not an option of RedisStore (did you mean `timeout`?)"],
  ["RedisSmoothLimiter", () => new RedisSmoothLimiter(loose({ store, key: "a", limit: 5, intervall: 1000 })), "`intervall` is not an option of RedisSmoothLimiter (did you mean `interval`?)"],
  ["RedisWindowLimiter", () => new RedisWindowLimiter(loose({ store, key: "a", limit: 5, interval: 1000, failur: "closed" })), "`failur` is not an option of RedisWindowLimiter (did you mean `failure`?)"],
  ["RedisCombinedLimiter", () => new RedisCombinedLimiter([new RedisWindowLimiter({ store, key: "b", limit: 5, interval: 1000 })], loose({ maxWaitt: 1 })), "`maxWaitt` is not an option of RedisCombinedLimiter (did you mean `maxWait`?)"],
  ["createThrottledFetch", () => createThrottledFetch(loose({ limit: 5, intervall: 1000, fetch: fetchStub })), "`intervall` is not an option of createThrottledFetch() (did you mean `interval`?)"],
  ["createThrottledFetch, far from any option", () => createThrottledFetch(loose({ limit: 5, fetch: fetchStub, colour: "red" })), "`colour` is not an option of createThrottledFetch()"],
  ["retry", () => createThrottledFetch(loose({ limit: 5, retry: { limt: 2 } })), "`limt` is not an option of `retry` (did you mean `limit`?)"],
  ["retry.backoff", () => createThrottledFetch(loose({ limit: 5, retry: { backoff: { bse: 10 } } })), "`bse` is not an option of `retry.backoff` (did you mean `base`?)"],
  ["idempotencyKey", () => createThrottledFetch(loose({ limit: 5, idempotencyKey: { headr: "X-Id" } })), "`headr` is not an option of `idempotencyKey` (did you mean `header`?)"],
  ["adaptive, through the fetch", () => createThrottledFetch(loose({ adaptive: { decreese: 0.5 } })), "`decreese` is not an option of `adaptive` (did you mean `decrease`?)"],
  ["throttle()", () => throttle(loose({ limit: 5, maxRetryAftr: 1000 })), "`maxRetryAftr` is not an option of throttle() (did you mean `maxRetryAfter`?)"],
  ["throttle() backoff", () => throttle(loose({ limit: 5, backoff: { capp: 10 } })), "`capp` is not an option of `backoff` (did you mean `cap`?)"],
  ["throttle() adaptive", () => throttle(loose({ adaptive: { minrate: 1 } })), "`minrate` is not an option of `adaptive` (did you mean `minRate`?)"],
  ["SmoothLimiter", () => new SmoothLimiter(loose({ limit: 5, brust: 2 })), "`brust` is not an option of SmoothLimiter (did you mean `burst`?)"],
  ["WindowLimiter", () => new WindowLimiter(loose({ limit: 5, interval: 1000, countfrom: "completion" })), "`countfrom` is not an option of WindowLimiter (did you mean `countFrom`?)"],
  ["FixedWindowLimiter", () => new FixedWindowLimiter(loose({ limit: 5, interval: 1000, maxWiat: 10 })), "`maxWiat` is not an option of FixedWindowLimiter (did you mean `maxWait`?)"],
  ["SlidingCounterLimiter", () => new SlidingCounterLimiter(loose({ limit: 5, interval: 1000, clok: undefined })), "`clok` is not an option of SlidingCounterLimiter (did you mean `clock`?)"],
  ["ConcurrencyLimiter", () => new ConcurrencyLimiter(loose({ limit: 5, maxqueue: 10 })), "`maxqueue` is not an option of ConcurrencyLimiter (did you mean `maxQueue`?)"],
  ["KeyedLimiter", () => new KeyedLimiter(loose<never>({ create: () => new SmoothLimiter({ limit: 1 }), maxkeys: 10 })), "`maxkeys` is not an option of KeyedLimiter (did you mean `maxKeys`?)"],
  ["CombinedLimiter", () => new CombinedLimiter([new SmoothLimiter({ limit: 1 })], loose({ priorityAgeing: 1000 })), "`priorityAgeing` is not an option of CombinedLimiter (did you mean `priorityAging`?)"],
  ["setLimit()", () => new WindowLimiter({ limit: 5, interval: 1000 }).setLimit(loose({ limit: 5, intervl: 500 })), "`intervl` is not an option of setLimit() (did you mean `interval`?)"],
  ["SmoothLimiter setLimit()", () => new SmoothLimiter({ limit: 5 }).setLimit(loose({ limitt: 5 })), "`limitt` is not an option of setLimit() (did you mean `limit`?)"],
  ["AdaptiveLimiter", () => new AdaptiveLimiter(loose({ maxrate: 10 })), "`maxrate` is not an option of AdaptiveLimiter (did you mean `maxRate`?)"],
  ["AdaptiveLimiter setLimit()", () => new AdaptiveLimiter().setLimit(loose({ limit: 5, intreval: 1000 })), "`intreval` is not an option of setLimit() (did you mean `interval`?)"],
  ["AdaptiveController", () => new AdaptiveController(loose({ probeIntervall: 500 }), 0), "`probeIntervall` is not an option of AdaptiveController (did you mean `probeInterval`?)"],
  ["AdaptiveRates", () => new AdaptiveRates(loose({ onchange: () => {} })), "`onchange` is not an option of `adaptive` (did you mean `onChange`?)"],
  ["RetryBudget", () => new RetryBudget(loose({ ratio: 0.1, reserv: 2 })), "`reserv` is not an option of RetryBudget (did you mean `reserve`?)"],
];

describe("a misspelt option throws a TypeError naming it (and the option meant, when one is close)", () => {
  test.each(cases)("%s", (_what, call, message) => {
    expect(call).toThrow(TypeError);
    expect(call).toThrow(message);
  });

  test("combine({}) names what is missing", () => {
    expect(() => combine({} as never)).toThrow("`limiters` must name at least one limiter (`combine({ requests, tokens })`), got an empty object");
  });

  test("every option each entry documents is still accepted (a typo check that rejected one would break users)", () => {
    const noop = () => {};
    expect(() => createThrottledFetch({
      limit: 5, interval: 1000, adaptive: { maxRate: 5, initialRate: 1, minRate: 0.5, decrease: 0.8, probeInterval: 500, limitWindow: 60_000, onChange: noop },
      fetch: fetchStub, permits: 1, maxWait: 10_000, timeout: 5000, totalTimeout: 20_000, lenientRetryAfter: true,
      rateLimitHeaders: true, idempotencyKey: { header: "X-Id", generate: () => "k" }, onThrottle: noop, onRetry: noop, onResponse: noop,
      wallClock: Date.now, random: Math.random, priority: () => 0,
      retry: { limit: 2, methods: ["GET"], statusCodes: [429], maxRetryAfter: 1000, backoff: { base: 10, cap: 100 }, budget: { ratio: 0.1, reserve: 2 }, shouldRetry: () => undefined, pauseDimensions: ["requests"], delay: () => undefined },
    })).not.toThrow();
    expect(() => throttle({
      limit: 5, interval: 1000, adaptive: true, maxWait: 1000, respectServer: true, maxRetryAfter: 1000, backoff: { base: 1, cap: 2 },
      lenientRetryAfter: true, rateLimitHeaders: true, onThrottle: noop, wallClock: Date.now, permits: 1,
    })).not.toThrow();
    expect(() => new SmoothLimiter({ limit: 5, interval: 1000, burst: 2, initialPermits: 1, maxQueue: 10, maxWait: 100, priorityAging: 1000 })).not.toThrow();
    expect(() => new AdaptiveLimiter({ maxRate: 5, onChange: noop, wallClock: Date.now, maxQueue: 5, maxWait: 10, priorityAging: 100 })).not.toThrow();
  });
});
