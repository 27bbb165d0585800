// Red team (fetch): "an aborted, timed-out or refused request consumes no capacity"; "aborting
// while queued rejects with signal.reason at once and gives the permits back, as if the call had
// never been made". Reference model: a twin run in which the aborted call never happened (or, once
// its attempt was sent, ended there) — every other caller must be sent at the same virtual instants.
import { describe, expect, test } from "vitest";
import { createThrottledFetch, ManualClock, WindowLimiter } from "../../src/index.ts";
import type { ThrottledFetchOptions } from "../../src/http/options.ts";
import { resolveOptions } from "../../src/http/options.ts";
import { throttledFetchOf, type ThrottledFetch } from "../../src/http/throttled-fetch.ts";

const flush = async (turns = 20) => {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
};

interface Run {
  clock: ManualClock;
  limiter: WindowLimiter;
  /** Requests the "network" saw: only those sent with a live signal (fetch rejects an aborted one unsent). */
  wire: string[];
  api: ThrottledFetch;
}

function harness(path: "lean" | "full", extra: Partial<ThrottledFetchOptions> = {}): Run {
  const clock = new ManualClock();
  const limiter = new WindowLimiter({ limit: 1, interval: 1000, clock });
  const wire: string[] = [];
  const options: ThrottledFetchOptions = {
    limiter,
    clock,
    random: () => 0.5,
    ...extra,
    fetch: async (input, init) => {
      const signal = init?.signal ?? undefined;
      if (signal?.aborted) throw signal.reason; // as fetch: nothing is sent
      const url = String(input instanceof Request ? input.url : input);
      wire.push(`${clock.now()} ${init?.method ?? "GET"} ${new URL(url).pathname}`);
      if (url.endsWith("/503")) return new Response("busy", { status: 503 });
      return new Response("ok");
    },
  };
  const api = path === "lean" ? createThrottledFetch(options) : throttledFetchOf(resolveOptions(options), true);
  return { clock, limiter, wire, api };
}

async function drive(run: Run, until: number) {
  while (run.clock.now() < until) {
    await flush();
    await run.clock.advance(50);
  }
  await flush();
}

describe("red team: an aborted call consumes no capacity", () => {
  for (const path of ["lean", "full"] as const) {
    test(`${path}: a caller that aborts at its grant (before anything is sent) leaves the window slot to the next caller`, async () => {
      // X is granted at t=1000 and its caller aborts right then (here: from the limiter's own
      // "grant" event, i.e. between the grant and the send). Model: nothing was sent, so Y — next
      // in line — is sent at t=1000 as if X had never called. Regression: the attempt's task ran,
      // fetch rejected it unsent, and the window counted the slot from that "completion": Y at 2000.
      // Root cause: src/http/attempts.ts `send` never checked callSignal.aborted before fetching;
      // now it does and rejects with `Unstarted`, which the limiter takes as "grant unused".
      const run = harness(path);
      const { api, limiter } = run;
      const reason = new Error("gone");
      const x = new AbortController();
      const outcomes: string[] = [];
      const note = (name: string, p: Promise<Response>) =>
        p.then((r) => outcomes.push(`${name} ${r.status}`), (e) => outcomes.push(`${name} ${e === reason ? "own reason" : String(e)}`));
      note("A", api("https://api.test/a"));
      await flush();
      let grants = 0;
      limiter.events.addEventListener("grant", () => {
        if (++grants === 1) x.abort(reason); // X's grant
      });
      note("X", api("https://api.test/x", { signal: x.signal }));
      note("Y", api("https://api.test/y"));
      await drive(run, 3000);
      expect(outcomes.sort()).toEqual(["A 200", "X own reason", "Y 200"]);
      expect(run.wire).toEqual(["0 GET /a", "1000 GET /y"]);
    });

    test(`${path}: aborted while queued — later callers go exactly when they would have without it`, async () => {
      const attack = harness(path);
      const twin = harness(path);
      const reason = new Error("gone");
      const x = new AbortController();
      let xOutcome: unknown;
      void attack.api("https://api.test/a");
      void twin.api("https://api.test/a");
      attack.api("https://api.test/x", { signal: x.signal }).then(() => (xOutcome = "resolved"), (e) => (xOutcome = e));
      void attack.api("https://api.test/y");
      void twin.api("https://api.test/y");
      await attack.clock.advance(400);
      await flush();
      x.abort(reason);
      await flush();
      expect(xOutcome).toBe(reason); // at once, not at its grant time
      await drive(attack, 3000);
      await drive(twin, 3000);
      expect(attack.wire).toEqual(twin.wire);
      expect(attack.wire).toEqual(["0 GET /a", "1000 GET /y"]);
    });

    test(`${path}: aborted while waiting to retry — no retry is sent, later callers keep their times`, async () => {
      // Twin: the same first attempt (a POST, whose bare 503 is final), no retry.
      const attack = harness(path);
      const twin = harness(path);
      const reason = new Error("gone");
      const x = new AbortController();
      let xOutcome: unknown;
      attack.api("https://api.test/503", { signal: x.signal }).then(() => (xOutcome = "resolved"), (e) => (xOutcome = e));
      void twin.api("https://api.test/503", { method: "POST" });
      await flush();
      void attack.api("https://api.test/y");
      void twin.api("https://api.test/y");
      await attack.clock.advance(200); // X waits its backoff (0.5 × 1000 ms)
      await flush();
      x.abort(reason);
      await flush();
      expect(xOutcome).toBe(reason);
      await drive(attack, 4000);
      await drive(twin, 4000);
      expect(attack.wire.map((l) => l.replace(" POST ", " GET "))).toEqual(twin.wire.map((l) => l.replace(" POST ", " GET ")));
      expect(attack.wire).toEqual(["0 GET /503", "1000 GET /y"]);
    });
  }

  test("cost/settle: a caller that aborts at its grant gives the reservation back (the next caller is not delayed)", async () => {
    const run = harness("lean", { cost: 1, settle: () => undefined });
    const { api, limiter } = run;
    const reason = new Error("gone");
    const x = new AbortController();
    const outcomes: string[] = [];
    const note = (name: string, p: Promise<Response>) =>
      p.then((r) => outcomes.push(`${name} ${r.status}`), (e) => outcomes.push(`${name} ${e === reason ? "own reason" : String(e)}`));
    note("A", api("https://api.test/a"));
    await flush();
    let grants = 0;
    limiter.events.addEventListener("grant", () => {
      if (++grants === 1) x.abort(reason);
    });
    note("X", api("https://api.test/x", { signal: x.signal }));
    note("Y", api("https://api.test/y"));
    await drive(run, 3000);
    expect(outcomes.sort()).toEqual(["A 200", "X own reason", "Y 200"]);
    expect(run.wire).toEqual(["0 GET /a", "1000 GET /y"]);
  });
});

