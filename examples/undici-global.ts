/**
 * Throttle a whole Node process: one interceptor on undici's global dispatcher paces every client
 * built on undici — Node's own `fetch`, undici's `request`, ky (and ofetch, SDKs…) — with ONE
 * limiter, without touching their code. The local API allows 5 requests per 500 ms; three clients
 * send 18 requests at once; later the server throttles once and everybody waits.
 *
 *   node examples/undici-global.ts
 *
 * (In your project, import from "sluice" and "sluice/undici" instead of "../src/….ts".)
 */
import ky from "ky";
import { Agent, getGlobalDispatcher, interceptors, request, setGlobalDispatcher } from "undici";
import { WindowLimiter } from "../src/index.ts";
import { throttle } from "../src/undici.ts";
import { startLocalApi } from "./support/local-api.ts";

const api = await startLocalApi({ limit: 5, window: 500 });
const previous = getGlobalDispatcher();
// The API's documented limit, counted from each response: safe against its strict window at any latency.
const limiter = new WindowLimiter({ limit: 5, interval: 500, countFrom: "completion" });
// throttle() first (innermost), the retry interceptor after it: every retry takes a permit too.
const agent = new Agent().compose(
  throttle({ limiter, onThrottle: ({ reason, paused }) => console.log(`  server said slow down (${reason}): everyone waits ${paused} ms`) }),
  interceptors.retry({ maxRetries: 2 }),
);
setGlobalDispatcher(agent); // Node's own fetch reads it too (undici mirrors it into the slot Node reads)
try {
  const started = performance.now();
  const statuses = await Promise.all([
    ...Array.from({ length: 6 }, (_, i) => fetch(`${api.url}/fetch/${i}`).then(async (r) => (await r.text(), r.status))),
    ...Array.from({ length: 6 }, (_, i) => request(`${api.url}/request/${i}`).then(async (r) => (await r.body.text(), r.statusCode))),
    ...Array.from({ length: 6 }, (_, i) => ky.get(`${api.url}/ky/${i}`, { retry: 0 }).then(async (r) => (await r.text(), r.status))),
  ]);
  const seconds = (performance.now() - started) / 1000;
  console.log(`18 requests from fetch, undici.request and ky in ${seconds.toFixed(2)} s: ${statuses.filter((s) => s === 200).length} ok`);
  console.log(`server: ${api.accepted} accepted, ${api.refused} refused`);
  if (api.refused !== 0) process.exitCode = 1;

  api.refuseNext(1, 800, 2); // the third of the next requests gets "429, come back in 800 ms"
  const more = await Promise.all(Array.from({ length: 6 }, (_, i) => fetch(`${api.url}/more/${i}`).then(async (r) => (await r.text(), r.status))));
  console.log(`6 more: ${more.filter((s) => s === 200).length} ok (the 429 was retried by undici, through the limiter)`);
  console.log(`server: ${api.accepted} accepted, ${api.refused} refused`);
  if (api.refused !== 1 || more.some((s) => s !== 200)) process.exitCode = 1;
} finally {
  setGlobalDispatcher(previous);
  await agent.close();
  await api.close();
}
