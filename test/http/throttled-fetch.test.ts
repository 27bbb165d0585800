/**
 * createThrottledFetch in virtual time: limiter, server signals, retries, hooks, keys.
 * The fetch is scripted (StubFetch); every time below is virtual ms.
 */
import { afterEach, describe, expect, test, vi } from "vitest";
import { ManualClock } from "../../src/clock.ts";
import { MaxWaitExceededError } from "../../src/errors.ts";
import { KeyedLimiter } from "../../src/limiters/keyed.ts";
import { SmoothLimiter } from "../../src/limiters/smooth.ts";
import { WindowLimiter } from "../../src/limiters/window.ts";
import { combine } from "../../src/limiters/combine.ts";
import { createThrottledFetch } from "../../src/http/throttled-fetch.ts";
import { RetryBudget } from "../../src/http/budget.ts";
import type { ResponseEvent, RetryEvent, ThrottleEvent } from "../../src/http/options.ts";
import { DEFAULTS } from "../../src/defaults.ts";
import { track } from "../helpers.ts";
import { EPOCH0, setup } from "./support/setup.ts";
import { flush, reply, StubFetch } from "./support/stub-fetch.ts";

const URL_A = "https://api.example.com/items";

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("fetch semantics", () => {
  test("resolves with the response for any final status, body intact", async () => {
    for (const status of [200, 201, 204, 301, 400, 404, 409, 422]) {
      const { api, stub } = setup();
      stub.then(() => reply(status, {}, status === 204 ? null : `body ${status}`));
      const response = await api(URL_A);
      expect(response.status).toBe(status);
      if (status !== 204) expect(await response.text()).toBe(`body ${status}`);
      expect(stub.calls).toHaveLength(1);
    }
  });

  test("resolves with the last response when retries run out (500 three times)", async () => {
    const { api, stub, clock } = setup();
    stub.otherwise(() => reply(500));
    const outcome = track(clock, api(URL_A));
    await clock.runAll();
    expect((outcome.value as Response).status).toBe(500);
    expect(stub.calls).toHaveLength(1 + DEFAULTS.retry.limit);
  });

  test("passes method, headers, credentials-free URL and init options through unchanged", async () => {
    const { api, stub } = setup();
    await api(URL_A, { method: "PUT", headers: { "x-a": "1", authorization: "Bearer t" }, body: "x", redirect: "manual" });
    const call = stub.calls[0]!;
    expect(call.method).toBe("PUT");
    expect(call.headers.get("x-a")).toBe("1");
    expect(call.headers.get("authorization")).toBe("Bearer t");
    expect(call.body).toBe("x");
  });

  test("reads globalThis.fetch at call time, so a mock installed after creation is used", async () => {
    const clock = new ManualClock();
    const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 10, clock }), clock });
    const stub = new StubFetch(clock, () => reply(200, {}, "mocked"));
    vi.stubGlobal("fetch", stub.fetch);
    expect(await (await api(URL_A)).text()).toBe("mocked");
  });

  test("rejects with fetch's TypeError for an invalid URL or a GET with a body, taking no permits", async () => {
    const { api, stub, limiter } = setup({ makeLimiter: (clock) => new WindowLimiter({ limit: 1, interval: 1000, clock }) });
    await expect(api("not a url")).rejects.toThrow(TypeError);
    await expect(api(URL_A, { method: "GET", body: "x" })).rejects.toThrow(TypeError);
    expect(stub.calls).toHaveLength(0);
    expect(limiter.tryAcquire()).toBe(0); // the one permit is still there
  });
});

describe("limit/interval shorthand: a private window counted from completion", () => {
  test("the server's documented limit, safe whatever the latency", async () => {
    const clock = new ManualClock();
    const stub = new StubFetch(clock, () => new Promise((resolve) => clock.setTimeout(() => resolve(reply(200)), 50)));
    const api = createThrottledFetch({ limit: 2, interval: 1000, clock, fetch: stub.fetch });
    const all = Promise.all([1, 2, 3, 4].map(() => api(URL_A)));
    await clock.runAll();
    await all;
    expect(stub.times).toEqual([0, 0, 1050, 1050]); // 1000 after each response arrived (50 ms latency)
  });
});

