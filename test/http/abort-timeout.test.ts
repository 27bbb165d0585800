/**
 * Aborts at every stage of a call, per-attempt and total timeouts, and the promise that no timer
 * outlives its call. Virtual time; the fetch is scripted.
 */
import { describe, expect, test } from "vitest";
import type { ManualClock } from "../../src/clock.ts";
import { WindowLimiter } from "../../src/limiters/window.ts";
import { TimeoutError } from "../../src/http/errors.ts";
import { isSluiceError } from "../../src/errors.ts";
import { track } from "../helpers.ts";
import { setup } from "./support/setup.ts";
import { flush, reply } from "./support/stub-fetch.ts";

const URL_A = "https://api.example.com/items";
const oneEverySecond = { makeLimiter: (c: ManualClock) => new WindowLimiter({ limit: 1, interval: 1000, clock: c }) };

describe("abort at every stage rejects with the caller's reason and leaves nothing behind", () => {
  test("already aborted: rejects at once; no permits taken, nothing sent", async () => {
    const { api, stub, limiter, clock } = setup(oneEverySecond);
    const reason = new Error("cancelled by caller");
    await expect(api(URL_A, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(stub.calls).toHaveLength(0);
    expect(limiter.tryAcquire()).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  test("while queued in the limiter: the permits go back, the next caller is not delayed", async () => {
    const { api, stub, clock } = setup(oneEverySecond);
    await api(URL_A); // t=0 uses the window
    const controller = new AbortController();
    const aborted = track(clock, api(URL_A, { signal: controller.signal }));
    const next = track(clock, api(`${URL_A}/next`));
    await flush();
    controller.abort("stop");
    await clock.runAll();
    expect(aborted.error).toBe("stop");
    expect(next.at).toBe(1000); // took the slot the aborted caller had queued for
    expect(stub.calls.map((c) => c.url)).toEqual([URL_A, `${URL_A}/next`]);
    expect(clock.pendingTimers).toBe(0);
  });

  test("during the attempt: the fetch is aborted with the caller's reason", async () => {
    const { api, stub, clock } = setup();
    stub.then(() => "hang");
    const controller = new AbortController();
    const outcome = track(clock, api(URL_A, { signal: controller.signal }));
    await flush();
    const reason = new DOMException("user left", "AbortError");
    controller.abort(reason);
    await flush();
    expect(outcome.error).toBe(reason);
    expect(stub.calls[0]!.signal?.aborted).toBe(true);
    expect(clock.pendingTimers).toBe(0); // the attempt's timeout timer is cleared
  });

  test("during the backoff before a retry: the timer is cleared and no retry is sent", async () => {
    const { api, stub, clock } = setup();
    stub.then(() => reply(503));
    const controller = new AbortController();
    const outcome = track(clock, api(URL_A, { signal: controller.signal }));
    await flush();
    expect(clock.pendingTimers).toBe(1); // the 500 ms backoff
    controller.abort("enough");
    await flush();
    expect(outcome.error).toBe("enough");
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(10_000);
    expect(stub.calls).toHaveLength(1);
  });

  test("while waiting out a server pause for the retry: rejects, and the pause still holds for others", async () => {
    const { api, stub, clock } = setup();
    stub.then(() => reply(429, { "retry-after": "10" }));
    const controller = new AbortController();
    const outcome = track(clock, api(URL_A, { signal: controller.signal }));
    await flush();
    controller.abort("bye");
    await flush();
    expect(outcome.error).toBe("bye");
    const other = track(clock, api(URL_A));
    await clock.runAll();
    expect(other.at).toBe(10_000);
    expect(stub.times).toEqual([0, 10_000]);
  });

  test("a Request's own signal is the caller's signal", async () => {
    const { api, stub, clock } = setup();
    stub.then(() => "hang");
    const controller = new AbortController();
    const outcome = track(clock, api(new Request(URL_A, { signal: controller.signal })));
    await flush();
    controller.abort("request signal");
    await flush();
    expect(outcome.error).toBe("request signal");
  });

  test("init.signal wins over the Request's signal, as in fetch", async () => {
    const { api, stub, clock } = setup();
    stub.then(() => "hang");
    const requestSide = new AbortController();
    const initSide = new AbortController();
    const outcome = track(clock, api(new Request(URL_A, { signal: requestSide.signal }), { signal: initSide.signal }));
    await flush();
    requestSide.abort("ignored");
    await flush();
    expect(outcome.settled).toBe(false);
    initSide.abort("init");
    await flush();
    expect(outcome.error).toBe("init");
  });

  test("an AbortSignal.timeout()-style reason reaches the caller unchanged", async () => {
    const { api, stub, clock } = setup();
    stub.then(() => "hang");
    const controller = new AbortController();
    const outcome = track(clock, api(URL_A, { signal: controller.signal }));
    await flush();
    const reason = new DOMException("The operation timed out.", "TimeoutError");
    controller.abort(reason);
    await flush();
    expect(outcome.error).toBe(reason);
  });
});

describe("per-attempt timeout", () => {
  test("an idempotent request is retried after a timeout; when every attempt times out it rejects with TimeoutError", async () => {
    const { api, stub, clock } = setup({ timeout: 2000 });
    stub.otherwise(() => "hang");
    const outcome = track(clock, api(URL_A));
    await clock.runAll();
    // attempts at 0, 2000+500, 4500+1000
    expect(stub.times).toEqual([0, 2500, 5500]);
    const error = outcome.error as TimeoutError;
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.name).toBe("TimeoutError");
    expect(isSluiceError(error)).toBe(true);
    expect(error).toMatchObject({ scope: "attempt", timeout: 2000, attempts: 3 });
    expect(error.message).toBe("GET https://api.example.com/items: no response headers within the timeout of 2000 ms (attempt 3)");
    expect(outcome.at).toBe(7500);
    expect(clock.pendingTimers).toBe(0);
  });

  test("a timed-out attempt that later succeeds on retry resolves normally", async () => {
    const { api, stub, clock } = setup({ timeout: 1000 });
    stub.then(() => "hang");
    const outcome = track(clock, api(URL_A));
    await clock.runAll();
    expect((outcome.value as Response).status).toBe(200);
    expect(stub.calls[0]!.signal?.aborted).toBe(true); // the stalled attempt was cut off
  });

  test("a POST is not retried after a timeout (the server may have done the work)", async () => {
    const { api, stub, clock } = setup({ timeout: 1000 });
    stub.otherwise(() => "hang");
    const outcome = track(clock, api(URL_A, { method: "POST", body: "pay 10 EUR" }));
    await clock.runAll();
    expect(stub.calls).toHaveLength(1);
    expect(outcome.error).toMatchObject({ name: "TimeoutError", scope: "attempt", attempts: 1 });
  });

  test("the timeout covers only the wait for headers, not the queue", async () => {
    const { api, stub, clock } = setup({ ...oneEverySecond, timeout: 500 });
    await api(URL_A);
    const queued = track(clock, api(URL_A)); // waits 1000 ms in the queue, longer than the timeout
    await clock.runAll();
    expect((queued.value as Response).ok).toBe(true);
    expect(stub.times).toEqual([0, 1000]);
  });
});

describe("totalTimeout", () => {
  test("while queued: rejects with TimeoutError (scope total) and gives the permits back", async () => {
    const { api, stub, clock } = setup({ ...oneEverySecond, totalTimeout: 300 });
    await api(URL_A);
    const late = track(clock, api(URL_A));
    await clock.advance(300);
    expect(late.error).toBeInstanceOf(TimeoutError);
    expect(late.error).toMatchObject({ scope: "total", timeout: 300, attempts: 0 });
    expect((late.error as Error).message).toBe("GET https://api.example.com/items: not completed within the total timeout of 300 ms (0 attempts sent)");
    expect(late.at).toBe(300);
    await clock.advance(700);
    await api(URL_A); // the slot at 1000 is free: nothing was taken by the timed-out call
    expect(stub.times).toEqual([0, 1000]);
    expect(clock.pendingTimers).toBe(0);
  });

  test("during an attempt: the fetch is aborted with the TimeoutError", async () => {
    const { api, stub, clock } = setup({ totalTimeout: 3000, timeout: 10_000 });
    stub.otherwise(() => "hang");
    const outcome = track(clock, api(URL_A));
    await clock.runAll();
    expect(outcome.error).toMatchObject({ name: "TimeoutError", scope: "total", attempts: 1 });
    expect(stub.calls[0]!.signal?.reason).toBe(outcome.error);
    expect(outcome.at).toBe(3000);
    expect(clock.pendingTimers).toBe(0);
  });

  test("after the call resolves, no timer is left running", async () => {
    const { api, clock } = setup({ totalTimeout: 60_000, timeout: 5000 });
    await api(URL_A);
    expect(clock.pendingTimers).toBe(0);
  });
});

describe("messages never carry credentials", () => {
  const secrets = ["alice", "s3cret", "KEY123", "frag", "TOKEN456", "KEY789", "Bearer"];
  const everything = (error: Error) => `${error.message} ${String(error.stack)} ${JSON.stringify(error)} ${String(error.cause)}`;

  test("a TimeoutError names method, origin and path only: no query, fragment or headers", async () => {
    const { api, stub, clock } = setup({ timeout: 100, retry: 0 });
    stub.otherwise(() => "hang");
    const outcome = track(clock, api("https://api.example.com/v1/pay?api_key=KEY123#frag", {
      headers: { Authorization: "Bearer TOKEN456", "X-Api-Key": "KEY789" },
    }));
    await clock.runAll();
    const error = outcome.error as Error;
    for (const secret of secrets) expect(everything(error)).not.toContain(secret);
    expect(error.message).toContain("GET https://api.example.com/v1/pay");
  });

  test("fetch's TypeError for a URL with user info keeps its type but not the credentials", async () => {
    const { api, stub } = setup();
    const error = (await api("https://alice:s3cret@api.example.com/v1/pay").catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(TypeError);
    for (const secret of secrets) expect(everything(error)).not.toContain(secret);
    expect(stub.calls).toHaveLength(0);
  });
});
