/**
 * `throttle({ adaptive })` in virtual time, against a fake next dispatcher (the test plays undici
 * and the server): the learned rate per key, its ceiling, Retry-After for every caller, and an
 * AdaptiveRates shared with a throttled fetch.
 */
import { describe, expect, test } from "vitest";
import { AdaptiveRates, type KeyedRateChange, ManualClock, MaxWaitExceededError, WindowLimiter } from "../../src/index.ts";
import { throttle, type ThrottleOptions } from "../../src/undici.ts";
import { fakeDispatcher, flush, get, RecordingHandler } from "./support/fake-dispatch.ts";

const NOW = Date.UTC(2025, 0, 15, 12, 0, 0);

function setup(options: ThrottleOptions) {
  const fake = fakeDispatcher(true);
  const dispatch = throttle({ wallClock: () => NOW, ...options })(fake.dispatch);
  const send = (request = get()) => {
    const handler = new RecordingHandler();
    dispatch(request, handler as never);
    return handler;
  };
  return { fake, send };
}

describe("throttle({ adaptive })", () => {
  test("memory: each request's slot of the learned rate ends with its send, so hosts used once are forgotten", async () => {
    // Before 2026-11-24 the slot stayed open: every key "in flight" for good, never evicted.
    const clock = new ManualClock();
    const rates = new AdaptiveRates({ clock });
    const { fake, send } = setup({ adaptive: rates });
    for (let i = 0; i < 20; i++) send(get(`https://h${i}.example`));
    await flush();
    expect(fake.sent).toHaveLength(20); // one host each: nobody waits
    for (const r of fake.sent) r.respond(200);
    await flush();
    expect(rates.get("https://h0.example").stats().inFlight).toBe(0);
    await clock.advance(61_000);
    expect(rates.prune()).toBe(20);
  });

  test("told nothing: no blind burst — 10 requests at once leave one a second until answers confirm more", async () => {
    const clock = new ManualClock();
    const { fake, send } = setup({ adaptive: { clock } });
    for (let i = 0; i < 10; i++) send();
    await flush();
    expect(fake.sent).toHaveLength(1);
    await clock.advance(999);
    expect(fake.sent).toHaveLength(1);
    await clock.advance(1);
    expect(fake.sent).toHaveLength(2);
  });

  test("aborting a request that waits for the learned rate fails it with the reason; it is never sent and the next one keeps its time", async () => {
    const clock = new ManualClock();
    const { fake, send } = setup({ adaptive: { clock } });
    send();
    const waiting = send();
    const next = send();
    await flush();
    expect(fake.sent).toHaveLength(1); // told nothing: one a second
    const reason = new Error("user cancelled");
    waiting.controller!.abort(reason);
    await flush();
    expect(waiting.log).toEqual(["start", "error"]);
    expect(waiting.error).toBe(reason);
    await clock.advance(1000);
    expect(fake.sent).toHaveLength(2); // the third request took the aborted one's turn, at 1 s
    expect(next.log).toEqual(["start"]);
    await clock.advance(5000);
    expect(fake.sent).toHaveLength(2); // the aborted request was never sent
  });

  test("a 429 with Retry-After cuts the key's rate once and pauses every caller of the key; they resume spaced", async () => {
    const clock = new ManualClock();
    const changes: KeyedRateChange[] = [];
    const limiter = new WindowLimiter({ limit: 3, interval: 1000, clock });
    const { fake, send } = setup({ limiter, adaptive: { clock, onChange: (c) => changes.push(c) } });
    for (let i = 0; i < 6; i++) send();
    await flush();
    await clock.advance(700);
    // Told 3/s: 3 sent, spaced at the told rate (0, 333, 667 ms) until the server confirms it.
    expect(fake.sent).toHaveLength(3);
    for (const r of fake.sent.slice(0, 3)) r.respond(429, { "retry-after": "2" });
    await flush();
    expect(changes.filter((c) => c.reason === "throttled")).toHaveLength(1);
    expect(changes[0]).toMatchObject({ key: "https://api.example.com", previous: 3 });
    await clock.advance(1999);
    expect(fake.sent).toHaveLength(3); // paused until 700 + 2000
    await clock.advance(1);
    expect(fake.sent).toHaveLength(4);
    await clock.advance(1000 / changes[0]!.rate - 1);
    expect(fake.sent).toHaveLength(4); // spaced at the learned rate, no burst after the pause
    await clock.advance(1);
    expect(fake.sent).toHaveLength(5);
  });

  test("the told limit is the ceiling: the rate never exceeds it, and the other key learns apart", async () => {
    const clock = new ManualClock();
    const rates = new AdaptiveRates({ clock, maxRate: 5 });
    const { fake, send } = setup({ adaptive: rates });
    for (let i = 0; i < 3; i++) send(get("https://a.example"));
    for (let i = 0; i < 3; i++) send(get("https://b.example"));
    await flush();
    await clock.advance(1000);
    expect(fake.sent.length).toBe(6); // each key at 5/s: 0 and 200, 400 ms
    fake.sent.find((r) => r.request.origin === "https://a.example")!.respond(429);
    await flush();
    expect(rates.rate("https://a.example")).toBeLessThan(5);
    expect(rates.rate("https://b.example")).toBe(5);
  });

  test("a limiter that refuses after the learned rate admitted gives that permit back", async () => {
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const { send } = setup({ limiter, adaptive: { clock, maxRate: 100 }, maxWait: 0 });
    send();
    const refused = send();
    await flush();
    await clock.advance(20);
    expect(refused.error).toBeInstanceOf(MaxWaitExceededError);
  });

  test("options are validated, naming the option and the value", () => {
    expect(() => throttle({ adaptive: 3 as never })).toThrow(
      new TypeError("`adaptive` must be a boolean, an options object or an AdaptiveRates, got 3"),
    );
    expect(() => throttle({ adaptive: { minRate: -1 } })).toThrow(RangeError);
  });
});
