/**
 * Soak in virtual time: many callers of a throttled fetch against a server that answers at random —
 * 429 with and without Retry-After, 503, network errors, slow streamed bodies, answers slower than
 * the attempt timeout — while callers abort at random moments and read, cancel or ignore their
 * bodies. Whatever happened, afterwards: every call has settled, nothing is queued or in flight on
 * any key, no timer is left, no rejection went unhandled, and every key can be forgotten.
 *
 * It found two bugs (2026-11-24): an adaptive key's admission never ended, so no key was ever idle
 * (memory grew with every host called), and a body's idle check that re-armed itself at the same
 * instant for ever on a ManualClock.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  AdaptiveRates,
  combine,
  createThrottledFetch,
  KeyedLimiter,
  ManualClock,
  SmoothLimiter,
  WindowLimiter,
} from "../../src/index.ts";
import { captureUnhandled, drainSoak, seededRandom } from "../helpers.ts";
import { Reach } from "../reach.ts";

const unhandled = captureUnhandled({ beforeAll, afterAll });

const HOSTS = ["a", "b", "c", "d", "e"].map((h) => `https://${h}.example`);
type Mode =
  | "adaptive + keyed window + maxConcurrent"
  | "cost and settle on keyed combinations + maxConcurrent"
  | "adaptive + cost and settle + maxConcurrent"
  | "limit/interval"
  | "adaptive alone";
const MODES: readonly Mode[] = [
  "adaptive + keyed window + maxConcurrent",
  "cost and settle on keyed combinations + maxConcurrent",
  "adaptive + cost and settle + maxConcurrent",
  "limit/interval",
  "adaptive alone",
];
const reach = new Reach("soak");

async function soak(mode: Mode, seed: number): Promise<void> {
  const r = seededRandom(seed * 7919 + mode.length);
  const clock = new ManualClock();
  const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimeout(resolve, ms));
  const server = async (_input: unknown, init?: RequestInit): Promise<Response> => {
    const x = r();
    const signal = init?.signal ?? undefined;
    await new Promise<void>((resolve, reject) => {
      const timer = clock.setTimeout(resolve, 10 + r() * 500); // up to 510 ms: some past the 400 ms timeout
      signal?.addEventListener("abort", () => {
        clock.clearTimeout(timer);
        reject(signal.reason);
      }, { once: true });
    });
    if (x < 0.1) return new Response("slow down", { status: 429, headers: reach.hit("429 with Retry-After", r() < 0.7) ? { "retry-after": String(Math.floor(r() * 3)) } : {} });
    if (x < 0.15) return new Response("busy", { status: 503 });
    if (x < 0.2) throw new TypeError("fetch failed");
    const chunks = 1 + Math.floor(r() * 4);
    let sent = 0;
    return new Response(new ReadableStream<Uint8Array>({
      async pull(controller) {
        await sleep(r() * 200);
        if (sent++ >= chunks) controller.close();
        else controller.enqueue(new Uint8Array([120]));
      },
    }));
  };
  const rates = new AdaptiveRates({ clock, wallClock: () => clock.now() });
  let keyed: KeyedLimiter<string> | undefined;
  const common = { fetch: server, clock, wallClock: () => clock.now(), timeout: 400 };
  let api;
  if (mode === "adaptive + keyed window + maxConcurrent") {
    keyed = new KeyedLimiter<string>({ create: () => new WindowLimiter({ limit: 5, interval: 1000, clock }), clock });
    api = createThrottledFetch({ ...common, adaptive: rates, limiter: keyed, maxConcurrent: 3 });
  } else if (mode === "cost and settle on keyed combinations + maxConcurrent" || mode === "adaptive + cost and settle + maxConcurrent") {
    keyed = new KeyedLimiter<string>({
      create: () => combine({ requests: new WindowLimiter({ limit: 5, interval: 1000, clock }), tokens: new SmoothLimiter({ limit: 200, interval: 1000, clock }) }),
      clock,
    });
    const adaptiveToo = mode === "adaptive + cost and settle + maxConcurrent";
    api = createThrottledFetch({ ...common, ...(adaptiveToo && { adaptive: rates }), limiter: keyed, cost: { requests: 1, tokens: 20 }, settle: () => ({ tokens: 5 }), maxConcurrent: 2 });
  } else if (mode === "limit/interval") {
    api = createThrottledFetch({ ...common, limit: 5, interval: 1000 });
  } else {
    api = createThrottledFetch({ ...common, adaptive: rates });
  }
  let settled = 0;
  const calls = Array.from({ length: 300 }, async () => {
    const url = `${HOSTS[Math.floor(r() * HOSTS.length)]}/x`;
    const controller = new AbortController();
    if (r() < 0.15) clock.setTimeout(() => controller.abort(new Error("user abort")), r() * 3000);
    const reading = r();
    await sleep(r() * 20_000);
    try {
      const response = await api(url, { signal: controller.signal });
      if (reach.hit("body read", reading < 0.6)) await response.text();
      else if (reach.hit("body cancelled", reading < 0.8)) await response.body?.cancel();
      else reach.hit("body never read");
      reach.hit("call succeeded");
    } catch (error) {
      reach.hit((error as Error).message === "user abort" ? "call aborted" : "call failed otherwise");
    } finally {
      settled++;
    }
  });
  // Bounded: a timer that re-armed itself at one instant for ever would stop here, not hang.
  await drainSoak(clock, calls, () => settled, `${mode}, seed ${seed}`, 700_000);
  for (const host of HOSTS) {
    if (keyed?.has(host)) {
      const stats = keyed.get(host).stats!();
      expect({ host, queued: stats.queued, inFlight: stats.inFlight }).toEqual({ host, queued: 0, inFlight: 0 });
    }
    if (rates.rate(host) !== undefined) expect(rates.get(host).isIdle(), `${mode}, seed ${seed}: ${host} learned rate idle`).toBe(true);
  }
  await clock.advance(61_000); // the gets above used the keys again
  keyed?.prune();
  rates.prune();
  expect(keyed?.size ?? 0, `${mode}, seed ${seed}: keys left`).toBe(0);
  for (const host of HOSTS) expect(rates.rate(host), `${mode}, seed ${seed}: ${host} forgotten`).toBeUndefined();
}

describe("soak: random faults, aborts and unread bodies leave nothing behind", () => {
  test.each(MODES)("%s, 10 seeds × 300 calls", async (mode) => {
    unhandled.take();
    for (let seed = 1; seed <= 10; seed++) await soak(mode, seed);
    expect(unhandled.take()).toEqual([]);
  });

  test("the runs reached what they are about", () => {
    reach.atLeast({
      "429 with Retry-After": 200,
      "call aborted": 100,
      "call failed otherwise": 300,
      "body read": 1500,
      "body cancelled": 500,
      "body never read": 500,
      "call succeeded": 3500,
    });
  });
});