describe("every attempt takes permits", () => {
  test("a retry waits for the limiter like any request (1 per second: retry at 1000, not 500)", async () => {
    const { api, stub, clock } = setup({ makeLimiter: (c) => new WindowLimiter({ limit: 1, interval: 1000, clock: c }) });
    stub.then(() => reply(503));
    const outcome = track(clock, api(URL_A));
    await clock.runAll();
    expect((outcome.value as Response).status).toBe(200);
    expect(stub.times).toEqual([0, 1000]);
  });

  test("callers of several throttled fetches sharing one limiter are paced together", async () => {
    const clock = new ManualClock();
    const stub = new StubFetch(clock);
    const limiter = new SmoothLimiter({ limit: 1, interval: 100, clock });
    const a = createThrottledFetch({ limiter, clock, fetch: stub.fetch });
    const b = createThrottledFetch({ limiter, clock, fetch: stub.fetch });
    const all = Promise.all([a(URL_A), b(URL_A), a(URL_A), b(URL_A)]);
    await clock.runAll();
    await all;
    expect(stub.times).toEqual([0, 100, 200, 300]);
  });

  test("permits(request) sets the cost of each attempt", async () => {
    const { api, stub, clock } = setup({
      makeLimiter: (c) => new WindowLimiter({ limit: 10, interval: 1000, clock: c }),
      permits: (request) => Number(new URL(request.url).searchParams.get("cost") ?? 1),
    });
    const first = track(clock, api(`${URL_A}?cost=7`));
    const second = track(clock, api(`${URL_A}?cost=4`)); // 7 + 4 > 10: waits for the window
    await clock.runAll();
    expect([first.value, second.value].every((r) => (r as Response).ok)).toBe(true);
    expect(stub.times).toEqual([0, 1000]);
  });

  test("maxWait: rejects at once with MaxWaitExceededError when the predicted wait is longer", async () => {
    const { api, stub, clock } = setup({
      makeLimiter: (c) => new WindowLimiter({ limit: 1, interval: 10_000, clock: c }),
      maxWait: 1000,
    });
    await api(URL_A);
    const error = await api(URL_A).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MaxWaitExceededError);
    expect((error as MaxWaitExceededError).retryAfter).toBe(10_000);
    expect(stub.calls).toHaveLength(1);
    expect(clock.pendingTimers).toBe(0);
  });

  test("maxWait: a retry whose wait would be longer is not made; the caller gets the response", async () => {
    const events: ResponseEvent[] = [];
    const { api, stub } = setup({ maxWait: 1000, onResponse: (e) => events.push(e) });
    stub.then(() => reply(429, { "retry-after": "5" }));
    const response = await api(URL_A);
    expect(response.status).toBe(429);
    expect(await response.text()).toBe("status 429");
    expect(stub.calls).toHaveLength(1);
    expect(events.map((e) => e.reason)).toEqual(["max-wait"]);
  });

  test("with countFrom: 'completion' the window counts from when each response arrived", async () => {
    const { api, stub, clock } = setup({
      makeLimiter: (c) => new WindowLimiter({ limit: 1, interval: 1000, clock: c, countFrom: "completion" }),
    });
    // The server takes 300 ms to answer the first request.
    stub.then(() => new Promise<Response>((resolve) => clock.setTimeout(() => resolve(reply(200)), 300)));
    const first = track(clock, api(URL_A));
    const second = track(clock, api(URL_A));
    await clock.runAll();
    expect(first.at).toBe(300);
    expect(stub.times).toEqual([0, 1300]); // 1000 after the response, not after the request
    expect(second.settled).toBe(true);
  });
});

