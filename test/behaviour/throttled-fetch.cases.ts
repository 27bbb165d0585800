/**
 * The throttled fetch on every runtime: real requests to a local server the case starts, with the
 * limiter (and so every timer of the fetch) on a ManualClock. Virtual time decides *when* a request
 * may go; the network only decides how long it takes, so the cases wait for what the server has seen
 * (never for wall-clock durations) and cannot flake on a slow machine. "Nothing else was sent" is
 * proved by the limiter, not by a pause: a request still queued has not been granted, so it cannot
 * have been sent, however slow the network.
 */
import { createThrottledFetch, ManualClock, SmoothLimiter, WindowLimiter } from "../../src/index.ts";
import { expect, track } from "./expect.ts";
import { describe, test } from "./harness.ts";

/** Waits, in real time, until `condition()` holds (the network is real); fails after `ms`. */
async function until(condition: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe("throttled fetch", () => {
  test("every attempt waits its turn on the shared limiter: 5 callers at 2 per second reach the server 2, 2, 1", async (t) => {
    const seen: string[] = [];
    const server = await t.serve((request) => {
      seen.push(new URL(request.url).pathname);
      return new Response("ok");
    });
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 2, interval: 1000, clock });
    const api = createThrottledFetch({ limiter });
    const calls = ["/1", "/2", "/3", "/4", "/5"].map((path) => api(`${server.url}${path}`).then((r) => r.text()));
    await until(() => seen.length === 2, "the first two arrive");
    await until(() => limiter.queued === 3, "the other three wait in the queue");
    expect(seen.length).toBe(2); // the three others were never granted, so never sent
    // A user-built window is counted from each response (see README "At the documented limit"):
    // virtual time may only move once the client has the first two responses (the network is real).
    await Promise.all([calls[0], calls[1]]);
    await clock.advance(1000);
    await until(() => seen.length === 4, "two more arrive a virtual second later");
    expect(limiter.queued).toBe(1); // the fifth is still waiting for its turn
    expect(seen.length).toBe(4);
    await Promise.all([calls[2], calls[3]]);
    await clock.advance(1000);
    await until(() => seen.length === 5, "the last one arrives");
    expect(await Promise.all(calls)).toEqual(["ok", "ok", "ok", "ok", "ok"]);
  }, { needs: ["serve"] });

  test("one 429 with Retry-After pauses every caller until the server's time, then the refused request is retried", async (t) => {
    const seen: string[] = [];
    const server = await t.serve((request) => {
      const path = new URL(request.url).pathname;
      seen.push(path);
      if (path === "/a" && seen.filter((p) => p === "/a").length === 1) {
        return new Response("slow down", { status: 429, headers: { "retry-after": "2" } });
      }
      return new Response(`ok ${path}`);
    });
    const clock = new ManualClock();
    let paused = 0;
    const limiter = new SmoothLimiter({ limit: 10, interval: 1000, clock });
    const api = createThrottledFetch({
      limiter,
      onThrottle: (event) => void (paused = event.paused),
    });
    const a = api(`${server.url}/a`).then((r) => r.text());
    // Virtual time may only move once the client has read the 429 (the network is real).
    await until(() => paused > 0, "the client has read the 429 and paused the limiter");
    expect(paused).toBe(2000);
    const bCall = api(`${server.url}/b`).then((r) => r.text());
    const b = track(bCall);
    await until(() => limiter.queued === 2, "the retry of /a and /b wait in the paused limiter");
    await clock.advance(1999);
    expect(limiter.queued).toBe(2); // nobody was granted during the server's two seconds…
    expect(seen).toEqual(["/a"]); // …so nobody was sent
    expect(b.state).toBe("pending");
    await clock.advance(1);
    await until(() => seen.length === 2, "the first waiter goes when the pause ends");
    expect(limiter.queued).toBe(1); // the limiter resumes at its rate: no burst after a pause
    expect(seen.length).toBe(2);
    await clock.advance(100);
    await until(() => seen.length === 3, "the second goes one spacing (100 ms) later");
    expect(await a).toBe("ok /a");
    expect(await bCall).toBe("ok /b");
    expect([...seen].slice(1).sort()).toEqual(["/a", "/b"]);
  }, { needs: ["serve"] });

  test("a 503 without Retry-After is retried for GET but not for POST, whose body may have been acted on", async (t) => {
    const seen: string[] = [];
    const server = await t.serve((request) => {
      seen.push(request.method);
      return seen.filter((m) => m === request.method).length === 1
        ? new Response("unavailable", { status: 503 })
        : new Response("ok");
    });
    const clock = new ManualClock();
    const retries: number[] = [];
    const api = createThrottledFetch({
      limiter: new SmoothLimiter({ limit: 100, interval: 1000, burst: 5, clock }),
      retry: { limit: 1, backoff: { base: 100, cap: 100 } },
      random: () => 0.5,
      onRetry: (event) => void retries.push(event.delay),
    });
    const post = await api(server.url, { method: "POST", body: "x" });
    expect(post.status).toBe(503);
    await post.body?.cancel();
    const get = api(server.url);
    await until(() => retries.length === 1, "the client has read the GET's 503 and set its backoff");
    expect(retries).toEqual([50]); // the jittered backoff: 0.5 × 100 ms
    await clock.advance(50);
    expect((await get).status).toBe(200);
    expect(seen).toEqual(["POST", "GET", "GET"]);
  }, { needs: ["serve"] });

  test("a replayable body is sent again intact on every attempt", async (t) => {
    const bodies: string[] = [];
    const server = await t.serve(async (request) => {
      bodies.push(await request.text());
      return bodies.length === 1
        ? new Response("busy", { status: 429, headers: { "retry-after": "1" } })
        : new Response("stored");
    });
    const clock = new ManualClock();
    let retried = false;
    const api = createThrottledFetch({
      limiter: new SmoothLimiter({ limit: 100, interval: 1000, clock }),
      onRetry: () => void (retried = true),
    });
    const call = api(server.url, { method: "PUT", body: JSON.stringify({ name: "sluice", n: 1 }) });
    await until(() => retried, "the client has read the 429 and will retry");
    await clock.advance(1000);
    expect(await (await call).text()).toBe("stored");
    expect(bodies).toEqual(['{"name":"sluice","n":1}', '{"name":"sluice","n":1}']);
  }, { needs: ["serve"] });

  test("aborting while queued rejects with the reason at once; the server never sees the request", async (t) => {
    const seen: string[] = [];
    const server = await t.serve((request) => {
      seen.push(new URL(request.url).pathname);
      return new Response("ok");
    });
    const clock = new ManualClock();
    const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
    const api = createThrottledFetch({ limiter });
    expect((await api(`${server.url}/first`)).status).toBe(200);
    const controller = new AbortController();
    const queued = api(`${server.url}/queued`, { signal: controller.signal });
    const reason = new Error("user navigated away");
    controller.abort(reason);
    await expect(queued).rejects.toBe(reason);
    expect(limiter.tryAcquire()).toBe(1000); // its place was given back: the slot frees on schedule
    expect(limiter.queued).toBe(0); // nothing left waiting, so nothing can be sent when time moves
    await clock.advance(1000);
    expect(clock.pendingTimers).toBe(0);
    expect(seen).toEqual(["/first"]);
  }, { needs: ["serve"] });
});
