/**
 * otelFetchHooks() with the real throttled fetch, in virtual time: each throttling response, the
 * delay it asked for and each retry become exactly the documented data points.
 */
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { ManualClock } from "../../src/clock.ts";
import { createThrottledFetch } from "../../src/http/throttled-fetch.ts";
import type { ThrottledFetchOptions } from "../../src/http/options.ts";
import { KeyedLimiter } from "../../src/limiters/keyed.ts";
import { SmoothLimiter } from "../../src/limiters/smooth.ts";
import type { ThrottleOptions } from "../../src/integrations/undici/options.ts";
import { otelFetchHooks } from "../../src/otel.ts";
import { reply, settle, StubFetch } from "../http/support/stub-fetch.ts";
import { harness, type Harness, histogram, points, sorted } from "./support.ts";

let otel: Harness;
beforeEach(() => {
  otel = harness();
});
afterEach(() => otel.shutdown());

const NAME = { "sluice.limiter.name": "api" };
const URL_A = "https://a.example/items";

function client(options: Partial<ThrottledFetchOptions> = {}) {
  const clock = new ManualClock();
  const stub = new StubFetch(clock);
  const api = createThrottledFetch({
    limiter: new SmoothLimiter({ limit: 100, clock }),
    clock,
    fetch: stub.fetch,
    random: () => 0.5,
    ...otelFetchHooks({ meter: otel.meter, name: "api" }),
    ...options,
  });
  return { api, stub, clock };
}

describe("otelFetchHooks() with createThrottledFetch", () => {
  test("a 429 and a 503 with Retry-After: two throttled responses, their delays in seconds, two throttled retries", async () => {
    const { api, stub, clock } = client();
    stub.then(() => reply(429, { "retry-after": "2" }), () => reply(503, { "retry-after": "1" }));
    const response = await settle(clock, api(URL_A));
    expect(response.status).toBe(200);
    const metrics = await otel.collect();
    const throttled = (status: number) => ({ ...NAME, "sluice.throttle.reason": "throttled", "http.response.status_code": status });
    expect(points(metrics, "sluice.http.client.throttled_responses")).toEqual(sorted([[throttled(429), 1], [throttled(503), 1]]));
    expect(histogram(metrics, "sluice.http.client.throttle.delay").map((h) => [h.attributes, h.count, h.sum])).toEqual(
      [[throttled(429), 1, 2], [throttled(503), 1, 1]],
    );
    const retried = (status: number) => ({ ...NAME, "sluice.retry.throttled": true, "http.response.status_code": status });
    expect(points(metrics, "sluice.http.client.retries")).toEqual(sorted([[retried(429), 1], [retried(503), 1]]));
  });

  test("a 500 is retried without throttling; a network error is retried with its error.type", async () => {
    const { api, stub, clock } = client();
    stub.then(() => reply(500), () => Promise.reject(new TypeError("fetch failed: secret-token")));
    expect((await settle(clock, api(URL_A))).status).toBe(200);
    const metrics = await otel.collect();
    expect(points(metrics, "sluice.http.client.throttled_responses")).toEqual([]);
    expect(points(metrics, "sluice.http.client.retries")).toEqual(sorted([
      [{ ...NAME, "sluice.retry.throttled": false, "http.response.status_code": 500 }, 1],
      [{ ...NAME, "sluice.retry.throttled": false, "error.type": "TypeError" }, 1],
    ]));
  });

  test("an exhausted quota is a throttling signal with reason quota_exhausted (and no retry)", async () => {
    const { api, stub, clock } = client();
    stub.then(() => reply(200, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": "30" }));
    expect((await settle(clock, api(URL_A))).status).toBe(200);
    const metrics = await otel.collect();
    expect(points(metrics, "sluice.http.client.throttled_responses")).toEqual([
      [{ ...NAME, "sluice.throttle.reason": "quota_exhausted", "http.response.status_code": 200 }, 1],
    ]);
    expect(points(metrics, "sluice.http.client.retries")).toEqual([]);
  });

  test("with a KeyedLimiter, the key is sluice.key (bounded by maxKeys)", async () => {
    const clock = new ManualClock();
    const stub = new StubFetch(clock, () => reply(429, { "retry-after": "1" }));
    const api = createThrottledFetch({
      limiter: new KeyedLimiter({ create: () => new SmoothLimiter({ limit: 100, clock }), clock }),
      clock,
      fetch: stub.fetch,
      retry: 0,
      ...otelFetchHooks({ meter: otel.meter, name: "api", maxKeys: 1 }),
    });
    await settle(clock, api("https://a.example/1"));
    await settle(clock, api("https://b.example/1"));
    const attributes = { ...NAME, "sluice.throttle.reason": "throttled", "http.response.status_code": 429 };
    expect(points(await otel.collect(), "sluice.http.client.throttled_responses")).toEqual(sorted([
      [{ ...attributes, "sluice.key": "https://a.example" }, 1],
      [attributes, 1],
    ]));
  });
});

describe("otelFetchHooks() with sluice/undici's throttle()", () => {
  test("onThrottle reads statusCode when there is no Response", async () => {
    const hooks = otelFetchHooks({ meter: otel.meter, name: "api" });
    const options: Pick<ThrottleOptions, "onThrottle"> = { onThrottle: hooks.onThrottle };
    options.onThrottle!({
      request: { origin: "https://a.example", path: "/", method: "GET" },
      statusCode: 429,
      headers: new Headers(),
      attempt: 1,
      key: undefined,
      reason: "throttled",
      delay: 1500,
      paused: 1500,
    });
    const metrics = await otel.collect();
    const attributes = { ...NAME, "sluice.throttle.reason": "throttled", "http.response.status_code": 429 };
    expect(points(metrics, "sluice.http.client.throttled_responses")).toEqual([[attributes, 1]]);
    expect(histogram(metrics, "sluice.http.client.throttle.delay").map((h) => h.sum)).toEqual([1.5]);
  });
});

describe("otelFetchHooks(): edge cases", () => {
  test("an error without a usable name is _OTHER; an unbounded delay is counted but not recorded", async () => {
    const hooks = otelFetchHooks({ meter: otel.meter, name: "api" });
    hooks.onRetry({ throttled: false, key: undefined, error: "a string" });
    hooks.onRetry({ throttled: false, key: undefined, error: { name: "x".repeat(65) } });
    hooks.onThrottle({ reason: "throttled", delay: Infinity, key: undefined, statusCode: 429 });
    const metrics = await otel.collect();
    expect(points(metrics, "sluice.http.client.retries")).toEqual([[{ ...NAME, "sluice.retry.throttled": false, "error.type": "_OTHER" }, 2]]);
    expect(points(metrics, "sluice.http.client.throttled_responses")).toHaveLength(1);
    expect(histogram(metrics, "sluice.http.client.throttle.delay")).toEqual([]);
  });

  test("invalid options throw, naming the option and the value", () => {
    expect(() => otelFetchHooks({ meter: {} as never, name: "api" })).toThrow(
      new TypeError("`meter` must be an OpenTelemetry Meter (it has no createCounter()), got an object {}"),
    );
    expect(() => otelFetchHooks({ meter: otel.meter, name: 3 as never })).toThrow(new TypeError("`name` must be a string, got 3"));
    expect(() => otelFetchHooks({ meter: otel.meter, name: "api", maxKeys: -2 })).toThrow(
      new RangeError("`maxKeys` must be a non-negative integer or Infinity, got -2"),
    );
  });
});