describe("one 429 slows everyone", () => {
  test("a 429 with Retry-After pauses the shared limiter: queued callers wait, keep their order, then resume at the limiter's rate", async () => {
    const { api, stub, clock } = setup({ makeLimiter: (c) => new SmoothLimiter({ limit: 10, interval: 1000, clock: c }) });
    stub.then(() => reply(429, { "retry-after": "3" }));
    const results = ["a", "b", "c"].map((name) => track(clock, api(`${URL_A}/${name}`)));
    await clock.runAll();
    expect(results.every((r) => (r.value as Response).ok)).toBe(true);
    // a at 0 gets 429 (at t=0); b and c were queued (100 ms apart) and hold until 3000; a's retry
    // keeps a's place, ahead of them (README "A retry keeps its place").
    expect(stub.calls.map((c) => [c.at, new URL(c.url).pathname])).toEqual([
      [0, "/items/a"],
      [3000, "/items/a"],
      [3100, "/items/b"],
      [3200, "/items/c"],
    ]);
  });

  test("the retrying caller does not stack a sleep on top of the pause (retry at exactly the server's time)", async () => {
    const { api, stub, clock } = setup({ random: () => 0.999 });
    stub.then(() => reply(429, { "retry-after": "2" }));
    track(clock, api(URL_A));
    await clock.runAll();
    expect(stub.times).toEqual([0, 2000]);
  });

  test("a backoff longer than the server's delay wins (no stacking either way)", async () => {
    const { api, stub, clock } = setup({ retry: { backoff: { base: 10_000 } }, random: () => 0.5 });
    stub.then(() => reply(429, { "retry-after": "2" }));
    track(clock, api(URL_A));
    await clock.runAll();
    expect(stub.times).toEqual([0, 5000]);
  });

  test("a 429 without a delay pauses everyone for the backoff step (1 s, then 2 s)", async () => {
    const { api, stub, clock } = setup();
    stub.then(() => reply(429), () => reply(429));
    const outcome = track(clock, api(URL_A));
    await flush();
    const other = track(clock, api(`${URL_A}/other`)); // arrives during the first pause
    await clock.runAll();
    expect((outcome.value as Response).ok).toBe(true);
    expect(other.settled).toBe(true);
    // The retrying caller queued first (during the pause), so it goes first when the pause ends.
    expect(stub.calls.map((c) => [new URL(c.url).pathname, c.at])).toEqual([
      ["/items", 0], ["/items", 1000], ["/items/other", 1000], ["/items", 3000],
    ]);
  });

  test("503 with Retry-After pauses; 503 without one does not (only the caller backs off)", async () => {
    const withDelay = setup({ makeLimiter: (c) => new SmoothLimiter({ limit: 10, clock: c }) });
    withDelay.stub.then(() => reply(503, { "retry-after": "5" }));
    track(withDelay.clock, withDelay.api(URL_A));
    await flush();
    const other = track(withDelay.clock, withDelay.api(`${URL_A}/other`));
    await withDelay.clock.runAll();
    expect(other.settled).toBe(true);
    expect(withDelay.stub.calls.map((c) => [new URL(c.url).pathname, c.at])).toEqual([
      ["/items", 0], ["/items", 5000], ["/items/other", 5100],
    ]);

    const without = setup({ makeLimiter: (c) => new SmoothLimiter({ limit: 10, clock: c }) });
    without.stub.then(() => reply(503));
    track(without.clock, without.api(URL_A));
    await flush();
    const later = track(without.clock, without.api(`${URL_A}/other`));
    await without.clock.runAll();
    expect(later.settled).toBe(true);
    expect(without.stub.calls.find((c) => c.url.endsWith("/other"))!.at).toBe(100); // limiter pace only
  });

  test("remaining 0 in RateLimit headers pauses until the reset before any 429", async () => {
    const { api, stub, clock } = setup();
    stub.then(() => reply(200, { RateLimit: '"default";r=0;t=4', "RateLimit-Policy": '"default";q=10;w=60' }));
    await api(URL_A);
    const next = track(clock, api(URL_A));
    await clock.runAll();
    expect(next.settled).toBe(true);
    expect(stub.times).toEqual([0, 4000]);
  });

  test("X-RateLimit-Reset as epoch seconds is measured against the Date header (client clock skew does not matter)", async () => {
    // Our wall clock is 1 h fast; the server's Date and reset agree with each other: reset in 7 s.
    const { api, stub, clock } = setup({ wallClock: () => EPOCH0 + 3_600_000 + clock.now() });
    stub.then(() => reply(200, {
      date: new Date(EPOCH0).toUTCString(),
      "x-ratelimit-remaining": "0",
      "x-ratelimit-reset": String(EPOCH0 / 1000 + 7),
    }));
    await api(URL_A);
    track(clock, api(URL_A));
    await clock.runAll();
    expect(stub.times).toEqual([0, 7000]);
  });

  test("rateLimitHeaders: false ignores a reported remaining 0", async () => {
    const { api, stub, clock } = setup({ rateLimitHeaders: false });
    stub.then(() => reply(200, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": "4" }));
    await api(URL_A);
    track(clock, api(URL_A));
    await clock.runAll();
    expect(stub.times).toEqual([0, 0]);
  });

  test("onThrottle sees every throttle and exhausted quota with the delay and the pause", async () => {
    const events: ThrottleEvent[] = [];
    const { api, stub, clock } = setup({ onThrottle: (e) => events.push(e) });
    stub.then(() => reply(429, { "retry-after-ms": "1500" }), () => reply(200, { "ratelimit-remaining": "0", "ratelimit-reset": "2" }));
    track(clock, api(URL_A));
    await clock.runAll();
    expect(events.map(({ attempt, reason, delay, paused, response }) => ({ attempt, reason, delay, paused, status: response.status })))
      .toEqual([
        { attempt: 1, reason: "throttled", delay: 1500, paused: 1500, status: 429 },
        { attempt: 2, reason: "quota-exhausted", delay: 2000, paused: 2000, status: 200 },
      ]);
  });
});

describe("long server delays are not clamped", () => {
  test("Retry-After above maxRetryAfter: no retry, no pause, the caller gets the 429 and the hook sees the delay", async () => {
    const events: ThrottleEvent[] = [];
    const { api, stub, clock } = setup({ onThrottle: (e) => events.push(e) });
    stub.then(() => reply(429, { "retry-after": "3600" }));
    const response = await api(URL_A);
    expect(response.status).toBe(429);
    expect(await response.text()).toBe("status 429"); // body intact, not cancelled
    expect(events).toMatchObject([{ delay: 3_600_000, paused: 0 }]);
    await api(URL_A); // not paused: goes at once
    expect(stub.times).toEqual([0, 0]);
    expect(clock.pendingTimers).toBe(0);
  });

  test("an absurd Retry-After (99999999999999999999) cannot overflow a timer", async () => {
    const { api, stub, clock } = setup({ retry: { maxRetryAfter: 2_147_483_647 } });
    stub.then(() => reply(429, { "retry-after": "99999999999999999999" }));
    const response = await api(URL_A);
    expect(response.status).toBe(429);
    expect(clock.pendingTimers).toBe(0);
  });

  test("raising maxRetryAfter honours the longer delay exactly", async () => {
    const { api, stub, clock } = setup({ retry: { maxRetryAfter: 600_000 } });
    stub.then(() => reply(429, { "retry-after": "300" }));
    track(clock, api(URL_A));
    await clock.runAll();
    expect(stub.times).toEqual([0, 300_000]);
  });
});

describe("the retry rule", () => {
  const cases: Array<[method: string, answer: "network" | number, headers: Record<string, string>, retried: boolean]> = [
    ["GET", 500, {}, true],
    ["GET", 502, {}, true],
    ["GET", 503, {}, true],
    ["GET", 504, {}, true],
    ["GET", 408, {}, true],
    ["GET", 429, {}, true],
    ["GET", "network", {}, true],
    ["PUT", 500, {}, true],
    ["DELETE", "network", {}, true],
    ["HEAD", 503, {}, true],
    ["GET", 501, {}, false],
    ["GET", 404, {}, false],
    ["GET", 403, {}, false],
    ["POST", 500, {}, false],
    ["POST", 502, {}, false],
    ["POST", 503, {}, false],
    ["POST", 504, {}, false],
    ["POST", 408, {}, false],
    ["POST", "network", {}, false],
    ["PATCH", 500, {}, false],
    ["POST", 429, {}, true],
    ["POST", 429, { "retry-after": "1" }, true],
    ["POST", 503, { "retry-after": "1" }, true],
    ["PATCH", 503, { "retry-after-ms": "10" }, true],
  ];
  test.each(cases)("%s answered %s %j → retried: %s", async (method, answer, headers, retried) => {
    const { api, stub, clock } = setup();
    stub.then(() => {
      if (answer === "network") throw new TypeError("fetch failed");
      return reply(answer, headers);
    });
    const outcome = track(clock, api(URL_A, { method, ...(method !== "GET" && method !== "HEAD" && { body: "b" }) }));
    await clock.runAll();
    expect(stub.calls).toHaveLength(retried ? 2 : 1);
    if (retried) expect((outcome.value as Response).status).toBe(200);
    else if (answer === "network") expect(outcome.error).toMatchObject({ name: "TypeError", message: "fetch failed" });
    else expect((outcome.value as Response).status).toBe(answer);
  });

  test("backoff is exponential with full jitter: random × min(cap, base·2ⁿ⁻¹)", async () => {
    const draws = [0.25, 0.5, 0.75];
    const { api, stub, clock } = setup({
      retry: { limit: 3, backoff: { base: 1000, cap: 3000 } },
      random: () => draws.shift()!,
    });
    stub.then(() => reply(500), () => reply(500), () => reply(500));
    track(clock, api(URL_A));
    await clock.runAll();
    // 0.25×1000 = 250; +0.5×2000 = 1250; +0.75×min(3000, 4000) = 3500
    expect(stub.times).toEqual([0, 250, 1250, 3500]);
  });

  test("retry: 0 (or limit 0) makes exactly one attempt", async () => {
    const { api, stub } = setup({ retry: 0 });
    stub.otherwise(() => reply(503));
    expect((await api(URL_A)).status).toBe(503);
    expect(stub.calls).toHaveLength(1);
  });

  test("a Retry-After on a retried 500 is honoured as the delay", async () => {
    const { api, stub, clock } = setup();
    stub.then(() => reply(500, { "retry-after": "7" }));
    track(clock, api(URL_A));
    await clock.runAll();
    expect(stub.times).toEqual([0, 7000]);
  });

  test("lenientRetryAfter (default) reads 1.5 as 1500 ms; strict falls back to backoff", async () => {
    const lenient = setup();
    lenient.stub.then(() => reply(429, { "retry-after": "1.5" }));
    track(lenient.clock, lenient.api(URL_A));
    await lenient.clock.runAll();
    expect(lenient.stub.times).toEqual([0, 1500]);

    const strict = setup({ lenientRetryAfter: false });
    strict.stub.then(() => reply(429, { "retry-after": "1.5" }));
    track(strict.clock, strict.api(URL_A));
    await strict.clock.runAll();
    expect(strict.stub.times).toEqual([0, 1000]); // the backoff step for a 429 without a (valid) delay
  });

  test("a Retry-After HTTP-date is measured against the response's Date header", async () => {
    // Our wall clock is 10 minutes slow; the server says: come back 30 s after my Date.
    const { api, stub, clock } = setup({ wallClock: () => EPOCH0 - 600_000 + clock.now() });
    stub.then(() => reply(503, {
      date: new Date(EPOCH0).toUTCString(),
      "retry-after": new Date(EPOCH0 + 30_000).toUTCString(),
    }));
    track(clock, api(URL_A));
    await clock.runAll();
    expect(stub.times).toEqual([0, 30_000]);
  });

  test("totalTimeout: a retry whose wait would end past the deadline is not made; the caller gets the response", async () => {
    const { api, stub, clock } = setup({ totalTimeout: 5000 });
    stub.then(() => reply(503, { "retry-after": "6" }));
    const response = await api(URL_A);
    expect(response.status).toBe(503);
    expect(stub.calls).toHaveLength(1);
    expect(clock.pendingTimers).toBe(0);
  });
});

describe("hooks", () => {
  test("shouldRetry overrides the rule both ways; undefined keeps it", async () => {
    const { api, stub, clock } = setup({
      retry: {
        shouldRetry: ({ response }) => (response?.status === 404 ? true : response?.status === 503 ? false : undefined),
      },
    });
    stub.then(() => reply(404), () => reply(503), () => reply(500));
    const a = track(clock, api(URL_A)); // 404 → retried → 503 → not retried
    await clock.runAll();
    expect((a.value as Response).status).toBe(503);
    const b = track(clock, api(URL_A)); // 500 → rule: retried
    await clock.runAll();
    expect((b.value as Response).status).toBe(200);
    expect(stub.calls).toHaveLength(4);
  });

  test("shouldRetry cannot lift the attempt limit", async () => {
    const { api, stub, clock } = setup({ retry: { limit: 1, shouldRetry: () => true } });
    stub.otherwise(() => reply(404));
    track(clock, api(URL_A));
    await clock.runAll();
    expect(stub.calls).toHaveLength(2);
  });

  test("delay can lengthen or shorten the backoff, but never the server's delay", async () => {
    const lengthen = setup({ retry: { delay: ({ computed }) => computed + 10_000 } });
    lengthen.stub.then(() => reply(500));
    track(lengthen.clock, lengthen.api(URL_A));
    await lengthen.clock.runAll();
    expect(lengthen.stub.times).toEqual([0, 10_500]);

    const shorten = setup({ retry: { delay: () => 0 } });
    shorten.stub.then(() => reply(500), () => reply(429, { "retry-after": "3" }));
    track(shorten.clock, shorten.api(URL_A));
    await shorten.clock.runAll();
    expect(shorten.stub.times).toEqual([0, 0, 3000]);
  });

  test("the delay hook is told the attempt, response and server delay", async () => {
    const seen: unknown[] = [];
    const { api, stub, clock } = setup({
      retry: { delay: ({ attempt, response, retryAfter, computed }) => void seen.push({ attempt, status: response?.status, retryAfter, computed }) },
    });
    stub.then(() => reply(503, { "retry-after": "2" }));
    track(clock, api(URL_A));
    await clock.runAll();
    expect(seen).toEqual([{ attempt: 1, status: 503, retryAfter: 2000, computed: 2000 }]);
  });

  test("onRetry and onResponse report each attempt; retried bodies are cancelled, the final one is intact", async () => {
    const retries: RetryEvent[] = [];
    const responses: ResponseEvent[] = [];
    const { api, stub, clock } = setup({ onRetry: (e) => retries.push(e), onResponse: (e) => responses.push(e) });
    stub.then(() => reply(502), () => { throw new TypeError("fetch failed"); });
    const outcome = track(clock, api(URL_A));
    await clock.runAll();
    const final = outcome.value as Response;
    expect(retries.map((e) => ({ attempt: e.attempt, delay: e.delay, status: e.response?.status, error: (e.error as Error)?.message })))
      .toEqual([
        { attempt: 1, delay: 500, status: 502, error: undefined },
        { attempt: 2, delay: 1000, status: undefined, error: "fetch failed" },
      ]);
    expect(responses.map((e) => [e.attempt, e.response.status, e.retrying, e.reason])).toEqual([
      [1, 502, true, undefined],
      [3, 200, false, "not-retryable"],
    ]);
    expect(stub.responses[0]!.bodyUsed).toBe(true); // cancelled
    expect(await final.text()).toBe("ok");
  });

  test("a throwing hook rejects the call with its error and frees the response", async () => {
    const boom = new Error("hook failed");
    const { api, stub, clock } = setup({ onResponse: () => { throw boom; } });
    stub.then(() => reply(200));
    await expect(api(URL_A)).rejects.toBe(boom);
    expect(stub.responses[0]!.bodyUsed).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });
});

describe("retry budget", () => {
  test("bounds retries across callers: retries ≤ reserve + ratio × calls", async () => {
    const { api, stub, clock } = setup({ retry: { budget: { ratio: 0.1, reserve: 2 } } });
    stub.otherwise(() => reply(503));
    const calls = Array.from({ length: 20 }, () => track(clock, api(URL_A)));
    await clock.runAll();
    expect(calls.every((c) => (c.value as Response).status === 503)).toBe(true);
    const retries = stub.calls.length - 20;
    expect(retries).toBeLessThanOrEqual(2 + 0.1 * 20);
    expect(retries).toBeGreaterThanOrEqual(2);
  });

  test("throttled retries (429) do not spend the budget", async () => {
    const budget = new RetryBudget({ ratio: 0, reserve: 0 });
    const { api, stub, clock } = setup({ retry: { budget } });
    stub.then(() => reply(429, { "retry-after": "1" }), () => reply(500));
    const outcome = track(clock, api(URL_A));
    await clock.runAll();
    expect(stub.calls).toHaveLength(2); // the 429 was retried; the 500 was not (no budget)
    expect((outcome.value as Response).status).toBe(500);
  });

  test("one RetryBudget instance can be shared by several throttled fetches", async () => {
    const budget = new RetryBudget({ ratio: 0, reserve: 1 });
    const a = setup({ retry: { budget } });
    const b = setup({ retry: { budget } });
    a.stub.otherwise(() => reply(500));
    b.stub.otherwise(() => reply(500));
    track(a.clock, a.api(URL_A));
    await a.clock.runAll();
    track(b.clock, b.api(URL_A));
    await b.clock.runAll();
    expect(a.stub.calls.length + b.stub.calls.length).toBe(3); // one retry between them
  });

  test("budget: false disables it", async () => {
    const { api, stub, clock } = setup({ retry: { budget: false } });
    stub.otherwise(() => reply(500));
    for (let i = 0; i < 20; i++) track(clock, api(URL_A));
    await clock.runAll();
    expect(stub.calls).toHaveLength(60);
  });
});

describe("keyed limits", () => {
  test("a KeyedLimiter gives each origin its own limiter; a 429 pauses only that origin", async () => {
    const clock = new ManualClock();
    const stub = new StubFetch(clock);
    const perOrigin = new KeyedLimiter({ create: () => new SmoothLimiter({ limit: 10, clock }), clock });
    const api = createThrottledFetch({ limiter: perOrigin, clock, fetch: stub.fetch, random: () => 0.5 });
    stub.then(() => reply(429, { "retry-after": "5" }));
    track(clock, api("https://a.example/1"));
    await flush();
    track(clock, api("https://a.example/2"));
    track(clock, api("https://b.example/1"));
    await clock.runAll();
    const at = (url: string) => stub.calls.filter((c) => c.url === url).map((c) => c.at);
    expect(at("https://b.example/1")).toEqual([0]);
    expect(at("https://a.example/1")).toEqual([0, 5000]); // queued first, during the pause
    expect(at("https://a.example/2")).toEqual([5100]);
    expect(perOrigin.size).toBe(2);
  });

  test("key(request) chooses the key, e.g. per endpoint, over an overall limit combined in", async () => {
    const clock = new ManualClock();
    const stub = new StubFetch(clock);
    const overall = new WindowLimiter({ limit: 3, interval: 1000, clock });
    const perPath = new KeyedLimiter({
      create: () => combine(overall, new WindowLimiter({ limit: 1, interval: 1000, clock })),
      clock,
    });
    const api = createThrottledFetch({ limiter: perPath, key: (r) => new URL(r.url).pathname, clock, fetch: stub.fetch });
    const urls = ["/a", "/a", "/b", "/c", "/d"].map((p) => `https://x.example${p}`);
    for (const url of urls) track(clock, api(url));
    await clock.runAll();
    expect(stub.calls.map((c) => [new URL(c.url).pathname, c.at])).toEqual([
      ["/a", 0], ["/b", 0], ["/c", 0], ["/a", 1000], ["/d", 1000],
    ]);
  });
});

describe("options are checked when the fetch is created", () => {
  const clock = new ManualClock();
  const limiter = new SmoothLimiter({ limit: 1, clock });
  test.each<[string, Record<string, unknown>, RegExp]>([
    ["no limiter", {}, /`limiter` must be a Limiter or a KeyedLimiter \(or give `limit`\), got undefined/],
    ["a limiter and a limit", { limiter, limit: 5 }, /give them or `limiter`, not both/],
    ["a bad limit", { limit: 0 }, /`limit` must be a positive integer, got 0/],
    ["a key without a KeyedLimiter", { limiter, key: () => "k" }, /`key` needs a KeyedLimiter/],
    ["a negative retry limit", { limiter, retry: -1 }, /`retry.limit` must be a non-negative integer, got -1/],
    ["a fractional retry limit", { limiter, retry: { limit: 1.5 } }, /`retry.limit` must be a non-negative integer, got 1.5/],
    ["a bad status list", { limiter, retry: { statusCodes: [429, 700] } }, /`retry.statusCodes` must be an array of HTTP statuses/],
    ["a bad method list", { limiter, retry: { methods: "GET" } }, /`retry.methods` must be an array of method names, got "GET"/],
    ["a timeout of 0", { limiter, timeout: 0 }, /`timeout` must be a positive number of ms/],
    ["a timeout beyond timers", { limiter, timeout: 2 ** 31 }, /`timeout` must be a positive number of ms up to 2147483647/],
    ["a negative totalTimeout", { limiter, totalTimeout: -5 }, /`totalTimeout` must be a positive number of ms up to 2147483647, or Infinity, got -5/],
    ["a negative timeout (one message for every bad value: it said non-negative, then 0 was refused)", { limiter, timeout: -1 }, /`timeout` must be a positive number of ms up to 2147483647, or Infinity, got -1/],
    ["a method that is no HTTP token", { limiter, retry: { methods: ["GE T"] } }, /`retry.methods` must be an array of method names, got an array \["GE T"\]/],
    ["a NaN maxRetryAfter", { limiter, retry: { maxRetryAfter: NaN } }, /`retry.maxRetryAfter` must be a non-negative finite number, got NaN/],
    ["zero permits", { limiter, permits: 0 }, /`permits` must be a positive integer, got 0/],
    ["a non-function fetch", { limiter, fetch: "fetch" }, /`fetch` must be a function, got "fetch"/],
    ["a bad budget ratio", { limiter, retry: { budget: { ratio: -1 } } }, /`ratio` must be a non-negative finite number, got -1/],
    ["a bad idempotency header", { limiter, idempotencyKey: { header: "bad header" } }, /`idempotencyKey.header` must be a header name/],
    ["a non-boolean lenientRetryAfter", { limiter, lenientRetryAfter: "yes" }, /`lenientRetryAfter` must be a boolean, got "yes"/],
  ])("%s", (_name, options, message) => {
    expect(() => createThrottledFetch(options as never)).toThrow(message);
  });

  test("the clock defaults to the limiter's", async () => {
    const own = new ManualClock();
    const stub = new StubFetch(own);
    stub.then(() => reply(503));
    const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 10, clock: own }), fetch: stub.fetch, random: () => 0.5 });
    const outcome = track(own, api(URL_A));
    await own.runAll(); // the backoff ran on the limiter's virtual clock
    expect((outcome.value as Response).ok).toBe(true);
    expect(stub.times).toEqual([0, 500]);
  });

  test("a non-object options value is a TypeError", () => {
    expect(() => createThrottledFetch(5 as never)).toThrow(TypeError);
  });
});
