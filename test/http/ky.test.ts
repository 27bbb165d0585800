/**
 * ky on top of a throttled fetch: `ky.create({ fetch: api, retry: 0 })` leaves retries to sluice;
 * and if ky's own retries are left on, each of them still goes through the shared limiter, because
 * ky calls its `fetch` option for every attempt.
 */
import ky from "ky";
import { describe, expect, test } from "vitest";
import type { ManualClock } from "../../src/clock.ts";
import { WindowLimiter } from "../../src/limiters/window.ts";
import { setup } from "./support/setup.ts";
import { reply, settle } from "./support/stub-fetch.ts";

const limiterOf1Per300 = { makeLimiter: (c: ManualClock) => new WindowLimiter({ limit: 1, interval: 300, clock: c }) } as const;

describe("ky with a throttled fetch", () => {
  test("retry: 0 in ky; sluice retries, paced by the limiter, honouring Retry-After", async () => {
    const { api, stub, clock } = setup(limiterOf1Per300);
    stub.then(() => reply(503, { "retry-after": "1" }));
    const client = ky.create({ fetch: api, retry: 0, timeout: false });
    expect(await settle(clock, client.get("https://ky.example/a").text())).toBe("ok");
    expect(stub.times).toEqual([0, 1000]);
  });

  test("ky's own retries, if left on, each take permits from the shared limiter", async () => {
    const { api, stub, clock } = setup({ ...limiterOf1Per300, retry: 0 });
    stub.then(() => reply(503), () => reply(503));
    const client = ky.create({ fetch: api, timeout: false, retry: { limit: 2, delay: () => 0 } });
    expect(await settle(clock, client.get("https://ky.example/b").text())).toBe("ok");
    // ky asked for no delay at all; the limiter still spaced its three attempts 300 ms apart.
    expect(stub.times).toEqual([0, 300, 600]);
  });

  test("a ky POST with a JSON body is replayed intact by sluice on a 429", async () => {
    const { api, stub, clock } = setup(limiterOf1Per300);
    stub.then(() => reply(429, { "retry-after": "0" }));
    const client = ky.create({ fetch: api, retry: 0, timeout: false });
    await settle(clock, client.post("https://ky.example/c", { json: { amount: 10 } }).text());
    expect(stub.calls.map((c) => [c.method, c.body, c.headers.get("content-type")])).toEqual([
      ["POST", '{"amount":10}', "application/json"],
      ["POST", '{"amount":10}', "application/json"],
    ]);
  });
});
