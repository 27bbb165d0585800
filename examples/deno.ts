/**
 * sluice on Deno: one limiter shared by concurrent callers, in front of `fetch`.
 *
 *   deno add jsr:@sluice/sluice
 *   deno run --allow-net=127.0.0.1 examples/deno.ts
 *
 * A local server stands in for an API that allows 10 requests per second; eight callers fire at
 * once and the limiter spaces them 100 ms apart, so the server never sees a burst.
 */
import { MaxWaitExceededError, SmoothLimiter } from "@sluice/sluice";

const api = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
  const id = new URL(request.url).searchParams.get("id");
  return Response.json({ id, servedAt: Math.round(performance.now()) });
});
const base = `http://127.0.0.1:${api.addr.port}`;

const limiter = new SmoothLimiter({ limit: 10, interval: 1000 });
const start = performance.now();
const elapsed = () => `${Math.round(performance.now() - start)}`.padStart(4) + " ms";

const results = await Promise.all(
  Array.from({ length: 8 }, (_, id) =>
    limiter.schedule(async () => {
      const response = await fetch(`${base}/items?id=${id}`);
      const body = await response.json() as { id: string };
      console.log(`${elapsed()}  item ${body.id}: ${response.status}`);
      return body;
    })
  ),
);

// A caller that cannot wait long asks with maxWait, and is told at once when to come back.
await limiter.acquire(5); // a big request: whoever comes next pays for its 5 permits (500 ms)
try {
  await limiter.acquire(1, { maxWait: 100 });
} catch (error) {
  if (!(error instanceof MaxWaitExceededError)) throw error;
  console.log(`${elapsed()}  impatient caller: retry after ${Math.round(error.retryAfter)} ms`);
}

await api.shutdown();
console.log(`done: ${results.length} requests in ${elapsed().trim()}`);
