/**
 * The interceptor's contract, step by step in virtual time, against a fake next dispatcher (the test
 * plays undici's part) and a caller's handler that is a class with a private field.
 */
import { describe, expect, test } from "vitest";
import {
  combine,
  ConcurrencyLimiter,
  FixedWindowLimiter,
  KeyedLimiter,
  type Limiter,
  ManualClock,
  MaxWaitExceededError,
  QueueFullError,
  SmoothLimiter,
  WindowLimiter,
} from "../../src/index.ts";
import { pauseFor, readServerSignals } from "../../src/http/throttle.ts";
import { readsSignalLike } from "../../src/limiters/signals.ts";
import { RedisCombinedLimiter, RedisSmoothLimiter, RedisWindowLimiter } from "../../src/integrations/redis/limiters.ts";
import { type DispatchThrottleEvent, throttle, type ThrottleOptions } from "../../src/undici.ts";
import { fakeDispatcher, flush, get, RecordingHandler } from "./support/fake-dispatch.ts";

const NOW = Date.UTC(2025, 0, 15, 12, 0, 0);

function setup(options: ThrottleOptions, autoStart = true) {
  const fake = fakeDispatcher(autoStart);
  const dispatch = throttle({ wallClock: () => NOW, ...options })(fake.dispatch);
  const send = (request = get()) => {
    const handler = new RecordingHandler();
    dispatch(request, handler as never);
    return handler;
  };
  return { fake, dispatch, send };
}

describe("pacing", () => {
  test("each request takes its permits before it is sent: the second waits for the limiter", async () => {
    const clock = new ManualClock();
    // Built counting from the grant: the interceptor still counts its slot from the response.
    const { fake, send } = setup({ limiter: new WindowLimiter({ limit: 1, interval: 1000, clock }) });
    send();
    send();
    await flush();
    expect(fake.sent).toHaveLength(1);
    await clock.advance(5000); // no response yet: the slot is still in flight
    expect(fake.sent).toHaveLength(1);
    fake.sent[0]!.respond(200);
    await clock.advance(999);
    expect(fake.sent).toHaveLength(1);
    await clock.advance(1);
    expect(fake.sent).toHaveLength(2);
  });

  test("a window counted from completion holds the permit until the response headers arrive", async () => {
    const clock = new ManualClock();
    const { fake, send } = setup({ limiter: new WindowLimiter({ limit: 1, interval: 1000, clock, countFrom: "completion" }) });
    send();
    send();
    await flush();
    await clock.advance(5000); // the first response is slow: its slot is still in flight
    expect(fake.sent).toHaveLength(1);
    fake.sent[0]!.respond(200);
    await clock.advance(999);
    expect(fake.sent).toHaveLength(1);
    await clock.advance(1);
    expect(fake.sent).toHaveLength(2);
  });

  test("`permits` is a number or a function of undici's dispatch options", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 10, interval: 1000, clock });
    const { fake, send } = setup({ limiter, permits: (request) => (request.method === "POST" ? 4 : 1) });
    send({ origin: "https://a.example", path: "/", method: "POST" });
    send();
    await flush();
    expect(fake.sent).toHaveLength(2);
    expect(limiter.tryAcquire(6)).toBeGreaterThan(0); // 4 + 1 taken of 10
    expect(limiter.tryAcquire(5)).toBe(0);
  });

  test("with a KeyedLimiter, each origin has its own limiter (default key: the origin)", async () => {
    const clock = new ManualClock();
    const keyed = new KeyedLimiter({ create: () => new WindowLimiter({ limit: 1, interval: 1000, clock }), clock });
    const { fake, send } = setup({ limiter: keyed });
    send(get("https://a.example"));
    send(get("https://b.example:443/ignored-path"));
    send(get("https://a.example"));
    await flush();
    expect(fake.sent.map((s) => s.request.origin)).toEqual(["https://a.example", "https://b.example:443/ignored-path"]);
    expect(keyed.size).toBe(2); // "https://b.example" — the port and path normalised away
  });
});

