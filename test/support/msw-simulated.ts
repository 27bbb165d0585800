/**
 * An msw adapter for the simulated servers of `sluice/testing`: code that calls the global `fetch`
 * (or any client msw intercepts) meets a simulated server, in the virtual time of a ManualClock.
 * Kept out of `sluice/testing`, which must not import msw; publishing it would need its own entry
 * (e.g. `sluice/testing/msw`) with msw as an optional peer dependency.
 */
import { http, type HttpHandler } from "msw";
import { createSimulatedFetch, type SimulatedFetch, type SimulatedFetchOptions } from "../../src/testing.ts";

/** An msw handler answering every request under `origin` from a simulated server, and the server's counters. */
export function simulatedHandler(origin: string, options: SimulatedFetchOptions): { handler: HttpHandler; fetch: SimulatedFetch } {
  const fetch = createSimulatedFetch(options);
  // The simulated fetch decides, counts and delays; msw only hands it the intercepted request.
  const handler = http.all(`${origin}/*`, ({ request }) => fetch(request));
  return { handler, fetch };
}
