/**
 * Whether the throttled fetch has the `cost`/`settle` options (SPEC-fetch-costs): giving `cost` and
 * `permits` together is a TypeError there, and nothing before. The end-to-end profile tests run only
 * when it has them.
 */
import { createThrottledFetch } from "../../src/index.ts";

export const FETCH_HAS_COSTS: boolean = (() => {
  try {
    createThrottledFetch({ limit: 1, permits: 1, cost: 1 } as never);
    return false;
  } catch (error) {
    return error instanceof TypeError;
  }
})();

/**
 * Whether the fetch computes a request's `cost` before its `key`. The LLM profiles find the model
 * (the key of its budgets) in the body, which only the async `cost` can read: when the key comes
 * first, every model shares one budget (safe, but a busy model holds the others back).
 */
export const FETCH_COSTS_BEFORE_KEY: boolean = FETCH_HAS_COSTS && await (async () => {
  const { KeyedLimiter, WindowLimiter } = await import("../../src/index.ts");
  const order: string[] = [];
  const api = createThrottledFetch({
    limiter: new KeyedLimiter<string>({ create: () => new WindowLimiter({ limit: 10, interval: 1000 }) }),
    key: () => (order.push("key"), "k"),
    cost: () => (order.push("cost"), 1),
    fetch: async () => new Response(""),
  } as never);
  await (await api("https://example.com/")).text();
  return order[0] === "cost";
})();

/**
 * Whether the fetch's `maxConcurrent` keeps a named combination's dimensions, so a per-dimension
 * cost (`{ requests: 1, tokens: 500 }`) still works with it.
 */
export const FETCH_SLOTS_WITH_DIMENSIONS: boolean = FETCH_HAS_COSTS && await (async () => {
  const { combine, WindowLimiter } = await import("../../src/index.ts");
  const api = createThrottledFetch({
    limiter: combine({ requests: new WindowLimiter({ limit: 10, interval: 1000 }), tokens: new WindowLimiter({ limit: 10, interval: 1000 }) }),
    cost: { requests: 1, tokens: 2 },
    maxConcurrent: 1,
    fetch: async () => new Response(""),
  } as never);
  try {
    await (await api("https://example.com/")).text();
    return true;
  } catch {
    return false;
  }
})();