describe("abort and refusal", () => {
  test("the caller is started at once; aborting while queued fails it with the reason and gives the permits back", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const { fake, send } = setup({ limiter });
    send();
    const queued = send();
    expect(queued.log).toEqual(["start"]); // synchronously, before any permit
    await flush();
    const reason = new Error("user cancelled");
    queued.controller!.abort(reason);
    await flush();
    expect(queued.log).toEqual(["start", "error"]);
    expect(queued.error).toBe(reason);
    expect(queued.controller!.aborted).toBe(true);
    expect(limiter.queued).toBe(0);
    fake.sent[0]!.respond(200);
    await clock.advance(1000);
    expect(fake.sent).toHaveLength(1); // never sent
    expect(limiter.tryAcquire()).toBe(0); // and the next window's permit is still there
  });

  test("a custom Limiter gets a real AbortSignal (it may hand it to AbortSignal.any), and an abort while queued reaches it", async () => {
    // The README's Limiter interface types the option as an AbortSignal: a limiter of the user's
    // own may rely on that (AbortSignal.any, instanceof). Only sluice's own limiters are handed the
    // lighter signal-like controller.
    const seen: unknown[] = [];
    const gate = new WindowLimiter({ limit: 1, interval: 1000, clock: new ManualClock() });
    const custom: Limiter = {
      acquire: (permits, options) => gate.acquire(permits, options),
      tryAcquire: (permits) => gate.tryAcquire(permits),
      pause: (ms) => gate.pause(ms),
      schedule: (task, options) => {
        seen.push(options?.signal);
        const signal = AbortSignal.any([options!.signal!]); // throws a TypeError for anything but an AbortSignal
        return gate.schedule(task, { ...options, signal });
      },
    };
    const { fake, send } = setup({ limiter: custom });
    const first = send();
    const queued = send();
    await flush();
    expect(first.error).toBeUndefined();
    expect(fake.sent).toHaveLength(1);
    expect(seen).toHaveLength(2);
    for (const signal of seen) expect(signal).toBeInstanceOf(AbortSignal);
    const reason = new Error("user cancelled");
    queued.controller!.abort(reason);
    await flush();
    expect((seen[1] as AbortSignal).aborted).toBe(true);
    expect((seen[1] as AbortSignal).reason).toBe(reason);
    expect(queued.error).toBe(reason);
    expect(gate.queued).toBe(0);
    expect(fake.sent).toHaveLength(1);
  });

  test("sluice's own limiters, single, keyed and combined with slots, are handed the request's controller as their signal (no AbortController per request)", async () => {
    const clock = new ManualClock();
    const limiters = [
      new WindowLimiter({ limit: 1, interval: 1000, clock }),
      new SmoothLimiter({ limit: 10, clock }),
    ];
    for (const limiter of limiters) {
      const schedule = limiter.schedule.bind(limiter);
      const signals: unknown[] = [];
      limiter.schedule = ((task: () => unknown, options?: { signal?: AbortSignal }) => {
        signals.push(options?.signal);
        return schedule(task as never, options as never);
      }) as typeof limiter.schedule;
      const { send } = setup({ limiter });
      const caller = send();
      await flush();
      expect(signals).toHaveLength(1);
      expect(signals[0]).toBe(caller.controller);
    }
    // Every built-in family carries the brand, combinations and the Redis limiters included.
    for (const limiter of [combine(new WindowLimiter({ limit: 1, interval: 1000, clock }), new ConcurrencyLimiter({ limit: 1, clock })), new FixedWindowLimiter({ limit: 1, interval: 1000, clock })]) {
      expect(readsSignalLike(limiter)).toBe(true);
    }
    for (const Redis of [RedisSmoothLimiter, RedisWindowLimiter, RedisCombinedLimiter]) expect(readsSignalLike(Redis.prototype)).toBe(true);
    expect(readsSignalLike({ schedule() {}, acquire() {}, tryAcquire() {}, pause() {} })).toBe(false);
  });

  test("abort without a reason fails with an AbortError", async () => {
    const clock = new ManualClock();
    const { send } = setup({ limiter: new WindowLimiter({ limit: 1, interval: 1000, clock }) });
    send();
    const queued = send();
    queued.controller!.abort();
    await flush();
    expect(queued.error).toMatchObject({ name: "AbortError" });
  });

  test("an abort between the grant and undici's start reaches undici's controller when it starts", async () => {
    const { fake, send } = setup({ limiter: new SmoothLimiter({ limit: 10, clock: new ManualClock() }) }, false);
    const caller = send();
    await flush();
    expect(fake.sent).toHaveLength(1); // dispatched, not yet started by undici
    const reason = new Error("late");
    caller.controller!.abort(reason);
    fake.sent[0]!.start();
    expect(fake.sent[0]!.controller.aborted).toBe(true);
    expect(fake.sent[0]!.controller.reason).toBe(reason);
    await flush();
    expect(caller.log).toEqual(["start", "error"]); // once: undici's error, not a second one of ours
    expect(caller.error).toBe(reason);
  });

  test.each([
    ["maxWait", { maxWait: 100 }, MaxWaitExceededError],
    ["maxQueue", {}, QueueFullError],
  ])("a limiter refusal (%s) fails the request, reported as aborted so undici's retry interceptor does not retry it", async (_name, extra, ErrorClass) => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock, maxQueue: 0 });
    const { fake, send } = setup({ limiter, ...extra });
    send();
    const refused = send();
    await flush();
    expect(refused.error).toBeInstanceOf(ErrorClass);
    expect(refused.controller!.aborted).toBe(true);
    expect(refused.controller!.reason).toBe(refused.error);
    expect(fake.sent).toHaveLength(1);
  });

  test("a `permits` or `key` function that throws fails that request (asynchronously), not the dispatch", async () => {
    const { fake, send } = setup({ limiter: new SmoothLimiter({ limit: 10, clock: new ManualClock() }), permits: () => 0 });
    const caller = send();
    expect(caller.log).toEqual(["start"]);
    await flush();
    expect(caller.error).toBeInstanceOf(RangeError);
    expect(String(caller.error)).toMatch(/`permits` must be a positive integer, got 0/);
    expect(fake.sent).toHaveLength(0);
  });
});

