// Red team (fetch): "RateLimit headers that say 0 left pause everyone before the server has to say
// no", "counting own in-flight requests", and "a 429 seen by one caller slows all callers of that
// key" — against my own fixed-window server model in virtual time (100 ms latency, arrivals counted
// on arrival, quota reported when answering). The lean path, the full path and the lean path with a
// caller signal on every call must make the server see the same requests at the same instants.
import { describe, expect, test } from "vitest";
import { createThrottledFetch, KeyedLimiter, ManualClock, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import { resolveOptions, type ThrottledFetchOptions } from "../../src/http/options.ts";
import { throttledFetchOf } from "../../src/http/throttled-fetch.ts";

const EPOCH0 = Date.UTC(2025, 0, 15, 12, 0, 0);
const flush = async (turns = 8) => {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
};

type Dialect = "x-ratelimit" | "ratelimit-draft" | "ratelimit-remaining";
let QUOTA = 3;
const WINDOW = 1000;
const LATENCY = 100;

function headersFor(dialect: Dialect, remaining: number, resetMs: number): Record<string, string> {
  const resetS = String(Math.ceil(resetMs / 1000));
  switch (dialect) {
    case "x-ratelimit":
      return { "X-RateLimit-Limit": String(QUOTA), "X-RateLimit-Remaining": String(remaining), "X-RateLimit-Reset": resetS };
    case "ratelimit-draft":
      return { RateLimit: `"default";r=${remaining};t=${resetS}`, "RateLimit-Policy": `"default";q=${QUOTA};w=${WINDOW / 1000}` };
    case "ratelimit-remaining":
      return { "RateLimit-Limit": String(QUOTA), "RateLimit-Remaining": String(remaining), "RateLimit-Reset": resetS };
  }
}

async function scenario(path: "lean" | "full" | "signal" | "hooks", dialect: Dialect, paced = false) {
  QUOTA = paced ? 5 : 3;
  const throttles: string[] = [];
  const clock = new ManualClock();
  const log: string[] = [];
  // A refusal is "informed" when, before it was sent, the client had already received an answer
  // given in the same server window (reporting that window's remaining quota): the client knew.
  // Refusals in a window's first burst (the client cannot know the new window yet) do not count.
  let informedRefusals = 0;
  const firstAnswerIn = new Map<number, number>();
  const refusals: { arrival: number; index: number }[] = [];
  let windowIndex = -1;
  let used = 0;
  const options: ThrottledFetchOptions = {
    limiter: paced ? new SmoothLimiter({ limit: 20, interval: 1000, clock }) : new WindowLimiter({ limit: 100, interval: 1000, clock }),
    clock,
    ...(path === "hooks" && {
      onThrottle: (e: { reason: string; response: Response }) => {
        throttles.push(`${e.reason} remaining=${e.response.headers.get("x-ratelimit-remaining") ?? e.response.headers.get("ratelimit-remaining") ?? e.response.headers.get("ratelimit")}`);
      },
    }),
    wallClock: () => EPOCH0 + clock.now(),
    random: () => 0.5,
    fetch: (input, init) => {
      const arrival = clock.now();
      const index = Math.floor(arrival / WINDOW);
      if (index !== windowIndex) (windowIndex = index, used = 0);
      const accepted = used < QUOTA;
      if (accepted) used++;
      const id = new URL(String(input)).pathname;
      return new Promise<Response>((resolve, reject) => {
        const signal = init?.signal ?? undefined;
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
        clock.setTimeout(() => {
          const now = clock.now();
          const nowIndex = Math.floor(now / WINDOW);
          if (!firstAnswerIn.has(nowIndex)) firstAnswerIn.set(nowIndex, now);
          const remaining = nowIndex === windowIndex ? QUOTA - used : QUOTA;
          const resetMs = (nowIndex + 1) * WINDOW - now;
          log.push(`${arrival} ${id} ${accepted ? 200 : 429}`);
          if (!accepted) {
            refusals.push({ arrival, index });
            resolve(new Response("no", { status: 429, headers: { "Retry-After": String(Math.ceil(((index + 1) * WINDOW - arrival) / 1000)) } }));
          } else resolve(new Response("ok", { headers: headersFor(dialect, remaining, resetMs) }));
        }, LATENCY);
      });
    },
  };
  const api = path === "full" ? throttledFetchOf(resolveOptions(options), true) : createThrottledFetch(options);
  const controller = new AbortController();
  const results: string[] = [];
  const loops = [0, 1, 2, 3].map(async (c) => {
    for (let i = 0; i < 6; i++) {
      const r = await api(`https://q.test/c${c}/r${i}`, path === "signal" ? { signal: controller.signal } : undefined);
      results.push(`c${c}/r${i} ${r.status}`);
      await r.text();
    }
  });
  const all = Promise.all(loops);
  let done = false;
  void all.then(() => (done = true));
  for (let spins = 0; !done && spins < 10_000; spins++) {
    await flush();
    if (!done && clock.pendingTimers > 0) await clock.advanceTo(clock.nextTimerAt!);
  }
  await all;
  for (const r of refusals) if (r.arrival >= (firstAnswerIn.get(r.index) ?? Infinity)) informedRefusals++;
  return { log, results: results.sort(), informedRefusals, refusals: refusals.length, throttles };
}

describe("red team: quota headers and own requests in flight, lean vs full", () => {
  for (const dialect of ["x-ratelimit", "ratelimit-draft", "ratelimit-remaining"] as const) {
    test(`${dialect}: no refusal once the client has heard this window's quota; lean, full and signalled runs agree`, async () => {
      const lean = await scenario("lean", dialect);
      const full = await scenario("full", dialect);
      const signal = await scenario("signal", dialect);
      expect(lean.results).toHaveLength(24);
      expect(lean.results.every((r) => r.endsWith(" 200"))).toBe(true); // first-burst 429s retried
      expect(lean.informedRefusals).toBe(0);
      expect(full.log).toEqual(lean.log);
      expect(signal.log).toEqual(lean.log);
      // The branch this is about was reached: answers reported 0 left with others in flight, and
      // each window's first burst (4 callers released by the pause, quota 3) drew one refusal.
      expect(lean.refusals).toBeGreaterThan(0);
    });
  }
});

describe("red team: own requests in flight count against a remaining quota above 0", () => {
  for (const dialect of ["x-ratelimit", "ratelimit-remaining"] as const) {
    test(`${dialect}, callers paced 50 ms apart: answers with remaining > 0 pause the client; lean, full, signal agree`, async () => {
      const lean = await scenario("lean", dialect, true);
      const full = await scenario("full", dialect, true);
      const signal = await scenario("signal", dialect, true);
      const hooks = await scenario("hooks", dialect, true);
      expect(lean.results.every((r) => r.endsWith(" 200"))).toBe(true);
      expect(lean.informedRefusals).toBe(0);
      expect(full.log).toEqual(lean.log);
      expect(signal.log).toEqual(lean.log);
      expect(hooks.log).toEqual(lean.log);
      // Reach: the pause came from "remaining ≤ my other requests in flight" with remaining > 0.
      expect(hooks.throttles.filter((t) => /quota-exhausted remaining=[1-9]/.test(t)).length).toBeGreaterThan(0);
    });
  }
});

describe("red team: a 429 slows every caller of that key, and only that key", () => {
  test("KeyedLimiter per origin: a 429 from one host pauses its callers (queued ones keep their order), not the other host's", async () => {
    const clock = new ManualClock();
    const sent: string[] = [];
    let first = true;
    const api = createThrottledFetch({
      limiter: new KeyedLimiter({ create: () => new WindowLimiter({ limit: 100, interval: 1000, clock }), clock }),
      clock,
      random: () => 0.5,
      fetch: async (input) => {
        const url = new URL(String(input));
        sent.push(`${clock.now()} ${url.host}${url.pathname}`);
        if (url.host === "slow.test" && first) {
          first = false;
          return new Response("no", { status: 429, headers: { "Retry-After": "2" } });
        }
        return new Response("ok");
      },
    });
    const calls = [api("https://slow.test/a")];
    await flush();
    calls.push(api("https://slow.test/b"), api("https://fast.test/c"), api("https://slow.test/d"), api("https://fast.test/e"));
    for (let i = 0; i < 40; i++) {
      await flush();
      await clock.advance(100);
    }
    const statuses = await Promise.all(calls.map(async (p) => (await p).status));
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    expect(sent).toEqual([
      "0 slow.test/a",
      "0 fast.test/c",
      "0 fast.test/e",
      "2000 slow.test/a", // the 429'd caller keeps its place ahead of later callers
      "2000 slow.test/b",
      "2000 slow.test/d",
    ]);
  });
});
