/**
 * `shouldRetry` answering `{ retryAfter }` (a retry the server timed in a way the fetch does not
 * read itself) and `retry.pauseDimensions` (a server's delay pauses only the named dimensions of a
 * combination): the pure decision, then the loop in virtual time.
 */
import { describe, expect, test } from "vitest";
import { type AttemptOutcome, decideRetry, type RetryInput, type RetryPolicy } from "../../src/http/retry.ts";
import { pauseLimiter } from "../../src/http/throttle.ts";
import { RetryBudget } from "../../src/http/budget.ts";
import { DEFAULTS } from "../../src/defaults.ts";
import { combine, ConcurrencyLimiter, createThrottledFetch, KeyedLimiter, type ThrottleEvent, WindowLimiter } from "../../src/index.ts";
import { ManualClock } from "../../src/testing.ts";

const policy: RetryPolicy = {
  limit: DEFAULTS.retry.limit,
  methods: new Set(DEFAULTS.retry.methods),
  statusCodes: new Set(DEFAULTS.retry.statusCodes),
  maxRetryAfter: DEFAULTS.retry.maxRetryAfter,
  backoff: DEFAULTS.retry.backoff,
};
const response = (status: number, serverDelay?: number): AttemptOutcome => ({ kind: "response", status, serverDelay });
function input(overrides: Partial<RetryInput> & { outcome: AttemptOutcome }): RetryInput {
  return { attempt: 1, idempotent: true, replayable: true, elapsed: 0, totalTimeout: Infinity, policy, random: () => 0.5, ...overrides };
}
const spent = () => new RetryBudget({ ratio: 0, reserve: 0 }); // any untimed retry is refused

describe("decideRetry() with a { retryAfter } verdict", () => {
  test("a 403 (not retryable by rule) is retried as throttled, after the hook's delay, without spending the budget", async () => {
    const decision = await decideRetry(input({ outcome: response(403), budget: spent(), shouldRetry: () => ({ retryAfter: 5000.2 }) }));
    expect(decision).toEqual({ retry: true, delay: 5001, throttled: true, timedByHook: 5001 });
    // The same 403 answered `true` is an untimed retry: the spent budget refuses it.
    expect(await decideRetry(input({ outcome: response(403), budget: spent(), shouldRetry: () => true })))
      .toEqual({ retry: false, reason: "budget" });
  });

  test("a POST is retried too (the server refused it), and the longer of the hook's and the header's delay holds", async () => {
    expect(await decideRetry(input({ idempotent: false, outcome: response(403, 8000), shouldRetry: () => ({ retryAfter: 3000 }) })))
      .toEqual({ retry: true, delay: 8000, throttled: true, timedByHook: 8000 });
  });

  test("past maxRetryAfter it is not retried; the delay hook cannot shorten it", async () => {
    expect(await decideRetry(input({ outcome: response(403), shouldRetry: () => ({ retryAfter: 60_001 }) })))
      .toEqual({ retry: false, reason: "retry-after-too-long", delay: 60_001 });
    expect(await decideRetry(input({ outcome: response(403), shouldRetry: () => ({ retryAfter: 4000 }), delay: () => 0 })))
      .toEqual({ retry: true, delay: 4000, throttled: true, timedByHook: 4000 });
  });

  test("after a network error it acts as `true` with at least that delay (no server timed it: the budget applies)", async () => {
    const error: AttemptOutcome = { kind: "error", timedOut: false };
    expect(await decideRetry(input({ outcome: error, shouldRetry: () => ({ retryAfter: 7000 }) })))
      .toEqual({ retry: true, delay: 7000, throttled: false });
    expect(await decideRetry(input({ outcome: error, budget: spent(), shouldRetry: () => ({ retryAfter: 7000 }) })))
      .toEqual({ retry: false, reason: "budget" });
  });

  test("the hard limits still hold (attempts, streamed body)", async () => {
    expect(await decideRetry(input({ attempt: 3, outcome: response(403), shouldRetry: () => ({ retryAfter: 1 }) })))
      .toEqual({ retry: false, reason: "attempts" });
    expect(await decideRetry(input({ replayable: false, outcome: response(403), shouldRetry: () => ({ retryAfter: 1 }) })))
      .toEqual({ retry: false, reason: "streamed-body" });
  });

  test("a bad verdict is an error naming the hook and the value", async () => {
    for (const [bad, shown] of [[-1, "-1"], [Number.NaN, "NaN"], [Infinity, "Infinity"]] as const) {
      await expect(decideRetry(input({ outcome: response(403), shouldRetry: () => ({ retryAfter: bad }) })))
        .rejects.toThrow(new RangeError(`\`retry.shouldRetry().retryAfter\` must be a non-negative finite number, got ${shown}`));
    }
    for (const bad of ["5", undefined]) {
      await expect(decideRetry(input({ outcome: response(403), shouldRetry: () => ({ retryAfter: bad as unknown as number }) })))
        .rejects.toThrow(/^`retry.shouldRetry\(\).retryAfter` must be a number/);
    }
    await expect(decideRetry(input({ outcome: response(403), shouldRetry: () => null as unknown as boolean })))
      .rejects.toThrow(new TypeError("`retry.shouldRetry` must return true, false, undefined or { retryAfter }, got null"));
  });
});

