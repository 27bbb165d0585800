/**
 * A pause the server asked for (a 429's Retry-After) holds while Redis is unreachable too: the
 * failure policy ("open", or a local share) applies once it ends. Fleet red-team, 2026-11-27: under
 * "open" the retries of a 429 went 48 ms later instead of 1 s, and 3 processes × 50 callers through a
 * 2-s outage drew 449 refusals. No Redis server needed: the client refuses every call.
 */
import { describe, expect, test } from "vitest";
import { ManualClock } from "../../src/index.ts";
import { MaxWaitExceededError } from "../../src/errors.ts";
import { RedisStore, RedisWindowLimiter } from "../../src/redis.ts";
import { track } from "../helpers.ts";

const refused = () => Promise.reject(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }));
const down = { evalsha: refused, eval: refused };

describe.each([["open" as const], [{ local: 1 } as const]])("failure: %o", (failure) => {
  test("a pause holds acquire and tryAcquireAsync until it ends; then the policy grants", async () => {
    const clock = new ManualClock();
    const store = new RedisStore({ client: down, name: "outage", clock, now: () => 1e15 + Math.round(clock.now() * 1000), failure, onError: () => {} });
    const limiter = new RedisWindowLimiter({ store, key: "k", limit: 10, interval: 1000 });
    await limiter.acquire(); // the outage is found: the policy grants
    limiter.pause(1000); // a 429 said "Retry-After: 1"
    const waiting = track(clock, limiter.acquire());
    expect(await limiter.tryAcquireAsync()).toBe(1000);
    await expect(limiter.acquire(1, { maxWait: 500 })).rejects.toBeInstanceOf(MaxWaitExceededError);
    await clock.advance(999);
    expect(waiting.at).toBeUndefined();
    await clock.advance(1);
    expect(waiting.at).toBe(1000);
    expect(await limiter.tryAcquireAsync()).toBe(0);
  });
  test("a pause lengthened during the outage holds the callers already waiting too (review 3)", async () => {
    const clock = new ManualClock();
    const store = new RedisStore({ client: down, name: "outage2", clock, now: () => 1e15 + Math.round(clock.now() * 1000), failure, onError: () => {} });
    const limiter = new RedisWindowLimiter({ store, key: "k", limit: 10, interval: 1000 });
    await limiter.acquire();
    limiter.pause(1000);
    const early = track(clock, limiter.acquire());
    await clock.advance(500);
    limiter.pause(2000); // a second 429: Retry-After: 2, until 2500
    await clock.advance(1999);
    expect(early.at).toBeUndefined();
    await clock.advance(1);
    expect(early.at).toBe(2500);
  });
});
