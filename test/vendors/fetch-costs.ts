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