describe("red team: abort at the grant, real fetch path, window of 1 per minute", () => {
  test("lean path with Node's fetch: the aborted-at-grant call leaves the slot (tryAcquire answers 0)", async () => {
    // The same gap as above, with globalThis.fetch (which rejects an aborted signal without sending).
    const limiter = new WindowLimiter({ limit: 1, interval: 60_000, countFrom: "completion" });
    const api = createThrottledFetch({ limiter });
    const controller = new AbortController();
    const reason = new Error("mine");
    limiter.events.addEventListener("grant", () => controller.abort(reason), { once: true });
    await expect(api("http://127.0.0.1:1/never-sent", { signal: controller.signal })).rejects.toBe(reason);
    expect(limiter.tryAcquire()).toBe(0);
  });
});

describe("the limiter side of an attempt that never started (`Unstarted`)", () => {
  test("a held window slot (counted from completion) and a concurrency slot go back; a grant-counted limiter keeps its grant (as documented)", async () => {
    const { Unstarted } = await import("../../src/limiters/settle.ts");
    const { combine, ConcurrencyLimiter, SmoothLimiter } = await import("../../src/index.ts");
    const clock = new ManualClock();
    const reason = new Error("gone");
    const unstarted = () => Promise.reject(new Unstarted(reason));
    // A strict window counting from completion: the slot is free again.
    const window = new WindowLimiter({ limit: 1, interval: 1000, clock });
    await expect(window.schedule(unstarted, { countFrom: "completion" })).rejects.toBeInstanceOf(Unstarted);
    expect(window.tryAcquire()).toBe(0);
    // A control: a task that ran (and failed) keeps its slot counted.
    const ran = new WindowLimiter({ limit: 1, interval: 1000, clock });
    await expect(ran.schedule(() => Promise.reject(reason), { countFrom: "completion" })).rejects.toBe(reason);
    expect(ran.tryAcquire()).toBeGreaterThan(0);
    // Slots: the concurrency slot and the held window slot both come back.
    const slots = combine({ permits: new WindowLimiter({ limit: 1, interval: 1000, clock }), maxConcurrent: new ConcurrencyLimiter({ limit: 1, clock }) });
    await expect(slots.schedule(unstarted, { countFrom: "completion" })).rejects.toBeInstanceOf(Unstarted);
    let second = false;
    await slots.schedule(() => void (second = true), { countFrom: "completion" });
    expect(second).toBe(true);
    expect(clock.now()).toBe(0);
    // A limiter that counts at the grant (smooth) keeps it counted (README: "keeps that grant counted").
    const smooth = new SmoothLimiter({ limit: 1, interval: 1000, clock });
    await expect(smooth.schedule(unstarted, { countFrom: "completion" })).rejects.toBeInstanceOf(Unstarted);
    expect(smooth.tryAcquire()).toBeGreaterThan(0);
  });
});
