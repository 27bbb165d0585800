/**
 * Red team (costs): the throttled fetch's `cost`/`settle` options (README "Costs that settle", the
 * options table), attacked with hand-made fetches in virtual time. Expected times are computed by
 * hand. (The DEFECT found here is fixed; its test is a regression test now.)
 */
import { describe, expect, test } from "vitest";
import { combine, createThrottledFetch, ManualClock, WindowLimiter } from "../../src/index.ts";
import { openai } from "../../src/vendors.ts";

const SECRET = "sk-SECRET-4242";
const URL_WITH_SECRET = `https://api.example.com/v1/x?api_key=${SECRET}#${SECRET}`;
/** Userinfo makes `new Request` throw (as native fetch does): that message is checked too. */
const URL_WITH_USERINFO = `https://user:${SECRET}@api.example.com/v1/x?api_key=${SECRET}`;

function budgets(clock: ManualClock) {
  const requests = new WindowLimiter({ limit: 5, interval: 1000, clock });
  const tokens = new WindowLimiter({ limit: 100, interval: 1000, clock });
  return { requests, tokens, llm: combine({ requests, tokens }) };
}

/** A fetch that records when each request arrived and answers 200 at once (own stub). */
function stubFetch(clock: ManualClock, body: () => BodyInit | null = () => "{}") {
  const arrivals: number[] = [];
  const fetch = async (_input: RequestInfo | URL, _init?: RequestInit): Promise<Response> => {
    arrivals.push(clock.now());
    return new Response(body(), { status: 200, headers: { "content-type": "application/json" } });
  };
  return { arrivals, fetch: fetch as typeof globalThis.fetch };
}

function when<T>(clock: ManualClock, p: Promise<T>): { at?: number; value?: T; error?: unknown } {
  const o: { at?: number; value?: T; error?: unknown } = {};
  p.then((v) => { o.at = clock.now(); o.value = v; }, (e: unknown) => { o.at = clock.now(); o.error = e; });
  return o;
}

describe("red team costs: fetch cost validation", () => {
  test("a cost that can never fit rejects at once with a RangeError naming cost.tokens and 101; nothing is sent", async () => {
    const clock = new ManualClock();
    const { llm } = budgets(clock);
    const stub = stubFetch(clock);
    const api = createThrottledFetch({ limiter: llm, fetch: stub.fetch, clock, cost: { requests: 1, tokens: 101 } });
    const err = await api("https://api.example.com/a").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RangeError);
    expect(String((err as Error).message)).toMatch(/`cost\.tokens`.*101/);
    expect(stub.arrivals).toEqual([]);
    expect(clock.now()).toBe(0);
  });

  for (const bad of [-1, Number.NaN, Infinity, 1.5]) {
    test(`a cost function returning tokens ${bad} rejects naming cost.tokens and the value; nothing sent, nothing held`, async () => {
      const clock = new ManualClock();
      const { llm, tokens } = budgets(clock);
      const stub = stubFetch(clock);
      const api = createThrottledFetch({ limiter: llm, fetch: stub.fetch, clock, cost: () => ({ requests: 1, tokens: bad }) });
      const err = await api(URL_WITH_SECRET).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RangeError);
      expect((err as Error).message).toContain("`cost.tokens`");
      expect((err as Error).message).toContain(String(bad));
      expect((err as Error).message).not.toContain(SECRET);
      expect(stub.arrivals).toEqual([]);
      const all = when(clock, tokens.acquire(100));
      await clock.advance(0);
      expect(all.at).toBe(0);
    });
  }

  test("a static cost of 0, -1, 1.5 or Infinity is refused when the fetch is made, naming cost", () => {
    for (const bad of [0, -1, 1.5, Infinity, Number.NaN]) {
      expect(() => createThrottledFetch({ limit: 5, cost: bad })).toThrow(RangeError);
      expect(() => createThrottledFetch({ limit: 5, cost: bad })).toThrow(/`cost`/);
    }
    expect(() => createThrottledFetch({ limit: 5, cost: { tokens: -3 } })).toThrow(/`cost\.tokens`.*-3/);
    expect(() => createThrottledFetch({ limit: 5, cost: 1, permits: 1 })).toThrow(TypeError);
  });
});

