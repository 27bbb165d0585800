/**
 * A response already received is what the caller gets when its retry is refused by the limiter
 * (MaxWaitExceededError, QueueFullError): body intact, not cancelled, no timer left.
 */
import { expect, test } from "vitest";
import { ManualClock } from "../../src/clock.ts";
import { SmoothLimiter } from "../../src/limiters/smooth.ts";
import { createThrottledFetch } from "../../src/http/throttled-fetch.ts";
import { settle, StubFetch } from "./support/stub-fetch.ts";

const URL_A = "https://api.example.com/items";

function streamOf(text: string, size = 1): { stream: ReadableStream<Uint8Array>; cancelled: () => boolean } {
  let cancelled = false;
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
    cancel() {
      cancelled = true;
    },
  });
  return { stream, cancelled: () => cancelled };
}

test.each([
  ["MaxWaitExceededError", { maxWait: 500 }],
  ["QueueFullError", { maxQueue: 0 }],
])("a retry refused with %s returns the response already received, body intact", async (_name, limits) => {
  const clock = new ManualClock();
  const limiter = new SmoothLimiter({ limit: 1, interval: 1000, clock, ...limits });
  const stub = new StubFetch(clock, () => new Response("ok"));
  stub.then(() => new Response("the server's explanation", { status: 500, statusText: "Oops", headers: { "x-id": "7" } }));
  const api = createThrottledFetch({ limiter, fetch: stub.fetch, random: () => 0 });
  const response = await settle(clock, api(URL_A));
  expect(stub.calls).toHaveLength(1);
  expect(response.status).toBe(500);
  expect(response.statusText).toBe("Oops");
  expect(response.headers.get("x-id")).toBe("7");
  expect(await response.text()).toBe("the server's explanation");
  expect(clock.pendingTimers).toBe(0);
});

test("a large retried body is not buffered: it is held unread and returned whole when the retry is refused", async () => {
  const clock = new ManualClock();
  const limiter = new SmoothLimiter({ limit: 1, interval: 1000, clock, maxQueue: 0 });
  const big = "y".repeat(1024 * 1024);
  const body = streamOf(big, 16 * 1024);
  const stub = new StubFetch(clock).then(() => new Response(body.stream, { status: 503 }));
  const api = createThrottledFetch({ limiter, fetch: stub.fetch, random: () => 0 });
  const response = await settle(clock, api(URL_A));
  expect(response.status).toBe(503);
  expect(body.cancelled()).toBe(false);
  expect((await response.text()).length).toBe(big.length);
  expect(clock.pendingTimers).toBe(0);
});

test("the held body of a retried response is cancelled once the retry is sent", async () => {
  const clock = new ManualClock();
  const limiter = new SmoothLimiter({ limit: 10, interval: 1000, clock });
  const body = streamOf("z".repeat(1024 * 1024), 16 * 1024);
  const stub = new StubFetch(clock).then(() => new Response(body.stream, { status: 503 }));
  const api = createThrottledFetch({ limiter, fetch: stub.fetch, random: () => 0 });
  const response = await settle(clock, api(URL_A));
  expect(await response.text()).toBe("ok");
  expect(stub.calls).toHaveLength(2);
  expect(body.cancelled()).toBe(true);
  expect(clock.pendingTimers).toBe(0);
});

test("aborting while a retry waits rejects with the reason and cancels the held body; no timer is left", async () => {
  const clock = new ManualClock();
  const limiter = new SmoothLimiter({ limit: 10, interval: 1000, clock });
  const body = streamOf("w".repeat(1024 * 1024), 16 * 1024);
  const stub = new StubFetch(clock).then(() => new Response(body.stream, { status: 503, headers: { "retry-after": "5" } }));
  const api = createThrottledFetch({ limiter, fetch: stub.fetch });
  const controller = new AbortController();
  const call = api(URL_A, { signal: controller.signal });
  call.catch(() => {});
  await clock.advance(1000);
  expect(stub.calls).toHaveLength(1);
  expect(body.cancelled()).toBe(false);
  const reason = new Error("gave up");
  controller.abort(reason);
  await expect(call).rejects.toBe(reason);
  expect(body.cancelled()).toBe(true);
  expect(clock.pendingTimers).toBe(0);
});
