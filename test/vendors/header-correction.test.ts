/**
 * The LLM profiles' header correction (src/vendors/model-budgets.ts): each budget is held to what the
 * server says remains, less what calls sent later reserved, refilling until full at the reset.
 * Virtual time; every expected time is computed by hand in the comments.
 */
import { describe, expect, test } from "vitest";
import { createThrottledFetch, ManualClock } from "../../src/index.ts";
import { openai } from "../../src/vendors.ts";

const URL_ = "https://api.openai.com/v1/chat/completions";
const json = { "content-type": "application/json" };
/** A chat call reserving 7 prompt tokens (2 characters, 3 per message, 3 priming) + `max`. */
const chat = (max: number) => ({ method: "POST", headers: json, body: JSON.stringify({ model: "m", max_tokens: max, messages: [{ role: "user", content: "hi" }] }) });

/** A fetch whose answers the test gives by hand, in any order; logs each arrival's time and max_tokens. */
function manual(clock: ManualClock) {
  const arrivals: Array<{ at: number; max: number; answer: (headers: Record<string, string>) => void }> = [];
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const max = (JSON.parse(await new Request(input, init).text()) as { max_tokens: number }).max_tokens;
    return new Promise<Response>((resolve) => {
      arrivals.push({
        at: clock.now(),
        max,
        answer: (headers) => resolve(new Response(JSON.stringify({ usage: { total_tokens: 7 + max } }), { status: 200, headers: { ...json, ...headers } })),
      });
    });
  }) as typeof globalThis.fetch;
  return { arrivals, fetch };
}

describe("openai(): header correction", () => {
  test("remaining less the tokens of calls sent after the answered one; the refill is the reported reset's", async () => {
    const clock = new ManualClock();
    const server = manual(clock);
    const api = createThrottledFetch({ ...openai({ rpm: 100, tpm: 1000, clock }), fetch: server.fetch });
    const a = api(URL_, chat(10)); // 17 tokens, granted at 0
    const b = api(URL_, chat(10)); // 17 tokens, granted at 0 after A
    await clock.advance(100);
    expect(server.arrivals.map((x) => x.at)).toEqual([0, 0]);
    // A's answer: 900 remain (A counted, B not yet), full again in 6 s → 100 tokens per 6000 ms.
    server.arrivals[0]!.answer({ "x-ratelimit-limit-tokens": "1000", "x-ratelimit-remaining-tokens": "900", "x-ratelimit-reset-tokens": "6s" });
    await (await a).json();
    // The server's view now: 900 − 17 (B, sent after A) = 883. A call of exactly 883 goes at once…
    const c = api(URL_, chat(876));
    await clock.advance(0);
    expect(server.arrivals.map((x) => x.at)).toEqual([0, 0, 100]);
    // …and leaves 0: a call of 17 waits 17 / (100 / 6000) = 1020 ms, until 1120. Our own window
    // (17 + 17 + 883 + 17 ≤ 1000) would have sent it at once.
    const d = api(URL_, chat(10));
    await clock.advance(1019);
    expect(server.arrivals).toHaveLength(3);
    await clock.advance(1);
    expect(server.arrivals.map((x) => x.at)).toEqual([0, 0, 100, 1120]);
    for (const x of server.arrivals.slice(1)) x.answer({});
    await Promise.all([b, c, d].map(async (p) => (await p).json()));
  });

  test("an answer to a call sent before one already applied changes nothing", async () => {
    const clock = new ManualClock();
    const server = manual(clock);
    const api = createThrottledFetch({ ...openai({ rpm: 100, tpm: 2000, clock }), fetch: server.fetch });
    const a = api(URL_, chat(10));
    const b = api(URL_, chat(10));
    await clock.advance(50);
    // B (sent after A) answers first: 966 remain, reset 0 s → refill at the limit's rate, 2000 a minute.
    server.arrivals[1]!.answer({ "x-ratelimit-remaining-tokens": "966", "x-ratelimit-reset-tokens": "0s" });
    await (await b).json();
    await clock.advance(10);
    // A's older answer says 1500 remain: stale (B's is newer), ignored.
    server.arrivals[0]!.answer({ "x-ratelimit-remaining-tokens": "1500", "x-ratelimit-reset-tokens": "0s" });
    await (await a).json();
    // At 60 the view is 966 + 10 / 30 = 966.33; a call of 1000 (993 + 7) waits (1000 − 966.33) × 30
    // = 1010 ms → 1070. Had the stale answer applied (1500 − 17), it would have gone at once.
    const c = api(URL_, chat(993));
    await clock.advance(1009);
    expect(server.arrivals).toHaveLength(2);
    await clock.advance(1);
    expect(server.arrivals.map((x) => x.at)).toEqual([0, 0, 1070]);
    server.arrivals[2]!.answer({});
    await (await c).json();
  });

  test("a reported limit below a queued call fails that call, and the budget is lowered for the next ones", async () => {
    const clock = new ManualClock();
    const server = manual(clock);
    const api = createThrottledFetch({ ...openai({ rpm: 100, tpm: 1000, clock }), fetch: server.fetch });
    const a = api(URL_, chat(900)); // 907 tokens, granted at 0
    const queued = api(URL_, chat(600)).catch((e: unknown) => e); // 607: waits (907 + 607 > 1000)
    const tooBig = api(URL_, chat(800)).catch((e: unknown) => e); // 807: waits
    await clock.advance(10);
    server.arrivals[0]!.answer({ "x-ratelimit-limit-tokens": "700" });
    expect((await a).status).toBe(200);
    // 807 > 700 can never be sent: it fails at once, naming the cost and both numbers.
    const error = await tooBig;
    expect(error).toBeInstanceOf(RangeError);
    expect(String(error)).toMatch(/`cost\.tokens` must be at most 700 .*got 807/);
    // 607 ≤ 700 fits the lowered limit: it stays queued. A new one whose output alone (710) passes
    // it is refused at once (one of 707 whose output fits is reserved at the whole 700 instead: the
    // server counts max(output, prompt) up front).
    expect(await api(URL_, chat(710)).catch((e: unknown) => e)).toBeInstanceOf(RangeError);
    // The window holds A's 907 until 60 000: the queued 607 goes then, as the lowered limit allows.
    await clock.advance(59_990);
    expect(server.arrivals.map((x) => x.at)).toEqual([0, 60_000]);
    server.arrivals[1]!.answer({});
    expect(((await queued) as Response).status).toBe(200);
  });
});