describe("red team costs: fetch settle", () => {
  test("settle above the reservation is debt: 1 reserved, 250 tokens used → the next call waits until the debt leaves the window", async () => {
    const clock = new ManualClock();
    const { llm } = budgets(clock);
    const stub = stubFetch(clock);
    let n = 0;
    const api = createThrottledFetch({
      limiter: llm, fetch: stub.fetch, clock,
      cost: { requests: 1, tokens: 10 },
      settle: () => (n++ === 0 ? { tokens: 250 } : undefined),
    });
    await (await api("https://api.example.com/a")).text();
    await clock.advanceTo(100);
    const second = when(clock, api("https://api.example.com/b"));
    await clock.advance(5000);
    // 250 tokens recorded at t=0 (the settle time): 10 more fit only once they leave, at 1000.
    expect(stub.arrivals).toEqual([0, 1000]);
    expect(second.at).toBe(1000);
  });

  test("settle below the reservation refunds at once: 100 reserved, 10 used → a second 90-token call goes at once", async () => {
    const clock = new ManualClock();
    const { llm } = budgets(clock);
    const stub = stubFetch(clock);
    const api = createThrottledFetch({ limiter: llm, fetch: stub.fetch, clock, cost: { requests: 1, tokens: 100 }, settle: () => ({ tokens: 10 }) });
    const api90 = createThrottledFetch({ limiter: llm, fetch: stub.fetch, clock, cost: { requests: 1, tokens: 90 } });
    await (await api("https://api.example.com/a")).text();
    await clock.advanceTo(10);
    await api90("https://api.example.com/b");
    expect(stub.arrivals).toEqual([0, 10]);
  });

  for (const [label, value] of [["NaN", { tokens: Number.NaN }], ["-5", { tokens: -5 }], ["an unknown dimension", { tokenz: 1 }], ["a string", "lots"]] as const) {
    test(`settle returning ${label} counts as reserved (no refund, no throw to the caller)`, async () => {
      const clock = new ManualClock();
      const { llm } = budgets(clock);
      const stub = stubFetch(clock);
      let n = 0;
      const api = createThrottledFetch({
        limiter: llm, fetch: stub.fetch, clock, cost: { requests: 1, tokens: 100 },
        settle: () => (n++ === 0 ? value as never : undefined),
      });
      const r = await api("https://api.example.com/a");
      expect(r.status).toBe(200);
      await r.text();
      const second = when(clock, api("https://api.example.com/b"));
      await clock.advance(5000);
      expect(second.at).toBe(1000); // 100 tokens stayed counted
    });
  }

  test("a settle that throws rejects the call; the reservation counts in full", async () => {
    const clock = new ManualClock();
    const { llm } = budgets(clock);
    const stub = stubFetch(clock);
    let n = 0;
    const api = createThrottledFetch({
      limiter: llm, fetch: stub.fetch, clock, cost: { requests: 1, tokens: 100 },
      settle: () => { if (n++ === 0) throw new Error("bad settle"); return undefined; },
    });
    await expect(api("https://api.example.com/a")).rejects.toThrow("bad settle");
    const second = when(clock, api("https://api.example.com/b"));
    await clock.advance(5000);
    expect(second.at).toBe(1000);
  });

  test("an abort while queued for its reservation consumes nothing: the call behind it goes when the budget frees", async () => {
    const clock = new ManualClock();
    const { llm } = budgets(clock);
    const stub = stubFetch(clock);
    const api = createThrottledFetch({ limiter: llm, fetch: stub.fetch, clock, cost: { requests: 1, tokens: 100 } });
    await api("https://api.example.com/a");
    const ac = new AbortController();
    const aborted = when(clock, api("https://api.example.com/b", { signal: ac.signal }));
    const behind = when(clock, api("https://api.example.com/c"));
    await clock.advanceTo(500);
    ac.abort();
    await clock.advance(0);
    expect((aborted.error as Error).name).toBe("AbortError");
    await clock.advance(5000);
    expect(stub.arrivals).toEqual([0, 1000]);
    expect(behind.at).toBe(1000);
  });

  test("an async cost pending when the caller aborts reserves nothing", async () => {
    const clock = new ManualClock();
    const { llm, tokens } = budgets(clock);
    const stub = stubFetch(clock);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const api = createThrottledFetch({ limiter: llm, fetch: stub.fetch, clock, cost: async () => { await gate; return { requests: 1, tokens: 100 }; } });
    const ac = new AbortController();
    const p = when(clock, api("https://api.example.com/a", { signal: ac.signal }));
    ac.abort();
    release();
    await clock.advance(0);
    expect((p.error as Error).name).toBe("AbortError");
    const all = when(clock, tokens.acquire(100));
    await clock.advance(0);
    expect(all.at).toBe(0);
    expect(stub.arrivals).toEqual([]);
  });

  test("retries each take their own reservation: a 503 then 200 with settle to 10 tokens — the 503's 100 stay counted", async () => {
    const clock = new ManualClock();
    const { llm, tokens } = budgets(clock);
    const arrivals: number[] = [];
    let n = 0;
    const fetch = (async () => {
      arrivals.push(clock.now());
      return n++ === 0 ? new Response("busy", { status: 503, headers: { "retry-after": "1" } }) : new Response("{}", { status: 200 });
    }) as typeof globalThis.fetch;
    const api = createThrottledFetch({
      limiter: llm, fetch, clock, cost: { requests: 1, tokens: 50 }, retry: { limit: 1 }, random: () => 0,
      settle: (r) => (r.status === 200 ? { tokens: 10 } : undefined),
    });
    const done = when(clock, api("https://api.example.com/a"));
    await clock.advance(1000);
    await clock.advance(0);
    expect(done.at).toBe(1000);
    expect(arrivals).toEqual([0, 1000]);
    // In the window (0, 1000]: the retry's 10 tokens; the 503's 50 left at 1000. 90 fit at once.
    const rest = when(clock, tokens.acquire(90));
    await clock.advance(0);
    expect(rest.at).toBe(1000);
  });
});

