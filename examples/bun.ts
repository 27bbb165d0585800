/**
 * sluice on Bun: an overall limit plus per-endpoint limits, shared by concurrent callers.
 *
 *   bun add sluice
 *   bun run examples/bun.ts
 *
 * A local server stands in for an API that allows 4 requests per second overall, and only 1 per
 * second on its expensive /search endpoint. Each request counts against both limits it falls
 * under, atomically; /search callers never hold up /items callers.
 */
import { combine, WindowLimiter } from "sluice";

const api = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch(request) {
    const url = new URL(request.url);
    return Response.json({ path: url.pathname + url.search });
  },
});

const overall = new WindowLimiter({ limit: 4, interval: 1000 });
const channels = {
  search: combine(overall, new WindowLimiter({ limit: 1, interval: 1000 })),
  items: combine(overall, new WindowLimiter({ limit: 4, interval: 1000 })),
};

const start = performance.now();
const elapsed = () => `${Math.round(performance.now() - start)}`.padStart(5) + " ms";

async function call(channel: keyof typeof channels, path: string): Promise<string> {
  return channels[channel].schedule(async () => {
    const response = await fetch(`${api.url}${path.slice(1)}`);
    const body = (await response.json()) as { path: string };
    console.log(`${elapsed()}  ${channel.padEnd(6)} ${body.path}`);
    return body.path;
  });
}

const paths = await Promise.all([
  call("search", "/search?q=a"),
  call("search", "/search?q=b"),
  call("items", "/items/1"),
  call("items", "/items/2"),
  call("items", "/items/3"),
  call("items", "/items/4"),
]);

await api.stop(true);
console.log(`done: ${paths.length} requests in ${elapsed().trim()}`);
