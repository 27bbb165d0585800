/**
 * A `Request` whose body is a stream is read (to make it replayable) under the caller's signal and
 * the total timeout: an abort or timeout rejects at once and cancels the stream, however long the
 * stream would have taken. Causal: the stream never delivers until the test says so.
 */
import { expect, test } from "vitest";
import { ManualClock } from "../../src/clock.ts";
import { SmoothLimiter } from "../../src/limiters/smooth.ts";
import { createThrottledFetch } from "../../src/http/throttled-fetch.ts";
import { TimeoutError } from "../../src/http/errors.ts";
import { flush, StubFetch } from "./support/stub-fetch.ts";

const URL_A = "https://api.example.com/upload";

/** A body stream that delivers one chunk, then nothing until `release()`; records its cancellation. */
function heldStream() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const state = { cancelled: false as boolean, reason: undefined as unknown, release };
  let sent = false;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(new TextEncoder().encode("part;"));
        return;
      }
      await released;
      controller.enqueue(new TextEncoder().encode("rest"));
      controller.close();
    },
    cancel(reason) {
      state.cancelled = true;
      state.reason = reason;
    },
  });
  return { stream, state };
}

function requestWith(stream: ReadableStream<Uint8Array>, signal?: AbortSignal): Request {
  return new Request(URL_A, { method: "PUT", body: stream, duplex: "half", signal } as RequestInit);
}

/** Whether `promise` settled within a few macrotask turns, and how. */
async function outcome<T>(promise: Promise<T>): Promise<{ state: "pending" } | { state: "fulfilled"; value: T } | { state: "rejected"; error: unknown }> {
  let result: { state: "fulfilled"; value: T } | { state: "rejected"; error: unknown } | undefined;
  promise.then((value) => (result = { state: "fulfilled", value }), (error: unknown) => (result = { state: "rejected", error }));
  await flush();
  return result ?? { state: "pending" };
}

test("aborting while a Request's stream body is being read rejects at once with the reason and cancels the stream", async () => {
  const clock = new ManualClock();
  const stub = new StubFetch(clock);
  const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 10, clock }), fetch: stub.fetch });
  const { stream, state } = heldStream();
  const controller = new AbortController();
  const call = api(requestWith(stream, controller.signal));
  await flush();
  const reason = new Error("user left");
  controller.abort(reason);
  const settled = await outcome(call);
  expect(settled).toEqual({ state: "rejected", error: reason });
  expect(state.cancelled).toBe(true);
  expect(stub.calls).toHaveLength(0);
  state.release();
});

test("an init.signal abort also stops the read of a Request's stream body", async () => {
  const clock = new ManualClock();
  const stub = new StubFetch(clock);
  const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 10, clock }), fetch: stub.fetch });
  const { stream, state } = heldStream();
  const controller = new AbortController();
  const call = api(requestWith(stream), { signal: controller.signal });
  await flush();
  controller.abort(new Error("stop"));
  const settled = await outcome(call);
  expect(settled.state).toBe("rejected");
  expect(state.cancelled).toBe(true);
  state.release();
});

test("totalTimeout bounds the read of a Request's endless stream body: TimeoutError, stream cancelled, no timer left", async () => {
  const clock = new ManualClock();
  const stub = new StubFetch(clock);
  const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 10, clock }), fetch: stub.fetch, totalTimeout: 300 });
  const { stream, state } = heldStream();
  const call = api(requestWith(stream));
  await flush();
  expect(clock.pendingTimers).toBe(1);
  await clock.advance(299);
  expect((await outcome(call)).state).toBe("pending");
  await clock.advance(1);
  const settled = await outcome(call);
  expect(settled.state).toBe("rejected");
  const error = (settled as { error: unknown }).error;
  expect(error).toBeInstanceOf(TimeoutError);
  expect((error as TimeoutError).scope).toBe("total");
  expect((error as TimeoutError).attempts).toBe(0);
  expect(state.cancelled).toBe(true);
  expect(stub.calls).toHaveLength(0);
  expect(clock.pendingTimers).toBe(0);
  state.release();
});

test("a Request's stream body that arrives in time is sent whole, and the call leaves no timer", async () => {
  const clock = new ManualClock();
  const stub = new StubFetch(clock);
  const api = createThrottledFetch({ limiter: new SmoothLimiter({ limit: 10, clock }), fetch: stub.fetch, totalTimeout: 300 });
  const { stream, state } = heldStream();
  const call = api(requestWith(stream));
  await flush();
  state.release();
  const response = await call;
  expect(await response.text()).toBe("ok");
  expect(stub.calls[0]!.body).toBe("part;rest");
  expect(clock.pendingTimers).toBe(0);
});