describe("red team costs: no secrets in the errors of cost/settle", () => {
  test("never-fit, bad settle result, bad cost result and throttled refusals: no userinfo, query, fragment or header value", async () => {
    const clock = new ManualClock();
    const { llm } = budgets(clock);
    const stub = stubFetch(clock);
    const messages: string[] = [];
    const headers = { authorization: `Bearer ${SECRET}`, "x-api-key": SECRET };
    const grab = async (p: Promise<unknown>) => { try { await p; } catch (e) { messages.push(String(e), String((e as Error).stack)); } };
    await grab(createThrottledFetch({ limiter: llm, fetch: stub.fetch, clock, cost: { requests: 1, tokens: 1000 } })(URL_WITH_SECRET, { headers }));
    await grab(createThrottledFetch({ limiter: llm, fetch: stub.fetch, clock, cost: () => ({ requests: 1, tokens: -1 }) })(URL_WITH_SECRET, { headers }));
    await grab(createThrottledFetch({ limiter: llm, fetch: stub.fetch, clock, cost: () => "x" as never })(URL_WITH_SECRET, { headers }));
    await grab(createThrottledFetch({ limiter: llm, fetch: stub.fetch, clock, cost: 1, settle: () => ({ response: {} as Response, actual: Promise.resolve(1) }) })(URL_WITH_SECRET, { headers }));
    await grab(createThrottledFetch({ limiter: llm, fetch: stub.fetch, clock, cost: { requests: 1, tokens: 100 }, maxWait: 0 })(URL_WITH_SECRET, { headers }));
    await grab(createThrottledFetch({ limiter: llm, fetch: stub.fetch, clock, cost: { requests: 1, tokens: 100 }, maxWait: 0 })(URL_WITH_SECRET, { headers }));
    await grab(createThrottledFetch({ limiter: llm, fetch: stub.fetch, clock, cost: { requests: 1, tokens: 1 } })(URL_WITH_USERINFO, { headers }));
    expect(messages.length).toBeGreaterThanOrEqual(12);
    for (const m of messages) expect(m).not.toContain(SECRET);
  });

  test("openai(): a malformed or huge body, and a limit the server reports as garbage, put no body or key in any error", async () => {
    const clock = new ManualClock();
    const fetch = (async () => new Response("{}", { status: 200, headers: { "x-ratelimit-limit-tokens": SECRET } })) as typeof globalThis.fetch;
    const api = createThrottledFetch({ ...openai({ rpm: 10, tpm: 1000, clock }), fetch });
    const messages: string[] = [];
    for (const body of [`{"model":"${SECRET}","max_tokens":5000,"messages":[{"role":"user","content":"${SECRET}"}]}`, `not json ${SECRET}`]) {
      try { const r = await api(URL_WITH_SECRET, { method: "POST", body, headers: { authorization: `Bearer ${SECRET}` } }); await r.text(); } catch (e) { messages.push(String(e)); }
    }
    expect(messages.length).toBeGreaterThanOrEqual(1); // the 5000-token call can never fit 1000 TPM
    for (const m of messages) expect(m).not.toContain(SECRET);
  });
});

