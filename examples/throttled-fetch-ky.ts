/**
 * ky on a shared limiter: give ky the throttled fetch and turn ky's retries off, so that retries
 * are decided once — by sluice, which honours Retry-After, pauses every caller on a 429 and knows
 * which methods are safe to repeat. (ky's own retries, if left on, still pass through the limiter:
 * ky calls its `fetch` option for every attempt.)
 *
 *   node examples/throttled-fetch-ky.ts
 *
 * (In your project, import from "sluice" instead of "../src/index.ts".)
 */
import ky from "ky";
import { createThrottledFetch, WindowLimiter } from "../src/index.ts";
import { startLocalApi } from "./support/local-api.ts";

const api = await startLocalApi({ limit: 4, window: 400 });
try {
  const limiter = new WindowLimiter({ limit: 4, interval: 400, countFrom: "completion" });
  const client = ky.create({ prefix: api.url, fetch: createThrottledFetch({ limiter }), retry: 0 });

  api.refuseNext(1, 300); // the server throttles once: every caller waits 300 ms, then all complete
  const started = performance.now();
  const items = await Promise.all(
    Array.from({ length: 12 }, (_, i) => client.get(`items/${i}`).json<{ path: string; status: number }>()),
  );
  console.log(`${items.length} items through ky in ${((performance.now() - started) / 1000).toFixed(2)} s`);
  console.log(`server: ${api.accepted} accepted, ${api.refused} refused (the one forced 429, retried)`);
  if (api.refused !== 1) process.exitCode = 1;
} finally {
  await api.close();
}
