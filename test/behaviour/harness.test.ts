/**
 * The harness's own rules, on a fake platform whose "server" hands its handler to the test: what
 * fails a case besides the case itself. (The server contract is `serve.cases.ts`, on every runtime.)
 */
import { afterEach, describe, expect, test, vi } from "vitest";
import { runCase, type Case, type CaseContext, type CaseOptions, type Handler, type Platform } from "./harness.ts";

function aCase(fn: (t: CaseContext) => void | Promise<void>, options: CaseOptions = { needs: ["serve"] }): Case {
  return { suite: ["harness"], name: "a case", options, fn };
}

/** A platform whose serve() records the handler it gets and counts closes. */
function fakePlatform() {
  const state = { handler: undefined as Handler | undefined, closes: 0 };
  const platform: Platform = {
    name: "fake",
    serve: async (handler) => {
      state.handler = handler;
      return { url: "http://fake.test", close: async () => void state.closes++ };
    },
  };
  return { platform, state };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("runCase", () => {
  test("a case that needs a server fails on a platform without one, naming the need", async () => {
    await expect(runCase(aCase(() => {}), { name: "a kiosk" })).rejects.toThrow("needs a local server, which a kiosk cannot start");
  });

  test("a case that calls t.serve() without declaring needs: [\"serve\"] fails", async () => {
    const { platform } = fakePlatform();
    await expect(runCase(aCase(async (t) => void (await t.serve(() => new Response())), {}), platform)).rejects.toThrow(
      'must declare `needs: ["serve"]`',
    );
  });

  test("a throwing handler is answered 500 with its message, and fails the case that passed", async () => {
    const { platform, state } = fakePlatform();
    let answer: Response | undefined;
    const run = runCase(aCase(async (t) => {
      await t.serve(() => {
        throw new TypeError("expected 2, got 3");
      });
      answer = await state.handler!(new Request("http://fake.test/x"));
    }), platform);
    await expect(run).rejects.toThrow("the server's handler threw: TypeError: expected 2, got 3");
    expect(answer!.status).toBe(500);
    expect(await answer!.text()).toBe("TypeError: expected 2, got 3");
  });

  test("a handler's error is reported before the case failure it caused", async () => {
    const { platform, state } = fakePlatform();
    const run = runCase(aCase(async (t) => {
      await t.serve(async () => Promise.reject(new Error("bad header")));
      const response = await state.handler!(new Request("http://fake.test/x"));
      if (response.status !== 200) throw new Error(`status ${response.status}`);
    }), platform);
    await expect(run).rejects.toThrow("the server's handler threw: Error: bad header; then the case failed: Error: status 500");
  });

  test("with handlerMayThrow the 500 is the case's business and does not fail it", async () => {
    const { platform, state } = fakePlatform();
    await runCase(aCase(async (t) => {
      await t.serve(() => {
        throw new Error("boom");
      }, { handlerMayThrow: true });
      expect((await state.handler!(new Request("http://fake.test/x"))).status).toBe(500);
    }), platform);
  });

  test("a server is closed once after the case, even when the case closed it", async () => {
    const { platform, state } = fakePlatform();
    await runCase(aCase(async (t) => {
      const server = await t.serve(() => new Response());
      await server.close();
    }), platform);
    expect(state.closes).toBe(1);
  });

  test("a cleanup that hangs fails the case after 5 s instead of hanging the run", async () => {
    vi.useFakeTimers();
    const run = runCase(aCase((t) => t.onCleanup(() => new Promise(() => {})), {}), { name: "fake" });
    const settled = expect(run).rejects.toThrow("a cleanup (e.g. closing a server) took over 5000 ms");
    await vi.advanceTimersByTimeAsync(4999);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    await settled;
    expect(vi.getTimerCount()).toBe(0);
  });
});