describe("red team costs: cost shape against the limiter", () => {
  test("a per-dimension cost on a limiter without named dimensions is a TypeError naming cost, nothing sent", async () => {
    const clock = new ManualClock();
    const stub = stubFetch(clock);
    const api = createThrottledFetch({ limiter: new WindowLimiter({ limit: 5, interval: 1000, clock }), fetch: stub.fetch, clock, cost: { tokens: 3 } });
    const err = await api("https://api.example.com/a").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as Error).message).toMatch(/`cost`/);
    expect(stub.arrivals).toEqual([]);
  });

  test("a cost naming an unknown dimension is a TypeError naming it, nothing sent", async () => {
    const clock = new ManualClock();
    const { llm } = budgets(clock);
    const stub = stubFetch(clock);
    const api = createThrottledFetch({ limiter: llm, fetch: stub.fetch, clock, cost: { requests: 1, tokenz: 3 } });
    const err = await api("https://api.example.com/a").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as Error).message).toMatch(/`cost\.tokenz`/);
    expect(stub.arrivals).toEqual([]);
  });
});

describe("red team costs: more fetch promises", () => {
  test("settle is called for every response, retried ones included, with its attempt number", async () => {
    const clock = new ManualClock();
    const { llm } = budgets(clock);
    let n = 0;
    const fetch = (async () => (n++ === 0 ? new Response("busy", { status: 503, headers: { "retry-after": "1" } }) : new Response("{}", { status: 200 }))) as typeof globalThis.fetch;
    const seen: Array<[number, number, unknown]> = [];
    const api = createThrottledFetch({
      limiter: llm, fetch, clock, cost: { requests: 1, tokens: 50 }, retry: { limit: 1 }, random: () => 0,
      settle: (r, { attempt, reserved }) => { seen.push([r.status, attempt, reserved]); return undefined; },
    });
    const done = when(clock, api("https://api.example.com/a"));
    await clock.advance(2000);
    expect((done.value as Response).status).toBe(200);
    expect(seen).toEqual([[503, 1, { requests: 1, tokens: 50 }], [200, 2, { requests: 1, tokens: 50 }]]);
  });

  test("an async cost that rejects fails the call with its error; nothing reserved, nothing sent", async () => {
    const clock = new ManualClock();
    const { llm, tokens } = budgets(clock);
    const stub = stubFetch(clock);
    const api = createThrottledFetch({ limiter: llm, fetch: stub.fetch, clock, cost: async () => { throw new Error("tokenizer down"); } });
    await expect(api("https://api.example.com/a")).rejects.toThrow("tokenizer down");
    const all = when(clock, tokens.acquire(100));
    await clock.advance(0);
    expect(all.at).toBe(0);
    expect(stub.arrivals).toEqual([]);
  });

  test("openai() with a streamed (non-replayable) request body reads it for its estimate: the server gets the whole body, and a 500-token call on a 400 TPM budget fails at once", async () => {
    // Was a DEFECT: the fetch handed `cost` no body when it was streamed, so the profile reserved
    // { requests: 1, tokens: 0 } silently. The fetch now tees a streamed body for `cost`.
    const clock = new ManualClock();
    const received: string[] = [];
    const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      received.push(await new Request(input, init).text());
      return new Response(JSON.stringify({ usage: { total_tokens: 10 } }), { status: 200, headers: { "content-type": "application/json" } });
    }) as typeof globalThis.fetch;
    const api = createThrottledFetch({ ...openai({ rpm: 10, tpm: 1000, clock }), fetch });
    const text = JSON.stringify({ model: "m", max_tokens: 500, messages: [{ role: "user", content: "hi" }] });
    const body = new ReadableStream<Uint8Array>({ start(c) { c.enqueue(new TextEncoder().encode(text)); c.close(); } });
    const r = await api("https://api.openai.com/v1/chat/completions", { method: "POST", body, headers: { "content-type": "application/json" }, duplex: "half" } as RequestInit);
    await r.json();
    expect(received).toEqual([text]);
    // …and the cost did read it: the same body on a 400 TPM budget can never fit (500 > 400).
    const small = createThrottledFetch({ ...openai({ rpm: 10, tpm: 400, clock }), fetch });
    const body2 = new ReadableStream<Uint8Array>({ start(c) { c.enqueue(new TextEncoder().encode(text)); c.close(); } });
    await expect(small("https://api.openai.com/v1/chat/completions", { method: "POST", body: body2, headers: { "content-type": "application/json" }, duplex: "half" } as RequestInit)).rejects.toThrow(RangeError);
    expect(received.length).toBe(1);
  });

  test("a streamed request body's model picks its budget: the model's own 400 TPM refuses a 507-token call the default 10 000 would take", async () => {
    const clock = new ManualClock();
    const received: string[] = [];
    const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      received.push(await new Request(input, init).text());
      return new Response(JSON.stringify({ usage: { total_tokens: 10 } }), { status: 200, headers: { "content-type": "application/json" } });
    }) as typeof globalThis.fetch;
    const api = createThrottledFetch({ ...openai({ rpm: 10, tpm: 10_000, models: { small: { rpm: 10, tpm: 400 } }, clock }), fetch });
    const stream = (model: string) => {
      const text = JSON.stringify({ model, max_tokens: 500, messages: [{ role: "user", content: "hi" }] });
      return { text, body: new ReadableStream<Uint8Array>({ start(c) { c.enqueue(new TextEncoder().encode(text)); c.close(); } }) };
    };
    const big = stream("big");
    const r = await api("https://api.openai.com/v1/chat/completions", { method: "POST", body: big.body, headers: { "content-type": "application/json" }, duplex: "half" } as RequestInit);
    expect(r.status).toBe(200);
    await r.text();
    const small = stream("small");
    await expect(api("https://api.openai.com/v1/chat/completions", { method: "POST", body: small.body, headers: { "content-type": "application/json" }, duplex: "half" } as RequestInit)).rejects.toThrow(/model "small" .*limit of 400 tokens a minute/);
    expect(received).toEqual([big.text]);
  });
});
