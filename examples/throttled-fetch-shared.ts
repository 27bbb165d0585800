/**
 * One limiter, several clients. The API allows 5 requests per 500 ms for your account, whoever
 * sends them; two parts of your app each make their own throttled fetch — with different retry
 * settings — over the SAME limiter, so together they never exceed the limit.
 *
 *   node examples/throttled-fetch-shared.ts
 *
 * (In your project, import from "sluice" instead of "../src/index.ts".)
 */
import { createThrottledFetch, WindowLimiter } from "../src/index.ts";
import { startLocalApi } from "./support/local-api.ts";

const api = await startLocalApi({ limit: 5, window: 500 });
try {
  // The account's documented limit, counted from when each response arrives: safe at any latency.
  const account = new WindowLimiter({ limit: 5, interval: 500, countFrom: "completion" });

  const reports = createThrottledFetch({ limiter: account, timeout: 30_000 });
  const billing = createThrottledFetch({ limiter: account, retry: { limit: 5 }, idempotencyKey: true });

  const started = performance.now();
  const results = await Promise.all([
    ...Array.from({ length: 10 }, (_, i) => reports(`${api.url}/reports/${i}`)),
    ...Array.from({ length: 10 }, (_, i) => billing(`${api.url}/invoices`, { method: "POST", body: JSON.stringify({ i }) })),
  ]);
  const seconds = (performance.now() - started) / 1000;
  console.log(`20 requests from 2 clients in ${seconds.toFixed(2)} s: ${results.filter((r) => r.ok).length} ok`);
  console.log(`server: ${api.accepted} accepted, ${api.refused} refused (429)`);
  await Promise.all(results.map((r) => r.body?.cancel()));
  if (api.refused !== 0) process.exitCode = 1;
} finally {
  await api.close();
}
