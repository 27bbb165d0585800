/**
 * Fault injection against real servers on 127.0.0.1: garbage and hostile headers, connection
 * resets, a server that never answers, a 503 storm, a streamed upload that fails, aborts at every
 * stage. Backoffs are shortened so each test takes well under a second; assertions count requests
 * and outcomes, never tight timings.
 */
import { afterEach, describe, expect, test, vi } from "vitest";
import { type Clock, ManualClock, systemClock } from "../../src/clock.ts";
import { SmoothLimiter } from "../../src/limiters/smooth.ts";
import { WindowLimiter } from "../../src/limiters/window.ts";
import { createThrottledFetch } from "../../src/http/throttled-fetch.ts";
import { TimeoutError } from "../../src/http/errors.ts";
import type { ThrottledFetchOptions, ThrottleEvent } from "../../src/http/options.ts";
import { respond, startServer, type TestServer } from "./support/servers.ts";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A throttled fetch with millisecond backoffs, so retries do not slow the suite down. */
const fast = (options: Partial<ThrottledFetchOptions> = {}) => {
  const retry = typeof options.retry === "object" ? options.retry : {};
  return createThrottledFetch({
    limiter: new SmoothLimiter({ limit: 1000 }),
    ...options,
    retry: { backoff: { base: 5, cap: 20 }, ...retry },
  });
};

/** The real clock, counting the timers armed through it that have neither fired nor been cleared. */
function countingClock(): Clock & { readonly live: number } {
  const live = new Set<unknown>();
  return {
    now: () => systemClock.now(),
    setTimeout(callback, delay) {
      const handle = systemClock.setTimeout(() => {
        live.delete(handle);
        callback();
      }, delay);
      live.add(handle);
      return handle;
    },
    clearTimeout(handle) {
      live.delete(handle);
      systemClock.clearTimeout(handle);
    },
    get live() {
      return live.size;
    },
  };
}

