// Red team (fetch): README sentences checked in virtual time against a scripted fetch.
import { describe, expect, test } from "vitest";
import { createThrottledFetch, ManualClock, WindowLimiter } from "../../src/index.ts";
import { track } from "../helpers.ts";

const flush = async (turns = 20) => {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
};

describe("red team: totalTimeout counts the whole call", () => {
  test("a retry whose wait would end after totalTimeout is not made when the call began with a slow Request body", async () => {
    // README: totalTimeout bounds "the whole call — reading a Request's body, queueing, attempts and
    // retry waits", and a retry is never made "when the wait would end after totalTimeout" (the
    // caller then gets the response). Reference model: the call began at t=0; its body arrived at
    // t=600; 503 + Retry-After 0.3 s → retry at 900 (900 < 1000: allowed); 503 again at 900 → a
    // wait to 1200 > 1000: not retried, the caller gets that 503. Regression: was a TimeoutError (2
    // attempts sent) — the loop measured elapsed from after the body read (`started` in
    // src/http/attempts.ts was read after planBody/cost); now it is read when the call is made.
    const clock = new ManualClock();
    const sent: number[] = [];
    const api = createThrottledFetch({
      limiter: new WindowLimiter({ limit: 100, interval: 1000, clock }),
      clock,
      totalTimeout: 1000,
      random: () => 0,
      fetch: async () => {
        sent.push(clock.now());
        return new Response("busy", { status: 503, headers: { "Retry-After": "0.3" } });
      },
    });
    let push!: () => void;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        push = () => {
          controller.enqueue(new TextEncoder().encode("payload"));
          controller.close();
        };
      },
    });
    const request = new Request("https://api.test/put", { method: "PUT", body, duplex: "half" } as RequestInit);
    const call = track(clock, api(request));
    await clock.advance(600);
    push(); // the body took 600 ms to arrive
    await flush();
    for (let i = 0; i < 20 && !call.settled; i++) {
      await clock.advance(50);
      await flush();
    }
    expect(sent[0]).toBe(600);
    // The reference: 600 (503, wait 300 → 900 ≤ 1000: retried), 900 (503: 900+300 > 1000: final).
    expect(call.error).toBeUndefined();
    expect((call.value as Response | undefined)?.status).toBe(503);
    expect(sent).toEqual([600, 900]);
  });

  test("the same holds when an async `cost` takes the time (the wait is measured from the call's start)", async () => {
    const clock = new ManualClock();
    const sent: number[] = [];
    const api = createThrottledFetch({
      limiter: new WindowLimiter({ limit: 100, interval: 1000, clock }),
      clock,
      totalTimeout: 1000,
      random: () => 0,
      cost: () => new Promise<number>((resolve) => clock.setTimeout(() => resolve(1), 600)),
      settle: () => undefined,
      fetch: async () => {
        sent.push(clock.now());
        return new Response("busy", { status: 503, headers: { "Retry-After": "0.3" } });
      },
    });
    const call = track(clock, api("https://api.test/get"));
    for (let i = 0; i < 40 && !call.settled; i++) {
      await clock.advance(50);
      await flush();
    }
    expect(call.error).toBeUndefined();
    expect((call.value as Response | undefined)?.status).toBe(503);
    expect(sent).toEqual([600, 900]);
  });

  test("control: without the slow start, the final 503 is returned (not a TimeoutError)", async () => {
    const clock = new ManualClock();
    const sent: number[] = [];
    const api = createThrottledFetch({
      limiter: new WindowLimiter({ limit: 100, interval: 1000, clock }),
      clock,
      totalTimeout: 1000,
      random: () => 0,
      fetch: async () => {
        sent.push(clock.now());
        return new Response("busy", { status: 503, headers: { "Retry-After": "0.6" } });
      },
    });
    const call = track(clock, api("https://api.test/get"));
    for (let i = 0; i < 40 && !call.settled; i++) {
      await clock.advance(50);
      await flush();
    }
    expect(call.error).toBeUndefined();
    expect((call.value as Response).status).toBe(503);
    expect(sent).toEqual([0, 600]);
  });
});

