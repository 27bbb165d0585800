/**
 * An overall limit plus per-endpoint limits: the API allows 10 requests per second in total, and
 * at most 2 per second to /search. `combine` makes a limiter that grants only when BOTH agree, taken
 * atomically; a KeyedLimiter gives each endpoint its combination.
 *
 *   node examples/throttled-fetch-endpoints.ts
 *
 * (In your project, import from "sluice" instead of "../src/index.ts".)
 */
import { combine, createThrottledFetch, KeyedLimiter, WindowLimiter } from "../src/index.ts";
import { startLocalApi } from "./support/local-api.ts";

const api = await startLocalApi({ limit: 10, window: 1000 });
try {
  const overall = new WindowLimiter({ limit: 10, interval: 1000, countFrom: "completion" });
  const perEndpoint: Record<string, number> = { "/search": 2 };
  const limiter = new KeyedLimiter({
    create: (path: string) => {
      const own = perEndpoint[path];
      return own === undefined ? overall : combine(overall, new WindowLimiter({ limit: own, interval: 1000, countFrom: "completion" }));
    },
  });
  const fetchApi = createThrottledFetch({ limiter, key: (request) => new URL(request.url).pathname });

  const started = performance.now();
  const done: Array<[number, string]> = [];
  const record = (label: string) => (r: Response) => {
    done.push([performance.now() - started, label]);
    return r.body?.cancel();
  };
  await Promise.all([
    ...Array.from({ length: 4 }, () => fetchApi(`${api.url}/search`).then(record("/search"))),
    ...Array.from({ length: 8 }, () => fetchApi(`${api.url}/items`).then(record("/items"))),
  ]);
  // /items fills the overall limit at once; /search gets 2 per second and shares the overall 10.
  for (const [at, label] of done.sort((a, b) => a[0] - b[0])) console.log(`${at.toFixed(0).padStart(5)} ms  ${label}`);
  console.log(`server: ${api.accepted} accepted, ${api.refused} refused`);
  if (api.refused !== 0) process.exitCode = 1;
} finally {
  await api.close();
}