describe("pauseLimiter()", () => {
  const make = () => {
    const clock = new ManualClock();
    const a = new WindowLimiter({ limit: 10, interval: 1000, clock });
    const shared = new ConcurrencyLimiter({ limit: 10, clock });
    return { a, shared, both: combine({ requests: a, concurrent: shared }) };
  };
  test("pauses only the named dimensions of a named combination", () => {
    const { a, shared, both } = make();
    pauseLimiter(both, 5000, ["requests"]);
    expect(a.stats().pausedUntil).toBe(5000);
    expect(shared.stats().pausedUntil).toBeUndefined();
  });
  test("pauses the whole limiter without names, or when the combination has none of them", () => {
    for (const names of [undefined, ["tokens"]]) {
      const { a, shared, both } = make();
      pauseLimiter(both, 5000, names);
      expect([a.stats().pausedUntil, shared.stats().pausedUntil]).toEqual([5000, 5000]);
    }
    const { a } = make();
    pauseLimiter(a, 5000, ["requests"]); // not a combination
    expect(a.stats().pausedUntil).toBe(5000);
  });
});

/** A server that answers the first request to /first with a 403 (and `headers`), everything else 200; `sent`: [path, time]. */
function refusesFirstOnce(clock: ManualClock, headers: Record<string, string> = {}) {
  const sent: [string, number][] = [];
  let refused = false;
  const fetch = async (input: string | URL | Request) => {
    const path = new URL(String(input instanceof Request ? input.url : input)).pathname;
    sent.push([path, clock.now()]);
    if (path === "/first" && !refused) {
      refused = true;
      return new Response("slow down", { status: 403, headers });
    }
    return new Response("ok");
  };
  return { fetch, sent };
}

describe("the throttled fetch", () => {
  test("a 403 answered { retryAfter } pauses the shared limiter: every caller waits; onThrottle is told; no budget spent", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 100, interval: 1000, clock });
    const { fetch, sent } = refusesFirstOnce(clock, { "x-wait": "5" });
    const throttles: ThrottleEvent[] = [];
    const api = createThrottledFetch({
      limiter, fetch, clock,
      onThrottle: (event) => throttles.push(event),
      retry: {
        budget: new RetryBudget({ ratio: 0, reserve: 0 }),
        shouldRetry: ({ response }) => response?.status === 403 ? { retryAfter: Number(response.headers.get("x-wait")) * 1000 } : undefined,
      },
    });
    const first = api("https://x.test/first");
    await clock.advance(1); // the refusal has arrived and paused the limiter
    const second = api("https://x.test/second");
    await clock.runAll();
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    expect(sent).toEqual([["/first", 0], ["/first", 5000], ["/second", 5000]]);
    expect(throttles.map(({ reason, delay, paused }) => ({ reason, delay, paused }))).toEqual([{ reason: "throttled", delay: 5000, paused: 5000 }]);
  });

  test("with `adaptive` alone (no limit, no limiter) a 403 answered { retryAfter } pauses the key's learned rate: the other callers wait too", async () => {
    const clock = new ManualClock();
    const { fetch, sent } = refusesFirstOnce(clock);
    const throttles: ThrottleEvent[] = [];
    const api = createThrottledFetch({
      adaptive: true, fetch, clock,
      onThrottle: (event) => throttles.push(event),
      retry: { shouldRetry: ({ response }) => response?.status === 403 ? { retryAfter: 5000 } : undefined },
    });
    const first = api("https://x.test/first");
    await clock.advance(1);
    const second = api("https://x.test/second");
    await clock.runAll();
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    expect(sent.find(([path]) => path === "/second")![1]).toBeGreaterThanOrEqual(5000);
    expect(sent.filter(([path]) => path === "/first").map(([, at]) => at)).toEqual([0, 5000]);
    expect(throttles.map(({ reason, delay, paused }) => ({ reason, delay, paused }))).toEqual([{ reason: "throttled", delay: 5000, paused: 5000 }]);
  });

  test("retry.pauseDimensions: a 429 on one key pauses its own budget, not the slots every key shares", async () => {
    for (const pauseDimensions of [["requests"], undefined]) {
      const clock = new ManualClock();
      const shared = new ConcurrencyLimiter({ limit: 10, clock });
      const limiter = new KeyedLimiter<string>({
        create: () => combine({ requests: new WindowLimiter({ limit: 100, interval: 1000, clock }), concurrent: shared }),
        clock,
      });
      const sent: [string, number][] = [];
      let refused = false;
      const fetch = async (input: string | URL | Request) => {
        const path = new URL(String(input instanceof Request ? input.url : input)).pathname;
        sent.push([path, clock.now()]);
        if (path.startsWith("/search") && !refused) {
          refused = true;
          return new Response(null, { status: 429, headers: { "retry-after": "30" } });
        }
        return new Response("ok");
      };
      const api = createThrottledFetch({
        limiter, fetch, clock, key: (r) => new URL(r.url).pathname.split("/")[1]!, cost: { requests: 1, concurrent: 1 },
        retry: pauseDimensions === undefined ? {} : { pauseDimensions },
      });
      const search = api("https://x.test/search/a");
      await clock.advance(1);
      const core = api("https://x.test/core/b");
      const search2 = api("https://x.test/search/c");
      await clock.runAll();
      expect((await Promise.all([search, core, search2])).map((r) => r.status)).toEqual([200, 200, 200]);
      const at = Object.fromEntries(sent.slice(1));
      if (pauseDimensions === undefined) {
        expect(at["/core/b"]).toBe(30_000); // the whole combination paused: the shared slots too
      } else {
        expect(at["/core/b"]).toBe(1); // core goes on
        expect(at["/search/c"]).toBe(30_000); // every caller of search waits
      }
      expect(at["/search/a"]).toBe(30_000);
    }
  });

  test("retry.pauseDimensions is checked", () => {
    for (const bad of [[], "requests", [""], [1]]) {
      expect(() => createThrottledFetch({ limit: 1, retry: { pauseDimensions: bad as string[] } }))
        .toThrow(/`retry.pauseDimensions` must be a non-empty array of dimension names, got/);
    }
  });
});

