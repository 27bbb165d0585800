/**
 * Soak of the limiters in virtual time: callers arriving at random call `acquire`, `schedule` (tasks
 * that take time, some failing), `reserve` (settled as reserved, refunded, charged more, or
 * cancelled), `pause`, `setLimit` and `tryAcquire`, with random aborts, `maxWait` and priorities.
 * Afterwards every call has settled, every limiter is idle, no timer is left and no rejection went
 * unhandled: nothing a caller did can strand a waiter, a permit or a timer.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  combine,
  ConcurrencyLimiter,
  FixedWindowLimiter,
  KeyedLimiter,
  type Limiter,
  ManualClock,
  SlidingCounterLimiter,
  SmoothLimiter,
  WindowLimiter,
} from "../../src/index.ts";
import { captureUnhandled, drainSoak, seededRandom } from "../helpers.ts";
import { Reach } from "../reach.ts";

const unhandled = captureUnhandled({ beforeAll, afterAll });

type Any = Limiter & {
  reserve?: Limiter["reserve"];
  setLimit?: (o: { limit: number; interval?: number }) => void;
  isIdle(): boolean;
};
const KINDS: Record<string, (clock: ManualClock) => Any | KeyedLimiter<string, Any>> = {
  WindowLimiter: (clock) => new WindowLimiter({ limit: 5, interval: 1000, clock, maxQueue: 50 }),
  SmoothLimiter: (clock) => new SmoothLimiter({ limit: 5, interval: 1000, burst: 3, clock }),
  FixedWindowLimiter: (clock) => new FixedWindowLimiter({ limit: 5, interval: 1000, clock }),
  SlidingCounterLimiter: (clock) => new SlidingCounterLimiter({ limit: 5, interval: 1000, clock }),
  "combine(window, smooth)": (clock) => combine(new WindowLimiter({ limit: 5, interval: 1000, clock }), new SmoothLimiter({ limit: 8, interval: 1000, clock })),
  "combine({ requests, concurrent })": (clock) => combine({ requests: new WindowLimiter({ limit: 5, interval: 1000, clock }), concurrent: new ConcurrencyLimiter({ limit: 2, clock }) }),
  KeyedLimiter: (clock) => new KeyedLimiter<string, Any>({ create: () => new WindowLimiter({ limit: 3, interval: 500, clock }), clock, idleTimeout: 1000 }),
};
const reach = new Reach("limiter soak");

async function soak(kind: string, seed: number): Promise<void> {
  const r = seededRandom(seed * 31 + kind.length);
  const clock = new ManualClock();
  const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimeout(resolve, ms));
  const made = KINDS[kind]!(clock);
  const keyed = made instanceof KeyedLimiter ? made : undefined;
  const on = (key: string): Any => (keyed !== undefined ? keyed.get(key) : made as Any);
  let settled = 0;
  const calls = Array.from({ length: 300 }, async () => {
    await sleep(r() * 20_000);
    const key = ["x", "y", "z"][Math.floor(r() * 3)]!;
    const controller = new AbortController();
    if (r() < 0.2) clock.setTimeout(() => controller.abort(new Error("abort")), r() * 2000);
    const options: { signal: AbortSignal; priority: number; maxWait?: number } = { signal: controller.signal, priority: Math.floor(r() * 3) };
    if (r() < 0.2) options.maxWait = r() * 1500;
    const op = r();
    const limiter = on(key);
    try {
      if (op < 0.3) {
        await limiter.acquire(1 + Math.floor(r() * 2), options);
        reach.hit("acquired");
      } else if (op < 0.6) {
        await limiter.schedule(async () => {
          await sleep(r() * 800);
          if (r() < 0.1) throw new Error("task failed");
        }, options);
        reach.hit("task ran");
      } else if (op < 0.85 && limiter.reserve !== undefined) {
        const reservation = await limiter.reserve(1, options);
        await sleep(r() * 800);
        const end = r();
        if (reach.hit("reservation settled as reserved", end < 0.4)) reservation.settle();
        else if (reach.hit("reservation cancelled", end < 0.7)) reservation.cancel();
        else reach.hit("reservation settled to another cost", reservation.settle(Math.floor(r() * 3)));
      } else if (op < 0.9) {
        limiter.pause(r() * 2000);
        reach.hit("paused");
      } else if (op < 0.95 && limiter.setLimit !== undefined && !kind.startsWith("combine")) {
        limiter.setLimit({ limit: 1 + Math.floor(r() * 8), interval: 500 + Math.floor(r() * 1000) });
        reach.hit("limit changed");
      } else limiter.tryAcquire(1);
    } catch (error) {
      const e = error as Error;
      reach.hit(`refused: ${e.name === "Error" ? e.message : e.name}`); // an abort rejects with the signal's reason
    } finally {
      settled++;
    }
  });
  const label = `${kind}, seed ${seed}`;
  await drainSoak(clock, calls, () => settled, label, 60_000);
  if (keyed !== undefined) {
    for (const key of ["x", "y", "z"]) if (keyed.has(key)) expect(keyed.get(key).isIdle(), `${label}: key ${key} idle`).toBe(true);
  } else expect((made as Any).isIdle(), `${label}: idle`).toBe(true);
}

describe("limiter soak: random calls, aborts, maxWait, pauses and limit changes leave nothing behind", () => {
  test.each(Object.keys(KINDS))("%s, 10 seeds × 300 calls", async (kind) => {
    unhandled.take();
    for (let seed = 1; seed <= 10; seed++) await soak(kind, seed);
    expect(unhandled.take()).toEqual([]);
  });

  test("the runs reached what they are about", () => {
    reach.atLeast({
      acquired: 1000,
      "task ran": 1000,
      "reservation settled as reserved": 300,
      "reservation cancelled": 200,
      "reservation settled to another cost": 200,
      paused: 200,
      "limit changed": 100,
      "refused: abort": 100,
      "refused: task failed": 100,
      "refused: MaxWaitExceededError": 100,
    });
  });
});
