/**
 * The node:http adapter (test/support/simulated-http-server.ts), in real time over a real socket.
 * Causal assertions only: the limits used refill far slower than the test runs (one request per
 * 30 s), so no timing luck is involved.
 */
import { afterEach, expect, test } from "vitest";
import { LeakyBucketServer, OpenAISimulator, serveModel } from "../../src/testing.ts";
import { startSimulatedHttpServer, type SimulatedHttpServer } from "../support/simulated-http-server.ts";

let server: SimulatedHttpServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

test("the simulated OpenAI over node:http: bodies and headers arrive as sent, and the third request at 2 RPM is a 429", async () => {
  server = await startSimulatedHttpServer(new OpenAISimulator({ defaultLimits: { rpm: 2, tpm: 10_000 }, completionTokens: () => 3 }));
  const call = () => fetch(`${server!.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "abcdefgh" }] }),
  });
  const first = await call();
  expect(first.status).toBe(200);
  expect(first.headers.get("x-ratelimit-remaining-requests")).toBe("1");
  expect((await first.json()).usage).toEqual({ prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 });
  await (await call()).text();
  const third = await call();
  expect(third.status).toBe(429);
  expect(Number(third.headers.get("retry-after-ms"))).toBeGreaterThan(20_000);
  expect((await third.json()).error.code).toBe("rate_limit_exceeded");
  expect(server.stats.byStatus).toEqual({ 200: 2, 429: 1 });
});

test("close() cancels a reply nginx is still holding, and leaves nothing open", async () => {
  server = await startSimulatedHttpServer(serveModel(new LeakyBucketServer({ rate: 1, interval: 60_000, burst: 1 })));
  expect((await fetch(server.url)).status).toBe(200);
  const held = fetch(server.url).then((r) => r.status, (e: unknown) => e);
  while (server.stats.requests < 2) await new Promise((r) => setTimeout(r, 5));
  expect(server.stats.inFlight).toBe(1); // delayed by a minute, not refused
  await server.close();
  server = undefined;
  expect(await held).toBeInstanceOf(Error);
});