describe("garbage and hostile headers", () => {
  const garbage: Array<Record<string, string>> = [
    { "retry-after": "soon" },
    { "retry-after": "-5" },
    { "retry-after": "1e3" },
    { "retry-after": "0x10" },
    { "retry-after": "NaN" },
    { "retry-after": "Infinity" },
    { "retry-after": "1, 2" },
    { "retry-after": "   " },
    { "retry-after": "Fri, 32 Dec 1999 25:61:61 GMT" },
    { "retry-after-ms": "-1" },
    { "retry-after-ms": "1e9" },
    { ratelimit: '"p";r=0;t=abc' },
    { ratelimit: "limit=garbage, remaining=, reset" },
    { "ratelimit-policy": '"p";q=;w=-1', ratelimit: '"p";r=0' },
    { "x-ratelimit-remaining": "zero", "x-ratelimit-reset": "tomorrow" },
    { "x-ratelimit-remaining": "0", "x-ratelimit-reset": "-100" },
    { date: "not a date", "retry-after": "Wed, 15 Jan 2025 12:00:30 GMT" },
    { "retry-after": "9".repeat(4000) },
  ];

  test.each(garbage)("429 with %j: retried after our own backoff, no crash, no hang", async (headers) => {
    server = await startServer((_req, res) => {
      if (server!.arrivals.length === 1) respond(res, 429, headers, "x");
      else respond(res, 200, {}, "ok");
    });
    const response = await fast()(`${server.url}/g`);
    // Either retried (delay ignored or parsed as tiny), or returned because it parsed as absurdly long.
    if (response.status === 200) expect(server.arrivals).toHaveLength(2);
    else {
      expect(response.status).toBe(429);
      expect(server.arrivals).toHaveLength(1);
    }
    await response.text();
  });

  test("a hostile Retry-After of centuries is not honoured: the caller gets the 429 at once, nobody is paused", async () => {
    server = await startServer((_req, res) => {
      if (server!.arrivals.length === 1) respond(res, 429, { "retry-after": "99999999999999999999" });
      else respond(res, 200, {}, "ok");
    });
    const events: ThrottleEvent[] = [];
    const api = fast({ onThrottle: (e) => events.push(e) });
    const started = performance.now();
    expect((await api(`${server.url}/h`)).status).toBe(429);
    expect((await api(`${server.url}/h`)).status).toBe(200);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(events[0]).toMatchObject({ paused: 0, delay: Number.MAX_SAFE_INTEGER });
  });

  test("a reported quota reset years away pauses nobody (beyond maxRetryAfter)", async () => {
    server = await startServer((_req, res) => respond(res, 200, {
      "x-ratelimit-remaining": "0",
      "x-ratelimit-reset": String(Math.floor(Date.now() / 1000) + 10 * 365 * 86_400),
    }, "ok"));
    const api = fast();
    const started = performance.now();
    for (let i = 0; i < 3; i++) expect((await api(`${server.url}/q`)).status).toBe(200);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe("connection faults", () => {
  test("a server that resets connections: a GET is retried and succeeds", async () => {
    server = await startServer((req, res) => {
      if (server!.arrivals.length <= 2) req.socket.destroy();
      else respond(res, 200, {}, "ok");
    });
    const response = await fast()(`${server.url}/reset`);
    expect(await response.text()).toBe("ok");
    expect(server.arrivals).toHaveLength(3);
  });

  test("a POST whose connection is reset is not retried: the caller gets fetch's network error", async () => {
    server = await startServer((req) => void req.socket.destroy());
    const error = await fast()(`${server.url}/pay`, { method: "POST", body: "10 EUR" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect(server.arrivals).toHaveLength(1);
  });

  test("a server that never answers: each attempt times out, then TimeoutError; no timer is left", async () => {
    server = await startServer(() => {}); // reads the request, never responds
    const clock = countingClock();
    const api = fast({ timeout: 150, retry: { limit: 1 }, totalTimeout: 10_000, clock });
    const started = performance.now();
    const error = await api(`${server.url}/silent`).catch((e: unknown) => e);
    const elapsed = performance.now() - started;
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ scope: "attempt", timeout: 150, attempts: 2 });
    expect(server.arrivals).toHaveLength(2);
    expect(elapsed).toBeGreaterThanOrEqual(2 * 150 - 2); // runtimes may fire a timer up to 1 ms early
    expect(clock.live).toBe(0); // attempt timers, backoff and the total timeout: all cleared
  });

  test("a refused connection (nothing listening) is a network error, retried for GET", async () => {
    const closed = await startServer(() => {});
    const url = closed.url;
    await closed.close();
    const api = fast();
    const error = await api(`${url}/nobody`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
  });
});

describe("a 503 storm", () => {
  test("the retry budget holds: 40 callers, limit 2 each, the server sees ≤ 40 + 10 + 20 % requests, not 120", async () => {
    server = await startServer((_req, res) => respond(res, 503, {}, "overloaded"));
    const api = fast({ retry: { limit: 2 } });
    const responses = await Promise.all(Array.from({ length: 40 }, () => api(`${server!.url}/storm`)));
    expect(responses.every((r) => r.status === 503)).toBe(true);
    await Promise.all(responses.map((r) => r.text()));
    expect(server.arrivals.length).toBeLessThanOrEqual(40 + 10 + 0.2 * 40);
    expect(server.arrivals.length).toBeGreaterThan(40); // some retries were made
  });

  test("503 with Retry-After is a throttle: the shared pause, not the budget, governs it", async () => {
    // Every caller's first attempt is refused (a retry keeps its caller's place in the queue, so
    // "the first 20 arrivals" would be one caller's attempts when the limiter spaces them).
    const seen = new Set<string>();
    server = await startServer((req, res) => {
      if (!seen.has(req.url!)) {
        seen.add(req.url!);
        respond(res, 503, { "retry-after-ms": "20" }, "busy");
      } else respond(res, 200, {}, "ok");
    });
    const api = fast({ retry: { limit: 3, budget: { ratio: 0, reserve: 0 } } });
    const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => api(`${server!.url}/busy/${i}`)));
    expect(responses.every((r) => r.status === 200)).toBe(true);
    await Promise.all(responses.map((r) => r.text()));
  });
});

describe("a streamed upload", () => {
  const upload = (text: string) => new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new TextEncoder().encode(text));
      c.close();
    },
  });

  test("that gets 503 + Retry-After is not re-sent: the caller gets the 503, the server saw the body once", async () => {
    server = await startServer((_req, res) => respond(res, 503, { "retry-after": "0" }, "try later"));
    const response = await fast()(`${server.url}/up`, { method: "POST", body: upload("chunked data"), duplex: "half" } as RequestInit);
    expect(response.status).toBe(503);
    expect(server.arrivals.map((a) => a.body)).toEqual(["chunked data"]);
  });

  test("whose connection is reset is not re-sent, even as a PUT", async () => {
    server = await startServer((req) => void req.socket.destroy());
    const error = await fast()(`${server.url}/up`, { method: "PUT", body: upload("data"), duplex: "half" } as RequestInit)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect(server.arrivals).toHaveLength(1);
  });
});

