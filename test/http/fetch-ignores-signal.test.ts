/**
 * A `fetch` that ignores the signal it is given (a test double, a thin adapter) still cannot keep a
 * call past its `timeout`, its `totalTimeout` or the caller's abort: the attempt is raced against its
 * signal, and a response that comes later has its body cancelled (red-team, 2026-11-27: such a call
 * never settled; `runUntil` reported "no timer is left").
 */
import { describe, expect, test, vi } from "vitest";
import { createThrottledFetch, ManualClock, TimeoutError, WindowLimiter } from "../../src/index.ts";

describe("a fetch that ignores its signal", () => {
  test.each([
    ["timeout", { timeout: 500 }, 500],
    ["totalTimeout", { totalTimeout: 700 }, 700],
  ] as const)("%s still ends the call, on time", async (_name, option, at) => {
    const clock = new ManualClock();
    let late!: (response: Response) => void;
    const fetch = () => new Promise<Response>((resolve) => (late = resolve)); // never looks at init.signal
    const api = createThrottledFetch({ limiter: new WindowLimiter({ limit: 10, interval: 1000, clock }), fetch, retry: 0, ...option });
    const error = await clock.runUntil(api("https://x.example/")).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(clock.now()).toBe(at);
    // The response that comes after all is not leaked: its body is cancelled.
    let cancelled = false;
    const body = new ReadableStream({ cancel: () => void (cancelled = true) });
    late(new Response(body));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(cancelled).toBe(true);
  });

  test("the caller's abort ends the call with the caller's reason", async () => {
    const clock = new ManualClock();
    const fetch = () => new Promise<Response>(() => {});
    const api = createThrottledFetch({ limiter: new WindowLimiter({ limit: 10, interval: 1000, clock }), fetch });
    const controller = new AbortController();
    const call = api("https://x.example/", { signal: controller.signal });
    clock.setTimeout(() => controller.abort(new Error("user left")), 300);
    await expect(clock.runUntil(call)).rejects.toThrow("user left");
    expect(clock.now()).toBe(300);
  });
});

/**
 * Runs `body` with sluice loaded afresh while the global fetch is a double that never settles and
 * never looks at its signal (installed before sluice loads, as a test setup file would).
 */
async function withGlobalDouble(body: (fresh: typeof import("../../src/index.ts")) => Promise<void>): Promise<void> {
  vi.stubGlobal("fetch", () => new Promise<Response>(() => {}));
  try {
    vi.resetModules();
    await body(await import("../../src/index.ts"));
  } finally {
    vi.unstubAllGlobals();
    vi.resetModules();
  }
}

test("a test double installed as the global fetch before sluice loads is raced too when the fetch sets a timeout (review, 2026-11-27: the call never settled)", () =>
  withGlobalDouble(async (fresh) => {
    const clock = new fresh.ManualClock();
    const api = fresh.createThrottledFetch({ limiter: new fresh.WindowLimiter({ limit: 10, interval: 1000, clock }), retry: 0, timeout: 100 });
    const error = await clock.runUntil(api("https://x.example/")).then(() => undefined, (e: unknown) => e);
    expect((error as Error).name).toBe("TimeoutError");
    expect(clock.now()).toBe(100);
  }));

test("…and when the caller passes a signal and aborts, with no timeout (review 3: the call never settled)", () =>
  withGlobalDouble(async (fresh) => {
    const clock = new fresh.ManualClock();
    const api = fresh.createThrottledFetch({ limiter: new fresh.WindowLimiter({ limit: 10, interval: 1000, clock }), retry: 0 });
    const controller = new AbortController();
    clock.setTimeout(() => controller.abort(new Error("caller left")), 50);
    const error = await clock.runUntil(api("https://x.example/", { signal: controller.signal })).then(() => undefined, (e: unknown) => e);
    expect((error as Error).message).toBe("caller left");
  }));
