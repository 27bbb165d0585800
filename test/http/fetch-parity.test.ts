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

describe("maxConcurrent keeps the limiter's own bounds", () => {
  test("maxQueue, maxWait and priorityAging of the limiter hold with maxConcurrent as without (a slot cap that never binds)", async () => {
    // Red-team (2026-11-27): with maxConcurrent the attempts queued on a combination made with
    // default bounds — nobody was refused, and priorities aged at the default pace.
    const run = async (bounds: object, maxConcurrent: number | undefined) => {
      const clock = new ManualClock();
      const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock, ...bounds });
      const api = createThrottledFetch({ limiter, clock, retry: 0, ...(maxConcurrent !== undefined && { maxConcurrent }), fetch: async () => new Response(null, { status: 204 }) });
      const outcomes = [0, 1, 2, 3, 4].map((i) =>
        api(`https://x.test/${i}`, { priority: i === 4 ? "high" : "low" } as RequestInit).then(() => `${i}@${clock.now()}`, (e: Error) => `${i}:${e.name}`));
      await clock.runUntil(Promise.all(outcomes));
      return Promise.all(outcomes);
    };
    for (const bounds of [{ maxQueue: 1 }, { maxWait: 1500 }, { priorityAging: Infinity }, { priorityAging: 0 }]) {
      const without = await run(bounds, undefined);
      expect(await run(bounds, 4)).toEqual(without);
    }
    expect(await run({ maxQueue: 1 }, 4)).toEqual(["0@0", "1@1000", "2:QueueFullError", "3:QueueFullError", "4:QueueFullError"]);
  });
});
