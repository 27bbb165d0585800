/**
 * Retried 429 bodies and connections, against a real node:http server: a small body is drained so
 * its connection is reused by the retry; a large one is cancelled (its connection closed) rather
 * than downloaded. Counts what the server saw, not timings.
 */
import { afterEach, expect, test } from "vitest";
import { RETRY_BODY_DRAIN } from "../../src/http/held-response.ts";
import { createThrottledFetch } from "../../src/http/throttled-fetch.ts";
import { SmoothLimiter } from "../../src/limiters/smooth.ts";
import { startServer, type TestServer } from "./support/servers.ts";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Runs `calls` sequential calls whose first attempt gets a 429 with a `size`-byte body; returns connections opened. */
async function connectionsFor(size: number, calls: number): Promise<number> {
  let connections = 0;
  const body = Buffer.alloc(size, "e");
  server = await startServer((req, res) => {
    if (req.url!.endsWith("/first")) {
      res.writeHead(429, { "retry-after": "0", "content-length": String(size) });
      res.end(body);
    } else res.end("ok");
  });
  // undici drops a socket whose keep-alive hint is under its 2 s threshold: give one it keeps.
  server.server.keepAliveTimeout = 10_000;
  server.server.on("connection", () => connections++);
  let n = 0;
  const api = createThrottledFetch({
    limiter: new SmoothLimiter({ limit: 1000 }),
    retry: { backoff: { base: 1 }, budget: false }, // every call retries once: connections, not the budget, are the point
    // The retry asks for another path so the server knows which attempt it answers.
    fetch: (input, init) => fetch(n++ % 2 === 0 ? `${String(input)}/first` : `${String(input)}/then`, init),
  });
  for (let i = 0; i < calls; i++) {
    const response = await api(`${server.url}/c${i}`);
    expect(await response.text()).toBe("ok");
  }
  await server.close();
  server = undefined;
  return connections;
}

test.each([10, 4 * 1024, 16 * 1024, RETRY_BODY_DRAIN.bytes])(
  "a retried 429 with a %i-byte body is drained: 40 retries reuse a handful of connections",
  async (size) => {
    expect(await connectionsFor(size, 40)).toBeLessThanOrEqual(4);
  },
);

test("a retried 429 with a body above the drain bound is cancelled, not downloaded: its connection is closed", async () => {
  // Documents the bound: above it each retry costs a connection (cheaper than reading 256 KiB).
  expect(await connectionsFor(256 * 1024, 10)).toBeGreaterThanOrEqual(10);
});
