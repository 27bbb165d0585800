/**
 * Soak of `throttle()` in virtual time, the test playing undici and the server (see
 * support/fake-dispatch.ts): requests to a few origins answered at random — 200, 429 with and
 * without Retry-After, 503, a network error — some while the caller aborts, before or after the
 * request went out. Afterwards every handler got exactly one ending, nothing is queued or in flight
 * on any key, no timer is left, and every key can be forgotten.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { AdaptiveRates, KeyedLimiter, ManualClock, WindowLimiter } from "../../src/index.ts";
import { throttle } from "../../src/undici.ts";
import { captureUnhandled, seededRandom } from "../helpers.ts";
import { Reach } from "../reach.ts";
import { fakeDispatcher, get, RecordingHandler, type SentRequest } from "./support/fake-dispatch.ts";

const ORIGINS = ["https://a.example", "https://b.example", "https://c.example"];
const reach = new Reach("undici soak");
const unhandled = captureUnhandled({ beforeAll, afterAll });

async function soak(adaptive: boolean, seed: number): Promise<void> {
  const r = seededRandom(seed * 104_729 + (adaptive ? 1 : 0));
  const clock = new ManualClock();
  const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimeout(resolve, ms));
  const keyed = new KeyedLimiter<string>({ create: () => new WindowLimiter({ limit: 4, interval: 1000, clock, countFrom: "completion" }), clock });
  const rates = new AdaptiveRates({ clock, wallClock: () => clock.now() });
  const fake = fakeDispatcher(true);
  const answered = new Set<SentRequest>();
  // The server: each request that went out is answered after 10–300 ms, at random.
  const next: typeof fake.dispatch = (request, handler) => {
    const accepted = fake.dispatch(request, handler);
    const sent = fake.sent.at(-1)!;
    clock.setTimeout(() => {
      if (sent.controller.aborted || answered.has(sent)) return;
      answered.add(sent);
      const x = r();
      if (x < 0.12) sent.respond(429, reach.hit("429 with Retry-After", r() < 0.7) ? { "retry-after": String(Math.floor(r() * 3)) } : {});
      else if (x < 0.17) sent.respond(503);
      else if (x < 0.22) sent.fail(new Error("socket hang up"));
      else sent.respond(200);
    }, 10 + r() * 290);
    return accepted;
  };
  const dispatch = throttle({ limiter: keyed, ...(adaptive && { adaptive: rates }), wallClock: () => clock.now() })(next);
  const handlers: RecordingHandler[] = [];
  const calls = Array.from({ length: 200 }, async () => {
    await sleep(r() * 20_000);
    const handler = new RecordingHandler();
    handlers.push(handler);
    dispatch(get(ORIGINS[Math.floor(r() * ORIGINS.length)]!), handler as never);
    if (r() < 0.2) {
      await sleep(r() * 1500);
      // The caller gives up: before the request left (still waiting for a permit) or after.
      const controller = handler.controller as RecordingHandler["controller"]; // set by the dispatch, later
      if (controller !== undefined && !handler.log.includes("end") && !handler.log.includes("error")) {
        reach.hit("caller aborted");
        controller.abort(new Error("caller gave up"));
      }
    }
  });
  await clock.runAll(200_000);
  await Promise.all(calls);
  await clock.runAll(200_000);
  const label = `${adaptive ? "adaptive" : "keyed window"}, seed ${seed}`;
  for (const handler of handlers) {
    const endings = handler.log.filter((entry) => entry === "end" || entry === "error").length;
    expect(endings, `${label}: one ending per request (${handler.log.join(", ")})`).toBe(1);
    reach.hit(handler.log.includes("end") ? `ended ${handler.status}` : "errored");
  }
  await clock.advance(700_000);
  expect(clock.pendingTimers, `${label}: timers left`).toBe(0);
  for (const origin of ORIGINS) {
    if (keyed.has(origin)) expect(keyed.get(origin).stats!(), label).toMatchObject({ queued: 0, inFlight: 0 });
    if (rates.rate(origin) !== undefined) expect(rates.get(origin).isIdle(), `${label}: ${origin} learned rate idle`).toBe(true);
  }
  await clock.advance(61_000);
  keyed.prune();
  rates.prune();
  expect(keyed.size, `${label}: keys left`).toBe(0);
  for (const origin of ORIGINS) expect(rates.rate(origin), `${label}: ${origin} forgotten`).toBeUndefined();
}

describe("throttle() soak: random answers and aborts leave nothing behind", () => {
  test.each([false, true])("adaptive %s, 10 seeds × 200 requests", async (adaptive) => {
    unhandled.take();
    for (let seed = 1; seed <= 10; seed++) await soak(adaptive, seed);
    expect(unhandled.take()).toEqual([]);
  });

  test("the runs reached what they are about", () => {
    reach.atLeast({ "429 with Retry-After": 100, "caller aborted": 200, "ended 200": 1500, "ended 429": 100, "ended 503": 50, errored: 300 });
  });
});
