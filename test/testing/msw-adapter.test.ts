/**
 * The msw adapter (test/support/msw-simulated.ts): sluice's throttled fetch calling the global
 * fetch, intercepted by msw and answered by a simulated server in virtual time.
 */
import { setupServer } from "msw/node";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createThrottledFetch } from "../../src/http/throttled-fetch.ts";
import { FixedWindowServer, ManualClock, serveModel } from "../../src/testing.ts";
import { simulatedHandler } from "../support/msw-simulated.ts";

const msw = setupServer();
beforeAll(() => msw.listen({ onUnhandledFrame: "error" }));
afterAll(() => msw.close());

test("through msw: 40 requests at the documented limit of a fixed window with a random phase, zero 429s", async () => {
  const clock = new ManualClock();
  const { handler, fetch } = simulatedHandler("https://api.example.com", {
    server: serveModel(new FixedWindowServer({ limit: 5, interval: 1000, phase: "random", seed: 9, headers: ["ietf", "retry-after"] })),
    clock,
    latency: { min: 10, max: 100 },
  });
  msw.use(handler);
  const api = createThrottledFetch({ limit: 5, interval: 1000, clock }); // no `fetch`: the global one, which msw intercepts
  const done = Promise.all(Array.from({ length: 40 }, (_, i) => api(`https://api.example.com/items/${i}`)));
  await clock.runAll();
  const responses = await done;
  expect(responses.map((r) => r.status)).toEqual(Array(40).fill(200));
  expect(fetch.stats.byStatus).toEqual({ 200: 40 });
  expect(responses[0]!.headers.get("ratelimit-policy")).toBe('"default";q=5;w=1');
});