test("a 429 whose own Retry-After is shorter than the hook's { retryAfter }: one throttle event, told with the lengthened pause, not two (red-team, 2026-11-27: otel counted one 429 twice)", async () => {
  const clock = new ManualClock();
  let n = 0;
  const fetch = async () => (n++ === 0 ? new Response("slow down", { status: 429, headers: { "retry-after": "1" } }) : new Response("ok"));
  const throttles: ThrottleEvent[] = [];
  const limiter = new WindowLimiter({ limit: 10, interval: 1000, clock });
  const api = createThrottledFetch({
    limiter, fetch, clock, onThrottle: (e) => throttles.push(e),
    retry: { shouldRetry: ({ response }) => (response?.status === 429 ? { retryAfter: 1500 } : undefined) },
  });
  const response = await clock.runUntil(api("https://api.example.com/x"));
  expect(response.status).toBe(200);
  expect(throttles).toHaveLength(1);
  // told once, after the hook, with the pause that holds (it was told 1000 / 1000, the response's own)
  expect(throttles.map(({ delay, paused }) => ({ delay, paused }))).toEqual([{ delay: 1500, paused: 1500 }]);
  expect(clock.now()).toBeGreaterThanOrEqual(1500); // the longer wait holds
  expect(limiter.stats().pausedUntil ?? 0).toBe(0); // over by now
});

test("a shouldRetry { retryAfter } past maxRetryAfter is not retried and pauses nothing, but onThrottle is told, as for a 429 whose Retry-After is too long (it was silent)", async () => {
  const clock = new ManualClock();
  let requests = 0;
  const fetch = async () => {
    requests++;
    return new Response("API rate limit exceeded", { status: 403 });
  };
  const events: ThrottleEvent[] = [];
  const api = createThrottledFetch({
    fetch, clock, wallClock: () => clock.now(), limit: 10,
    retry: { maxRetryAfter: 60_000, shouldRetry: ({ response }) => (response?.status === 403 ? { retryAfter: 3_600_000 } : undefined) },
    onThrottle: (event) => events.push(event),
  });
  const response = await clock.runUntil(api("https://api.example.com/repos"));
  expect(response.status).toBe(403);
  expect(requests).toBe(1);
  expect(events.map((e) => [e.reason, e.delay, e.paused])).toEqual([["throttled", 3_600_000, 0]]);
  // Nothing was paused: the next call goes at once.
  const started = clock.now();
  await clock.runUntil(api("https://api.example.com/other"));
  expect(clock.now() - started).toBeLessThan(1000);
});

test("a shouldRetry hook that throws after a 429: the call fails with its error, and the pause the 429 caused is still told, once", async () => {
  const clock = new ManualClock();
  const fetch = async () => new Response("slow down", { status: 429, headers: { "retry-after": "2" } });
  const throttles: ThrottleEvent[] = [];
  const limiter = new WindowLimiter({ limit: 10, interval: 1000, clock });
  const api = createThrottledFetch({
    limiter, fetch, clock, onThrottle: (e) => throttles.push(e),
    retry: { shouldRetry: () => { throw new Error("hook broke"); } },
  });
  await expect(clock.runUntil(api("https://api.example.com/x"))).rejects.toThrow("hook broke");
  expect(throttles.map(({ delay, paused }) => ({ delay, paused }))).toEqual([{ delay: 2000, paused: 2000 }]);
});
