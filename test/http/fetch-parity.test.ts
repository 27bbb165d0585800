// The throttled fetch against fetch's own semantics, case by case (red-team findings, 2026-11-27).
import { describe, expect, test } from "vitest";
import { createThrottledFetch, ManualClock, WindowLimiter } from "../../src/index.ts";

describe("a URL (or any object but a Request) is read when the call is made, as fetch reads it", () => {
  test("a pagination loop reusing one URL object requests every page, queued or not", async () => {
    const clock = new ManualClock();
    const sent: string[] = [];
    const api = createThrottledFetch({
      limiter: new WindowLimiter({ limit: 2, interval: 1000, clock }),
      clock,
      fetch: async (input) => {
        sent.push(String(input));
        return new Response("ok");
      },
    });
    const url = new URL("https://api.test/items");
    const calls: Promise<Response>[] = [];
    for (let page = 1; page <= 4; page++) {
      url.searchParams.set("page", String(page));
      calls.push(api(url));
    }
    await clock.runUntil(Promise.all(calls));
    // Before: pages 1, 2, 4, 4 (the queued ones were read when they went).
    expect(sent).toEqual([1, 2, 3, 4].map((p) => `https://api.test/items?page=${p}`));
  });

  test("a retry goes where the call went, whatever the caller does to the URL meanwhile", async () => {
    const clock = new ManualClock();
    const sent: string[] = [];
    const api = createThrottledFetch({
      limit: 100,
      interval: 1000,
      clock,
      random: () => 0,
      fetch: async (input, init) => {
        sent.push(`${init?.method} ${String(input)}`);
        return sent.length === 1 ? new Response(null, { status: 503, headers: { "retry-after": "1" } }) : new Response("ok");
      },
    });
    const url = new URL("https://api.test/orders/1");
    const call = api(url, { method: "DELETE" });
    url.pathname = "/orders/2";
    await clock.runUntil(call);
    // Before: the retry was `DELETE /orders/2`, a write to another resource.
    expect(sent).toEqual(["DELETE https://api.test/orders/1", "DELETE https://api.test/orders/1"]);
  });

  test("an object with toString is converted once per call, as fetch does, not once per attempt", async () => {
    let conversions = 0;
    let attempts = 0;
    const target = { toString: () => (conversions++, "https://api.test/x") };
    const api = createThrottledFetch({ limit: 100, interval: 1000, random: () => 0, retry: { backoff: { base: 1, cap: 1 } }, fetch: async (input) => {
      // As fetch does: the input is converted to a string when fetch is called.
      String(input);
      return new Response(null, { status: ++attempts === 1 ? 503 : 200 });
    } });
    await api(target as unknown as URL);
    expect(attempts).toBe(2);
    expect(conversions).toBe(1);
  });
});
