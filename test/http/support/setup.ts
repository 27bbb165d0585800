/**
 * One throttled fetch in virtual time: a ManualClock, a scripted fetch, a limiter on that clock.
 */
import { ManualClock } from "../../../src/clock.ts";
import type { Limiter } from "../../../src/limiters/limiter.ts";
import { WindowLimiter } from "../../../src/limiters/window.ts";
import { createThrottledFetch, type ThrottledFetch } from "../../../src/http/throttled-fetch.ts";
import type { ThrottledFetchOptions } from "../../../src/http/options.ts";
import { StubFetch } from "./stub-fetch.ts";

/** Epoch time at virtual t = 0: Wed, 15 Jan 2025 12:00:00 GMT. */
export const EPOCH0 = Date.UTC(2025, 0, 15, 12, 0, 0);

export interface Harness {
  clock: ManualClock;
  stub: StubFetch;
  limiter: Limiter;
  api: ThrottledFetch;
}

export function setup(
  options: Partial<ThrottledFetchOptions> & { makeLimiter?: (clock: ManualClock) => Limiter } = {},
): Harness {
  const clock = new ManualClock();
  const stub = new StubFetch(clock);
  const { makeLimiter, ...rest } = options;
  const limiter = makeLimiter?.(clock) ?? new WindowLimiter({ limit: 100, interval: 1000, clock });
  const api = createThrottledFetch({
    limiter,
    clock,
    fetch: stub.fetch,
    wallClock: () => EPOCH0 + clock.now(),
    // Jitter at half the step unless a test says otherwise: backoff 500 ms, 1000 ms, 2000 ms, …
    random: () => 0.5,
    ...rest,
  });
  return { clock, stub, limiter, api };
}