describe("aborts with real sockets", () => {
  test("while queued, in flight, and while waiting to retry: the reason comes back, nothing more is sent", async () => {
    // Each stage is reached by an event, never a sleep: the server's arrival of /slow (in flight),
    // onRetry (waiting to retry). The second fetch's timers run on a ManualClock (with a burst, so
    // its two requests are granted at once), so the retry wait cannot end on its own, and after the
    // abort no timer is left that could send anything.
    let slowArrived!: () => void;
    const inFlightReached = new Promise<void>((resolve) => (slowArrived = resolve));
    server = await startServer((req, res) => {
      if (req.url === "/slow") return slowArrived(); // never answers
      if (req.url === "/retry") respond(res, 503, { "retry-after": "5" });
      else respond(res, 200, {}, "ok");
    });
    const limiter = new WindowLimiter({ limit: 1, interval: 10_000, countFrom: "completion" });
    const api = createThrottledFetch({ limiter });
    const first = await api(`${server.url}/ok`); // takes the only slot for 10 s
    await first.text();

    const queued = new AbortController();
    const pending = api(`${server.url}/ok`, { signal: queued.signal });
    await vi.waitFor(() => expect(limiter.queued).toBe(1), { interval: 1 }); // stage: queued behind the held slot
    queued.abort(new Error("queued abort"));
    await expect(pending).rejects.toThrow("queued abort");
    expect(limiter.queued).toBe(0);

    const clock = new ManualClock();
    let retryWaitReached!: () => void;
    const retryWait = new Promise<void>((resolve) => (retryWaitReached = resolve));
    const api2 = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 100, burst: 2, clock }), timeout: 5000, onRetry: () => retryWaitReached() });
    const inFlight = new AbortController();
    const slow = api2(`${server.url}/slow`, { signal: inFlight.signal });
    await inFlightReached; // stage: the server holds /slow
    inFlight.abort(new Error("in-flight abort"));
    await expect(slow).rejects.toThrow("in-flight abort");

    const waiting = new AbortController();
    const retrying = api2(`${server.url}/retry`, { signal: waiting.signal });
    await retryWait; // the 503 was read and the retry decided…
    await vi.waitFor(() => expect(clock.pendingTimers).toBeGreaterThan(0), { interval: 1 }); // …stage: its 5 s wait is armed
    expect(clock.nextTimerAt).toBe(clock.now() + 5000);
    waiting.abort(new Error("retry-wait abort"));
    await expect(retrying).rejects.toThrow("retry-wait abort");
    // Nothing more can be sent: no timer is left, and moving past the retry time sends nothing.
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(60_000);
    expect(server.arrivals.map((a) => a.path)).toEqual(["/ok", "/slow", "/retry"]);
  });

});