describe("forwarding", () => {
  test("every callback reaches the caller's own methods, with one stable controller", async () => {
    const { fake, send } = setup({ limiter: new SmoothLimiter({ limit: 10, clock: new ManualClock() }) });
    const caller = send();
    const controller = caller.controller;
    await flush();
    fake.sent[0]!.respond(200, {}, "hello");
    expect(caller.log).toEqual(["start", "headers 200", "end"]); // start once, when queued
    expect(caller.body).toBe("hello");
    expect(caller.controller).toBe(controller);
  });

  test("pause and resume before undici starts the request are applied on start; later ones are forwarded", async () => {
    const { fake, send } = setup({ limiter: new SmoothLimiter({ limit: 10, clock: new ManualClock() }) }, false);
    const caller = send();
    caller.controller!.pause();
    await flush();
    fake.sent[0]!.start();
    expect(fake.sent[0]!.controller.paused).toBe(true);
    caller.controller!.resume();
    expect(fake.sent[0]!.controller.paused).toBe(false);
  });

  test("an error thrown synchronously by the next dispatcher fails the request once", async () => {
    const handler = new RecordingHandler();
    const boom = new Error("boom");
    const dispatch = throttle({ limiter: new SmoothLimiter({ limit: 10 }) })((_opts: unknown, h: { onResponseError(c: null, e: unknown): void }) => {
      h.onResponseError(null, boom); // as undici's DispatcherBase does…
      throw boom; // …and then a dispatcher that also throws it
    });
    dispatch(get(), handler as never);
    await flush();
    expect(handler.log).toEqual(["start", "error"]);
    expect(handler.error).toBe(boom);
  });

  test("a legacy (undici ≤ 6) handler is refused at once, pointing to Dispatcher1Wrapper", () => {
    const { dispatch } = setup({ limiter: new SmoothLimiter({ limit: 10 }) });
    const legacy = { onConnect() {}, onHeaders() {}, onData() {}, onComplete() {}, onError() {} };
    expect(() => dispatch(get(), legacy as never)).toThrow(/legacy handler.*Dispatcher1Wrapper/);
  });

  test("the dispatch it returns takes exactly two parameters, as undici's compose() requires", () => {
    const { dispatch } = setup({ limiter: new SmoothLimiter({ limit: 10 }) });
    expect(dispatch.length).toBe(2);
  });
});