describe("red team: fetch's own semantics", () => {
  test("headers given as a one-shot iterable (a generator of pairs) reach the server, as with fetch", async () => {
    // README: "a function with fetch's exact signature and semantics"; "Each attempt calls the
    // underlying fetch with your own input and a copy of your init". fetch accepts any iterable of
    // pairs as `headers`. Regression: prepareCall (src/http/request.ts) consumed the iterator with
    // `new Headers(init.headers)`, then passed the same exhausted iterator to fetch: the header was
    // silently dropped (and, being read again lazily, missing from the secrets scrubbed from errors).
    function* pairs(): Generator<[string, string]> {
      yield ["x-api-key", "k-123"];
    }
    const seenPlain: (string | null)[] = [];
    const record = async (input: RequestInfo | URL, init?: RequestInit) => {
      seenPlain.push(new Request(input, init).headers.get("x-api-key"));
      return new Response("ok");
    };
    await record("https://api.test/", { headers: pairs() as unknown as HeadersInit }); // plain fetch semantics
    const api = createThrottledFetch({ limit: 10, fetch: record });
    await api("https://api.test/", { headers: pairs() as unknown as HeadersInit });
    expect(seenPlain).toEqual(["k-123", "k-123"]);
  });

  test("Retry-After as an HTTP-date is measured against the response's Date header, not a skewed wall clock", async () => {
    const clock = new ManualClock();
    const delays: number[] = [];
    const serverNow = Date.UTC(2025, 0, 15, 12, 0, 0);
    const sent: number[] = [];
    const api = createThrottledFetch({
      limiter: new WindowLimiter({ limit: 100, interval: 1000, clock }),
      clock,
      wallClock: () => serverNow + 3_600_000 + clock.now(), // the client's clock is an hour ahead
      random: () => 0,
      onRetry: ({ delay }) => delays.push(delay),
      fetch: async () => {
        sent.push(clock.now());
        return sent.length === 1
          ? new Response("x", {
            status: 429,
            headers: { Date: new Date(serverNow).toUTCString(), "Retry-After": new Date(serverNow + 3000).toUTCString() },
          })
          : new Response("ok");
      },
    });
    const call = track(clock, api("https://api.test/"));
    for (let i = 0; i < 100 && !call.settled; i++) {
      await clock.advance(100);
      await flush(3);
    }
    expect(delays).toEqual([3000]);
    expect(sent).toEqual([0, 3000]);
  });
});

describe("red team: a call is what the caller passed when calling, as with fetch", () => {
  for (const path of ["lean", "full"] as const) {
    test(`${path}: a queued call sends the headers and body given at call time, not the init object's later state`, async () => {
      // fetch reads `init` when called; a caller that reuses one init object across calls (a page
      // cursor header, a body per item) gets each call sent as it was made. Reference model: plain
      // fetch. Regression (fixed by `callInit`, a call-time copy): queued calls read the caller's init (headers object, and with `retry: 0`
      // the body) when their attempt is sent — every queued call goes out with the LAST values.
      // Root cause: src/http/request.ts attemptInit passes/copies `init` at each attempt (the lean
      // path passes it as is), so nothing of it is captured at call time except a retry's body.
      const clock = new ManualClock();
      const wire: string[] = [];
      const options = {
        limiter: new WindowLimiter({ limit: 1, interval: 1000, clock }),
        clock,
        retry: 0,
        fetch: async (input: RequestInfo | URL, init?: RequestInit) => {
          const r = new Request(input, init);
          wire.push(`${r.headers.get("x-page")} ${await r.text()}`);
          return new Response("ok");
        },
      };
      const { resolveOptions } = await import("../../src/http/options.ts");
      const { throttledFetchOf } = await import("../../src/http/throttled-fetch.ts");
      const api = path === "lean" ? createThrottledFetch(options) : throttledFetchOf(resolveOptions(options), true);
      const init = { method: "POST", headers: { "x-page": "" } as Record<string, string>, body: "" };
      const calls: Promise<Response>[] = [];
      for (const page of ["1", "2", "3"]) {
        init.headers["x-page"] = page;
        init.body = `item ${page}`;
        calls.push(api("https://api.test/items", init));
      }
      for (let i = 0; i < 30; i++) {
        await flush(3);
        await clock.advance(100);
      }
      await Promise.all(calls);
      expect(wire).toEqual(["1 item 1", "2 item 2", "3 item 3"]);
    });
  }
});
