/**
 * Costs that settle (`cost`, `settle`) in the throttled fetch, in virtual time against the vendor
 * simulators of `sluice/testing`.
 */
import { describe, expect, test } from "vitest";
import { combine, createThrottledFetch, ManualClock, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import { createSimulatedFetch, OpenAISimulator } from "../../src/testing.ts";

const URL_ = "https://api.openai.com/v1/chat/completions";
const body = (maxTokens: number) =>
  JSON.stringify({ model: "m", max_tokens: maxTokens, messages: [{ role: "user", content: "x".repeat(40) }] });
const post = (maxTokens: number): RequestInit => ({ method: "POST", headers: { "content-type": "application/json" }, body: body(maxTokens) });

/** A limiter mirroring the simulator's two buckets (a minute's worth each, full at the start). */
function openaiLimiter(clock: ManualClock, rpm: number, tpm: number) {
  return combine({
    requests: new WindowLimiter({ limit: rpm, interval: 60_000, clock }),
    tokens: new WindowLimiter({ limit: tpm, interval: 60_000, clock }),
  });
}

const usageOf = async (response: Response) => {
  if (!response.ok) return undefined;
  const json = await response.clone().json() as { usage: { total_tokens: number } };
  return { tokens: json.usage.total_tokens };
};

describe("cost and settle", () => {
  test("a batch against TPM: settling from usage completes far more in a minute than reserving max_tokens, with 0 server 429s", async () => {
    const run = async (settle: boolean) => {
      const clock = new ManualClock();
      const server = new OpenAISimulator({ models: { m: { rpm: 10_000, tpm: 20_000 } }, refundUnused: true, completionTokens: () => 90 });
      const fetch = createSimulatedFetch({ server, clock, latency: 50 });
      const api = createThrottledFetch({
        limiter: openaiLimiter(clock, 10_000, 20_000),
        fetch,
        cost: { requests: 1, tokens: 2000 },
        ...(settle && { settle: (response: Response) => usageOf(response) }),
      });
      let done = 0;
      const calls = Array.from({ length: 200 }, () => api(URL_, post(2000)).then(async (r) => {
        await r.text();
        done++;
        return r.status;
      }));
      await clock.advanceTo(59_999);
      const inAMinute = done;
      await clock.runAll();
      const statuses = await Promise.all(calls);
      return { inAMinute, statuses, stats: fetch.stats };
    };
    const reserved = await run(false);
    const settled = await run(true);
    expect(reserved.inAMinute).toBe(10); // 20 000 / 2000
    expect(settled.inAMinute).toBeGreaterThanOrEqual(150); // each uses 100 tokens of the 2000 reserved
    expect(settled.statuses.every((s) => s === 200)).toBe(true);
    expect(settled.stats.byStatus[429] ?? 0).toBe(0);
    expect(reserved.stats.byStatus[429] ?? 0).toBe(0);
  });

  test("a cost that can never fit rejects at once with the limiter's RangeError, before anything is sent", async () => {
    const clock = new ManualClock();
    const server = new OpenAISimulator({ models: { m: { rpm: 100, tpm: 1000 } } });
    const fetch = createSimulatedFetch({ server, clock });
    const api = createThrottledFetch({ limiter: openaiLimiter(clock, 100, 1000), fetch, cost: () => ({ requests: 1, tokens: 5000 }) });
    await expect(api(URL_, post(5000))).rejects.toThrow(RangeError);
    await expect(api(URL_, post(5000))).rejects.toThrow(/tokens/);
    expect(fetch.stats.requests).toBe(0);
  });

  test("a cost function's result above the limit or invalid is reported as `cost`, never `permits`", async () => {
    const limiter = new WindowLimiter({ limit: 5, interval: 1000 });
    const fetch = async () => new Response("x");
    const errorOf = (cost: unknown) =>
      createThrottledFetch({ limiter, fetch, cost: cost as never })("https://x.test/").then(() => undefined, (e: Error) => e);
    for (const cost of [() => 9, 9, () => Promise.resolve(9)]) {
      const error = await errorOf(cost);
      expect(error).toBeInstanceOf(RangeError);
      expect(error!.message).toBe("`cost` must be at most 5 for this limiter (it can never grant more), got 9");
    }
    expect((await errorOf(() => -1))!.message).toBe("`cost` must be a positive integer, got -1");
    expect(await errorOf(() => "2")).toBeInstanceOf(TypeError);
    expect((await errorOf(() => ({ tokens: 1.5 })))!.message).toBe("`cost.tokens` must be a non-negative integer, got 1.5");
    // With `settle` alone, the cost is `permits`, and named so.
    const viaPermits = await createThrottledFetch({ limiter, fetch, permits: () => 9, settle: () => undefined })("https://x.test/")
      .then(() => undefined, (e: Error) => e);
    expect(viaPermits!.message).toMatch(/^`permits` must be at most 5/);
  });

  test("settle's { response, actual }: the call resolves with that response; the reservation settles when actual resolves", async () => {
    const clock = new ManualClock();
    const tokens = new WindowLimiter({ limit: 1000, interval: 1000, clock });
    const limiter = combine({ tokens });
    let resolveActual!: (v: { tokens: number }) => void;
    const tap = new Response("tapped");
    const api = createThrottledFetch({
      limiter,
      fetch: async () => new Response("raw"),
      cost: { tokens: 1000 },
      settle: () => ({ response: tap, actual: new Promise((r) => (resolveActual = r)) }),
    });
    const response = await api("https://x.test/");
    expect(response).toBe(tap);
    expect(tokens.tryAcquire(100)).toBeGreaterThan(0); // all 1000 still reserved
    resolveActual({ tokens: 100 });
    await clock.advance(0);
    expect(tokens.tryAcquire(900)).toBe(0); // 900 came back
  });

  test("unsettled counts in full; a retried attempt settles as reserved unless settle says otherwise", async () => {
    const clock = new ManualClock();
    const tokens = new WindowLimiter({ limit: 100, interval: 1000, clock });
    let n = 0;
    const api = createThrottledFetch({
      limiter: tokens,
      fetch: async () => (++n === 1 ? new Response("busy", { status: 503 }) : new Response("ok")),
      retry: { limit: 1, backoff: { base: 0, cap: 0 } },
      cost: 30,
    });
    const call = api("https://x.test/");
    await clock.advance(0);
    const response = await call;
    expect(response.status).toBe(200);
    expect(tokens.tryAcquire(41)).toBeGreaterThan(0); // 60 used: two attempts of 30, none settled
    expect(tokens.tryAcquire(40)).toBe(0);
  });

  test("`cost` with `permits` is a TypeError; a bad cost or settle names the option", () => {
    const limiter = new SmoothLimiter({ limit: 1 });
    expect(() => createThrottledFetch({ limiter, cost: 2, permits: 1 })).toThrow(new TypeError("`cost` replaces `permits`: give one of them, not both"));
    expect(() => createThrottledFetch({ limiter, cost: -3 })).toThrow(new RangeError("`cost` must be a positive integer, got -3"));
    expect(() => createThrottledFetch({ limiter, cost: { tokens: 1.5 } })).toThrow(new RangeError("`cost.tokens` must be a non-negative integer, got 1.5"));
    expect(() => createThrottledFetch({ limiter, settle: 3 as never })).toThrow(TypeError);
    expect(() => createThrottledFetch({ limiter, maxConcurrent: 0 })).toThrow(new RangeError("`maxConcurrent` must be a positive integer, got 0"));
  });

  test("with maxConcurrent, the reservation (slot and cost) ends when the body is read AND the actual cost is known", async () => {
    const clock = new ManualClock();
    const tokens = new WindowLimiter({ limit: 1000, interval: 60_000, clock });
    let resolveActual!: (v: number) => void;
    const sentAt: number[] = [];
    const api = createThrottledFetch({
      limiter: tokens,
      maxConcurrent: 1,
      clock,
      fetch: async () => (sentAt.push(clock.now()), new Response("body")),
      cost: 500,
      settle: () => new Promise<number>((r) => (resolveActual = r)),
    });
    const first = await api("https://x.test/1");
    const second = api("https://x.test/2");
    await clock.advance(10);
    await first.text(); // body done, cost not known yet: the slot stays held
    await clock.advance(10);
    expect(sentAt).toEqual([0]);
    resolveActual(100); // now both: the slot frees, 400 tokens come back
    await clock.advance(0);
    expect(sentAt).toEqual([0, 20]);
    await (await second).text();
    resolveActual(100);
    await clock.advance(0);
    expect(tokens.tryAcquire(800)).toBe(0); // 100 + 100 used of 1000
    expect(clock.pendingTimers).toBe(0);
  });

  test("a caller that aborts while its reservation is granted gets nothing sent and everything back", async () => {
    const clock = new ManualClock();
    const tokens = new WindowLimiter({ limit: 10, interval: 1000, clock });
    const abort = new AbortController();
    let sent = 0;
    const api = createThrottledFetch({ limiter: tokens, cost: 10, fetch: async () => (sent++, new Response("x")) });
    const call = api("https://x.test/", { signal: abort.signal });
    abort.abort(new Error("left")); // the grant was synchronous; the send waits for a microtask
    await expect(call).rejects.toThrow("left");
    expect(sent).toBe(0);
    expect(tokens.tryAcquire(10)).toBe(0);
  });

  test("a synchronous settle settles at once; settle sees every response, retried ones too, with its attempt", async () => {
    const clock = new ManualClock();
    const tokens = new WindowLimiter({ limit: 100, interval: 1000, clock });
    const seen: Array<[number, number, unknown]> = [];
    let n = 0;
    const api = createThrottledFetch({
      limiter: tokens,
      fetch: async () => (++n === 1 ? new Response("busy", { status: 503 }) : new Response("ok")),
      retry: { limit: 1, backoff: { base: 0, cap: 0 } },
      cost: 40,
      settle: (response, { attempt, reserved }) => (seen.push([response.status, attempt, reserved]), response.ok ? 5 : 0),
    });
    const call = api("https://x.test/");
    await clock.advance(0);
    expect((await call).status).toBe(200);
    expect(seen).toEqual([[503, 1, 40], [200, 2, 40]]);
    expect(tokens.tryAcquire(95)).toBe(0); // 0 + 5 used
  });
});