describe("the server's signals pause the shared limiter — the throttled fetch's own decision", () => {
  const policy = { maxRetryAfter: 60_000, backoff: { base: 1000, cap: 30_000 } };
  const date = new Date(NOW).toUTCString();
  const cases: Array<[string, number, Record<string, string>]> = [
    ["429 + Retry-After seconds", 429, { "retry-after": "3" }],
    ["429 + Retry-After HTTP-date (against the Date header)", 429, { date, "retry-after": new Date(NOW + 7000).toUTCString() }],
    ["429 + retry-after-ms", 429, { "retry-after-ms": "1500" }],
    ["429 without a delay: the backoff step", 429, {}],
    ["503 + Retry-After", 503, { "retry-after": "2" }],
    ["503 without a delay: nothing", 503, {}],
    ["200 + X-RateLimit remaining 0 (epoch reset)", 200, { date, "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(NOW / 1000 + 30) }],
    ["200 + RateLimit draft-10 remaining 0", 200, { "ratelimit-policy": '"default";q=100;w=60', ratelimit: '"default";r=0;t=12' }],
    ["200 + X-RateLimit remaining 5: nothing", 200, { "x-ratelimit-remaining": "5", "x-ratelimit-reset": "30" }],
    ["429 + Retry-After beyond maxRetryAfter: reported, nobody paused", 429, { "retry-after": "3600" }],
    ["429 + malformed Retry-After: the backoff step", 429, { "retry-after": "soon" }],
  ];

  test.each(cases)("%s", async (_name, status, headers) => {
    const clock = new ManualClock();
    const limiter = new SmoothLimiter({ limit: 1000, interval: 1000, clock, burst: 1000 });
    const events: DispatchThrottleEvent[] = [];
    const { fake, send } = setup({ limiter, onThrottle: (e) => events.push(e) });
    const caller = send();
    await flush();
    // What the throttled fetch decides for the same response.
    const expected = pauseFor(readServerSignals(new Response(null, { status, headers }), {
      now: NOW, lenient: true, rateLimitHeaders: true,
    }), 1, policy);
    let waitSeenByCaller = -1;
    caller.onResponseStart = function (this: RecordingHandler, _c: unknown, s: number) {
      waitSeenByCaller = limiter.tryAcquire(1000); // the pause is in place before the caller hears of it
      RecordingHandler.prototype.onResponseStart.call(this, _c, s);
    };
    fake.sent[0]!.respond(status, headers);
    if (expected === undefined) {
      expect(events).toEqual([]);
    } else {
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ statusCode: status, attempt: 1, reason: expected.reason, delay: expected.requested, paused: expected.ms });
    }
    expect(waitSeenByCaller).toBe(expected?.ms ?? 0);
  });

  test("other callers queue during the pause, keeping their order, and go when it ends", async () => {
    const clock = new ManualClock();
    const { fake, send } = setup({ limiter: new WindowLimiter({ limit: 100, interval: 1000, clock }) });
    send();
    await flush();
    fake.sent[0]!.respond(429, { "retry-after": "2" });
    send(get(undefined, "/a"));
    send(get(undefined, "/b"));
    await clock.advance(1999);
    expect(fake.sent).toHaveLength(1);
    await clock.advance(1);
    expect(fake.sent.map((s) => s.request.path)).toEqual(["/", "/a", "/b"]);
  });

  test("attempts are counted per handler (undici's retry interceptor re-dispatches its handler): a bare 429 pauses 1 s, then 2 s", async () => {
    const clock = new ManualClock();
    const events: DispatchThrottleEvent[] = [];
    const { fake, dispatch } = setup({ limiter: new SmoothLimiter({ limit: 100, clock }), onThrottle: (e) => events.push(e) });
    const retrying = new RecordingHandler();
    dispatch(get(), retrying as never);
    await flush();
    fake.sent[0]!.respond(429);
    dispatch(get(), retrying as never);
    await clock.advance(1000);
    fake.sent[1]!.respond(429);
    expect(events.map((e) => [e.attempt, e.paused])).toEqual([[1, 1000], [2, 2000]]);
  });

  test("a 429 from one origin pauses that origin's limiter only", async () => {
    const clock = new ManualClock();
    const keyed = new KeyedLimiter({ create: () => new WindowLimiter({ limit: 100, interval: 1000, clock }), clock });
    const { fake, send } = setup({ limiter: keyed });
    send(get("https://a.example"));
    await flush();
    fake.sent[0]!.respond(429, { "retry-after": "5" });
    send(get("https://a.example"));
    send(get("https://b.example"));
    await flush();
    expect(fake.sent.map((s) => s.request.origin)).toEqual(["https://a.example", "https://b.example"]);
    expect(keyed.get("https://a.example").tryAcquire()).toBe(5000);
    expect(keyed.get("https://b.example").tryAcquire()).toBe(0);
  });

  test.each([
    ["respectServer: false — pace only", { respectServer: false }, 429, { "retry-after": "3" }],
    ["rateLimitHeaders: false — no quota pauses", { rateLimitHeaders: false }, 200, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": "30" }],
    ["lenientRetryAfter: false — `1.5` is not delay-seconds (the backoff step applies)", { lenientRetryAfter: false }, 429, { "retry-after": "1.5" }],
  ])("%s", async (_name, extra, status, headers) => {
    const clock = new ManualClock();
    const events: DispatchThrottleEvent[] = [];
    const { fake, send } = setup({ limiter: new SmoothLimiter({ limit: 100, clock }), onThrottle: (e) => events.push(e), ...extra });
    send();
    await flush();
    fake.sent[0]!.respond(status, headers);
    if ("lenientRetryAfter" in extra) expect(events).toMatchObject([{ delay: 1000 }]);
    else expect(events).toEqual([]);
  });

  test("an onThrottle hook that throws fails that request (undici aborts it with the hook's error)", async () => {
    const boom = new Error("hook");
    const { fake, send } = setup({ limiter: new SmoothLimiter({ limit: 100, clock: new ManualClock() }), onThrottle: () => { throw boom; } });
    send();
    await flush();
    expect(() => fake.sent[0]!.handler.onResponseStart(fake.sent[0]!.controller, 429, {}, "")).toThrow(boom);
  });
});

describe("a request dispatched again (undici's retry interceptor re-dispatches its handler)", () => {
  for (const frozen of [false, true]) {
    test(`counts as the next attempt and keeps its place in the queue${frozen ? " — with a frozen handler" : ""}`, async () => {
      const clock = new ManualClock();
      const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
      const events: DispatchThrottleEvent[] = [];
      const fake = fakeDispatcher(true);
      const dispatch = throttle({ limiter, wallClock: () => NOW, onThrottle: (e) => events.push(e) })(fake.dispatch);
      const log: string[] = [];
      const handlerOf = (name: string) => {
        const handler = {
          onRequestStart() {},
          onResponseStart: (_c: unknown, status: number) => void log.push(`${name} ${status}`),
          onResponseData() {},
          onResponseEnd() {},
          onResponseError: (_c: unknown, error: unknown) => void log.push(`${name} error ${String(error)}`),
        };
        return frozen ? Object.freeze(handler) : handler;
      };
      const first = handlerOf("first");
      dispatch(get(undefined, "/first"), first as never); // granted at once
      await flush();
      dispatch(get(undefined, "/later"), handlerOf("later") as never); // queued behind the first's window
      await flush();
      fake.sent[0]!.respond(429); // no delay: the backoff step (attempt 1)
      await flush();
      dispatch(get(undefined, "/first"), first as never); // the retry, dispatched with the same handler
      await clock.advance(60_000);
      // The retry went before "/later", which had queued before it: it kept the first's place.
      expect(fake.sent.map((s) => s.request.path)).toEqual(["/first", "/first"]);
      fake.sent[1]!.respond(429);
      await flush();
      expect(events.map((e) => e.attempt)).toEqual([1, 2]);
      await clock.advance(60_000);
      expect(fake.sent.map((s) => s.request.path)).toEqual(["/first", "/first", "/later"]);
      expect(Object.keys(first)).toEqual(["onRequestStart", "onResponseStart", "onResponseData", "onResponseEnd", "onResponseError"]);
    });
  }
});
