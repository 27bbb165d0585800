/**
 * Per-origin limits: one throttled fetch for every host you call, each host with its own limiter,
 * created on first use and forgotten when idle. A 429 from one host pauses only that host.
 *
 *   node examples/throttled-fetch-per-origin.ts
 *
 * (In your project, import from "sluice" instead of "../src/index.ts".)
 */
import { createThrottledFetch, KeyedLimiter, WindowLimiter } from "../src/index.ts";
import { startLocalApi } from "./support/local-api.ts";

const slow = await startLocalApi({ limit: 2, window: 500 }); // 4 per second
const fast = await startLocalApi({ limit: 20, window: 500 }); // 40 per second
try {
  const limits: Record<string, number> = { [slow.url]: 2, [fast.url]: 20 };
  const perOrigin = new KeyedLimiter({
    // The key is the request's origin (the default `key`), e.g. "http://127.0.0.1:53121".
    create: (origin: string) => new WindowLimiter({ limit: limits[origin] ?? 1, interval: 500, countFrom: "completion" }),
  });
  const api = createThrottledFetch({ limiter: perOrigin });

  slow.refuseNext(1, 500); // pauses the slow host only
  const started = performance.now();
  const finished: Record<string, number> = {};
  await Promise.all([
    ...Array.from({ length: 6 }, (_, i) => api(`${slow.url}/a/${i}`).then((r) => r.body?.cancel()).then(() => (finished.slow = performance.now() - started))),
    ...Array.from({ length: 40 }, (_, i) => api(`${fast.url}/b/${i}`).then((r) => r.body?.cancel()).then(() => (finished.fast = performance.now() - started))),
  ]);
  console.log(`fast host: 40 requests done after ${finished.fast!.toFixed(0)} ms (not held up by the slow host's 429)`);
  console.log(`slow host: 6 requests done after ${finished.slow!.toFixed(0)} ms`);
  console.log(`429s: slow ${slow.refused} (forced), fast ${fast.refused}; limiters: ${perOrigin.size}`);
  if (fast.refused !== 0 || slow.refused !== 1) process.exitCode = 1;
} finally {
  await Promise.all([slow.close(), fast.close()]);
}
