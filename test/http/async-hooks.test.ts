/**
 * Hooks written as `async` functions (TypeScript accepts them where `void` is expected). An event
 * hook's promise is awaited and its rejection fails the call, as a throw does; a hook that must
 * answer a value (`key`, `permits`, `priority`, `retry.delay`) and returns a promise is a TypeError —
 * and in no case is the hook's own rejection left unhandled (red-team, 2026-11-27: it was, and with
 * Node's default settings the process exited with code 1, leaving 9 of 10 calls unfinished).
 */
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { createThrottledFetch, KeyedLimiter, ManualClock, type ThrottledFetchOptions, WindowLimiter } from "../../src/index.ts";

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled.length = 0;
  process.on("unhandledRejection", onUnhandled);
});
afterEach(() => {
  process.off("unhandledRejection", onUnhandled);
});

/** A server that throttles the first request (429, Retry-After: 1), then answers 200. */
function server() {
  let n = 0;
  const seen: string[] = [];
  const fetch = async () => (n++ === 0 ? new Response("slow down", { status: 429, headers: { "retry-after": "1" } }) : new Response("ok"));
  return { fetch, seen };
}
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe("async event hooks are awaited; a rejection fails the call", () => {
  test.each(["onThrottle", "onRetry", "onResponse"] as const)("%s", async (hook) => {
    const clock = new ManualClock();
    const { fetch } = server();
    const order: string[] = [];
    const api = createThrottledFetch({
      limit: 10, fetch, clock,
      [hook]: async () => {
        await Promise.resolve();
        order.push(hook);
        throw new Error(`${hook} broke`);
      },
    } as ThrottledFetchOptions);
    await expect(clock.runUntil(api("https://api.example.com/x"))).rejects.toThrow(`${hook} broke`);
    expect(order).toEqual([hook]); // once: the call stopped there
    await settle();
    expect(unhandled).toEqual([]);
  });

  test("an async onRetry that resolves is waited for before the retry: its work happens first", async () => {
    const clock = new ManualClock();
    const { fetch } = server();
    const order: string[] = [];
    const api = createThrottledFetch({
      limit: 10, clock,
      fetch: async (input) => {
        order.push("request");
        return fetch();
      },
      onRetry: async () => {
        await new Promise((resolve) => setTimeout(resolve, 5)); // e.g. a metrics call
        order.push("onRetry done");
      },
    });
    expect((await clock.runUntil(api("https://api.example.com/x"))).status).toBe(200);
    expect(order).toEqual(["request", "onRetry done", "request"]);
  });
});

describe("hooks that must answer a value: a promise is a TypeError naming the hook, and its rejection is handled", () => {
  const cases: Array<[string, Partial<ThrottledFetchOptions>, RegExp]> = [
    ["key", { limiter: new KeyedLimiter({ create: () => new WindowLimiter({ limit: 10, interval: 1000 }) }), key: (async () => { throw new Error("key broke"); }) as never }, /`key` must return a string, got a Promise/],
    ["permits", { limit: 10, permits: (async () => { throw new Error("permits broke"); }) as never }, /`permits` must be a number, got a Promise/],
    ["priority", { limit: 10, priority: (async () => { throw new Error("priority broke"); }) as never }, /`priority` must return a finite number, got a Promise/],
    ["retry.delay", { limit: 10, retry: { delay: (async () => { throw new Error("delay broke"); }) as never } }, /`retry.delay` must return a non-negative finite number of ms or undefined, got a Promise/],
  ];
  test.each(cases)("%s", async (_name, options, message) => {
    const clock = new ManualClock();
    const { fetch } = server();
    const api = createThrottledFetch({ ...options, fetch, clock } as ThrottledFetchOptions);
    await expect(clock.runUntil(api("https://api.example.com/x"))).rejects.toThrow(message);
    await settle();
    expect(unhandled).toEqual([]);
  });
});

describe("an async hook is not waited for past the call's signal (review, 2026-11-27: a stalled metrics call held the call for good)", () => {
  test.each(["onThrottle", "onRetry", "onResponse"] as const)("%s that never settles: totalTimeout ends the call on time; the caller's abort too", async (hook) => {
    for (const end of ["totalTimeout", "abort"] as const) {
      const clock = new ManualClock();
      const { fetch } = server();
      const controller = new AbortController();
      const api = createThrottledFetch({
        limit: 10, fetch, clock,
        ...(end === "totalTimeout" ? { totalTimeout: 2000 } : {}), // room for the 1-s retry onRetry announces
        [hook]: () => new Promise(() => {}),
      } as ThrottledFetchOptions);
      const call = api("https://api.example.com/x", { signal: controller.signal });
      if (end === "abort") clock.setTimeout(() => controller.abort(new Error("caller left")), 300);
      const error = await clock.runUntil(call).then(() => undefined, (e: unknown) => e);
      expect({ hook, end, at: clock.now() }).toEqual({ hook, end, at: end === "abort" ? 300 : 2000 });
      if (end === "abort") expect(String(error)).toContain("caller left");
      else expect((error as Error).name).toBe("TimeoutError");
    }
  });
});

test("the hooks after a slow async onThrottle are told in the same turn, then all are awaited: a profile's onResponse pauses before a metrics call ends (review, 2026-11-27)", async () => {
  const clock = new ManualClock();
  const { fetch } = server();
  const told: string[] = [];
  const api = createThrottledFetch({
    limit: 10, fetch, clock,
    onThrottle: () => {
      told.push(`onThrottle ${clock.now()}`);
      return new Promise<void>((resolve) => clock.setTimeout(resolve, 2000)); // a slow metrics call
    },
    onResponse: ({ response }) => void told.push(`onResponse ${response.status} ${clock.now()}`),
    onRetry: () => void told.push(`onRetry ${clock.now()}`),
  });
  expect((await clock.runUntil(api("https://api.example.com/x"))).status).toBe(200);
  expect(told).toEqual(["onThrottle 0", "onResponse 429 0", "onRetry 0", "onResponse 200 2000"]);
});

test.each([
  ["onResponse", { onResponse: () => { throw new Error("onResponse threw"); } }],
  ["onRetry", { onRetry: () => { throw new Error("onRetry threw"); } }],
] as const)("a sync throw in %s after an async onThrottle that rejects later: the throw fails the call, nothing unhandled (review 3)", async (name, hook) => {
  const clock = new ManualClock();
  const { fetch } = server();
  const api = createThrottledFetch({
    limit: 10, fetch, clock, ...hook,
    onThrottle: () => new Promise<void>((_, reject) => clock.setTimeout(() => reject(new Error("metrics down")), 50)),
  });
  await expect(clock.runUntil(api("https://api.example.com/x"))).rejects.toThrow(`${name} threw`);
  await clock.advance(100);
  await settle();
  expect(unhandled).toEqual([]);
});
