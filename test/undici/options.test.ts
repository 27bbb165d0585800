/**
 * throttle()'s options: invalid ones throw when the interceptor is made, naming the option and value.
 */
import { describe, expect, test } from "vitest";
import { KeyedLimiter, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import { fakeDispatcher, flush, get, RecordingHandler } from "./support/fake-dispatch.ts";
import { throttle, type ThrottleOptions } from "../../src/undici.ts";

const limiter = new SmoothLimiter({ limit: 10 });

describe("throttle() options", () => {
  test.each<[string, unknown, typeof TypeError | typeof RangeError, RegExp]>([
    ["no options", undefined, TypeError, /`limiter` must be a Limiter/],
    ["options that are not an object", "fast", TypeError, /`options` must be an object/],
    ["no limiter", {}, TypeError, /`limiter` must be a Limiter or a KeyedLimiter \(or give `limit`\), got undefined/],
    ["a limiter that is not one", { limiter: {} }, TypeError, /`limiter` must be a Limiter.*got an object/],
    ["limiter and limit", { limiter, limit: 5 }, TypeError, /give them or `limiter`, not both/],
    ["a bad limit", { limit: -3 }, RangeError, /`limit` must be a positive integer, got -3/],
    ["key without a KeyedLimiter", { limiter, key: () => "k" }, TypeError, /`key` needs a KeyedLimiter/],
    ["a key that is not a function", { limiter: new KeyedLimiter({ create: () => limiter }), key: "origin" }, TypeError, /`key` must be a function/],
    ["permits 0", { limiter, permits: 0 }, RangeError, /`permits` must be a positive integer, got 0/],
    ["permits 1.5", { limiter, permits: 1.5 }, RangeError, /`permits` must be a positive integer, got 1.5/],
    ["permits as a string", { limiter, permits: "1" }, TypeError, /`permits` must be a number, got "1"/],
    ["a negative maxWait", { limiter, maxWait: -1 }, RangeError, /`maxWait` must be a non-negative number or Infinity, got -1/],
    ["respectServer as a string", { limiter, respectServer: "yes" }, TypeError, /`respectServer` must be a boolean, got "yes"/],
    ["a negative maxRetryAfter", { limiter, maxRetryAfter: -5 }, RangeError, /`maxRetryAfter` must be a non-negative finite number, got -5/],
    ["an endless maxRetryAfter", { limiter, maxRetryAfter: Infinity }, RangeError, /`maxRetryAfter` must be a non-negative finite number, got Infinity/],
    ["a maxRetryAfter beyond timers", { limiter, maxRetryAfter: 2 ** 31 }, RangeError, /`maxRetryAfter` must be at most 2147483647 ms/],
    ["a negative backoff.base", { limiter, backoff: { base: -1 } }, RangeError, /`backoff.base` must be a non-negative finite number, got -1/],
    ["onThrottle not a function", { limiter, onThrottle: 1 }, TypeError, /`onThrottle` must be a function/],
    ["rateLimitHeaders as 1", { limiter, rateLimitHeaders: 1 }, TypeError, /`rateLimitHeaders` must be a boolean, got 1/],
  ])("%s", (_name, options, ErrorClass, message) => {
    expect(() => throttle(options as ThrottleOptions)).toThrow(ErrorClass);
    expect(() => throttle(options as ThrottleOptions)).toThrow(message);
  });

  test("`limit`/`interval` make a private window limiter counted from completion", () => {
    expect(() => throttle({ limit: 10, interval: 500 })).not.toThrow();
  });
});

describe("async key or permits functions (review, 2026-11-27)", () => {
  test.each(["key", "permits"] as const)("an async %s that rejects: the request fails with the TypeError naming it, and the function's own rejection is handled", async (name) => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const { dispatch } = fakeDispatcher();
      const failing = (async () => {
        throw new Error(`${name} lookup failed`);
      }) as never;
      const options = name === "key"
        ? { limiter: new KeyedLimiter<string>({ create: () => new WindowLimiter({ limit: 10, interval: 1000 }) }), key: failing }
        : { limit: 10, permits: failing };
      const handler = new RecordingHandler();
      throttle(options)(dispatch)(get(), handler as never);
      await flush();
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(String(handler.error)).toMatch(name === "key" ? /`key` must return a string, got a Promise/ : /`permits` must be .*got a Promise/);
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});
