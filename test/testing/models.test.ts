/**
 * The simulated servers as step tables: exact times of allow and refuse, the exact retry waits and
 * the headers each sends.
 */
import { describe, expect, test } from "vitest";
import {
  FixedWindowServer, LeakyBucketServer, SeededRandom, SlidingLogServer, TokenBucketServer, type ServerModel,
} from "../../src/testing.ts";

/** [time, allowed, wait]: the wait is `delayMs` when allowed, `retryAfterMs` when refused. */
type Step = readonly [at: number, allowed: boolean, wait: number];
/** Runs a table's times through `model`, returning what it decided in the table's shape. */
function run(model: ServerModel, steps: readonly Step[]): Step[] {
  return steps.map(([at]) => {
    const d = model.decide(at);
    return [at, d.allowed, d.allowed ? d.delayMs : d.retryAfterMs ?? NaN] as const;
  });
}

describe("TokenBucketServer", () => {
  test("a burst of 2 at 10/s: two at once, then one every 100 ms, retry waits exact to the ms", () => {
    const steps: Step[] = [
      [0, true, 0], [0, true, 0], [0, false, 100], [99, false, 1], [100, true, 0], [100, false, 100],
      [250, true, 0], [300, true, 0], [300, false, 100], [350, false, 50], [400, true, 0], [1000, true, 0], [1000, true, 0], [1000, false, 100],
    ];
    expect(run(new TokenBucketServer({ limit: 10, interval: 1000, burst: 2 }), steps)).toEqual(steps);
  });

  test("the bucket starts full at the limit when no burst is given, and a request larger than it never passes", () => {
    const server = new TokenBucketServer({ limit: 3, interval: 1000 });
    expect([0, 0, 0, 0].map((t) => server.decide(t).allowed)).toEqual([true, true, true, false]);
    expect(server.decide(0, 4).retryAfterMs).toBe(Infinity);
  });

  test("a limit that steps down at 5 s and up at 10 s: the rate and the burst follow it", () => {
    const server = new TokenBucketServer({ limit: 4, interval: 1000, changes: [{ at: 5000, limit: 1 }, { at: 10_000, limit: 2 }] });
    const steps: Step[] = [
      [0, true, 0], [0, true, 0], [0, true, 0], [0, true, 0], [0, false, 250],
      [5000, true, 0], [5000, false, 1000], // the full bucket is cut to the new burst of 1
      [6000, true, 0], [6500, false, 500],
      [9000, true, 0], [10_000, true, 0], [10_000, false, 500], [10_500, true, 0],
    ];
    expect(run(server, steps)).toEqual(steps);
  });

  test("charge() meters usage after the fact: debt is repaid by the refill before anything passes again", () => {
    const server = new TokenBucketServer({ limit: 100, interval: 1000 });
    expect(server.decide(0, 10).allowed).toBe(true);
    server.charge(0, 140); // actual usage was 150: 50 in debt
    expect(server.available(0)).toBe(-50);
    expect(server.decide(400, 1)).toMatchObject({ allowed: false, retryAfterMs: 110 });
    expect(server.decide(510, 1).allowed).toBe(true);
    server.charge(510, -1000); // refunds never overfill the bucket
    expect(server.available(510)).toBe(100);
  });

  test("headers: IETF draft-10, X-RateLimit with epoch or delta resets, Retry-After rounded up; none when asked", () => {
    const ietf = new TokenBucketServer({ limit: 10, interval: 1000, burst: 2, headers: ["ietf", "retry-after"], policy: "api" });
    expect(ietf.decide(0).headers).toEqual({ "ratelimit-policy": '"api";q=10;w=1', ratelimit: '"api";r=1;t=1' });
    ietf.decide(0);
    expect(ietf.decide(50).headers).toEqual({ "ratelimit-policy": '"api";q=10;w=1', ratelimit: '"api";r=0;t=1', "retry-after": "1" });
    const x = new TokenBucketServer({ limit: 1, interval: 60_000, headers: ["x-ratelimit"], epochMs: 1_767_225_600_000 });
    expect(x.decide(0).headers).toEqual({ "x-ratelimit-limit": "1", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "1767225660" });
    const delta = new TokenBucketServer({ limit: 1, interval: 60_000, headers: ["x-ratelimit"] });
    expect(delta.decide(0).headers["x-ratelimit-reset"]).toBe("60");
    const none = new TokenBucketServer({ limit: 1, headers: [] });
    none.decide(0);
    expect(none.decide(0)).toMatchObject({ allowed: false, status: 429, headers: {} });
  });
});

describe("LeakyBucketServer (nginx limit_req)", () => {
  test("rate=1r/s burst=2: excess requests are delayed, not refused, until the burst is full; refusals are 503", () => {
    const nginx = new LeakyBucketServer({ rate: 1, burst: 2 });
    expect([0, 0, 0].map((t) => nginx.decide(t).delayMs)).toEqual([0, 1000, 2000]);
    expect(nginx.decide(0)).toMatchObject({ allowed: false, status: 503, retryAfterMs: 1000, headers: {} });
    expect(nginx.decide(500)).toMatchObject({ allowed: false, retryAfterMs: 500 });
    // Served at 1000 + 2000 = 3000: right after the request served at 2000, one per second.
    expect(nginx.decide(1000)).toMatchObject({ allowed: true, delayMs: 2000 });
  });

  test("nodelay: the burst goes at once, and the bucket still drains at the rate", () => {
    const nginx = new LeakyBucketServer({ rate: 1, burst: 2, nodelay: true });
    expect([0, 0, 0, 0].map((t) => nginx.decide(t).allowed)).toEqual([true, true, true, false]);
    expect(nginx.decide(999).allowed).toBe(false);
    expect(nginx.decide(1000)).toMatchObject({ allowed: true, delayMs: 0 });
    expect(nginx.decide(1000).allowed).toBe(false);
  });

  test("delay=1: the first excess request goes at once, the next is delayed", () => {
    const nginx = new LeakyBucketServer({ rate: 10, burst: 3, delay: 1 });
    expect([0, 0, 0, 0, 0].map((t) => nginx.decide(t))).toMatchObject([
      { delayMs: 0 }, { delayMs: 0 }, { delayMs: 100 }, { delayMs: 200 }, { allowed: false },
    ]);
  });

  test("burst=0: requests at exactly the rate pass; one early is refused, and refused requests don't count", () => {
    const nginx = new LeakyBucketServer({ rate: 2, status: 429 });
    const steps: Step[] = [[0, true, 0], [250, false, 250], [499, false, 1], [500, true, 0], [1000, true, 0], [1400, false, 100], [1500, true, 0]];
    expect(run(nginx, steps)).toEqual(steps);
  });
});

describe("FixedWindowServer", () => {
  test("windows at the server's phase, not the client's first request", () => {
    const server = new FixedWindowServer({ limit: 2, interval: 1000, phase: 300, headers: ["ietf", "retry-after"] });
    const steps: Step[] = [[0, true, 0], [1, true, 0], [2, false, 298], [299, false, 1], [300, true, 0], [301, true, 0], [302, false, 998], [1300, true, 0]];
    expect(run(server, steps)).toEqual(steps);
    expect(server.decide(1300).headers).toEqual({ "ratelimit-policy": '"default";q=2;w=1', ratelimit: '"default";r=0;t=1' });
  });

  test("a random phase is drawn from the seed: the same for the same seed, within the interval", () => {
    const phases = [1, 2, 3, 4, 5].map((seed) => new FixedWindowServer({ limit: 1, interval: 60_000, phase: "random", seed }).phase);
    expect(phases.every((p) => p >= 0 && p < 60_000 && Number.isInteger(p))).toBe(true);
    expect(new Set(phases).size).toBeGreaterThan(1);
    expect(new FixedWindowServer({ limit: 1, interval: 60_000, phase: "random", seed: 3 }).phase).toBe(phases[2]);
  });

  test("countRejected: a refused request uses up the window too", () => {
    const counting = new FixedWindowServer({ limit: 5, countRejected: true });
    const plain = new FixedWindowServer({ limit: 5 });
    for (const server of [counting, plain]) {
      expect(server.decide(0, 3).allowed).toBe(true);
      expect(server.decide(1, 3).allowed).toBe(false);
    }
    expect(plain.decide(2).allowed).toBe(true);
    expect(counting.decide(2).allowed).toBe(false);
    expect(counting.decide(1000).allowed).toBe(true);
  });

  test("a limit that steps up mid-window takes effect at once", () => {
    const server = new FixedWindowServer({ limit: 1, interval: 1000, changes: [{ at: 500, limit: 3 }] });
    expect([0, 100, 500, 600, 700].map((t) => server.decide(t).allowed)).toEqual([true, false, true, true, false]);
  });
});

describe("SlidingLogServer", () => {
  test("never more than the limit in any rolling interval; the wait is until the oldest entry leaves", () => {
    const steps: Step[] = [[0, true, 0], [400, true, 0], [999, false, 1], [1000, true, 0], [1000, false, 400], [1399, false, 1], [1400, true, 0]];
    expect(run(new SlidingLogServer({ limit: 2, interval: 1000 }), steps)).toEqual(steps);
  });

  test("costs: a request of cost 2 waits until two units have left", () => {
    const server = new SlidingLogServer({ limit: 3, interval: 1000, headers: ["x-ratelimit", "retry-after"] });
    server.decide(0); server.decide(100); server.decide(200);
    expect(server.decide(300, 2)).toMatchObject({ allowed: false, retryAfterMs: 800, headers: { "retry-after": "1", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "1" } });
    expect(server.decide(1100, 2).allowed).toBe(true);
  });
});

describe("validation", () => {
  test("bad options throw RangeError/TypeError naming the option and the value", () => {
    expect(() => new TokenBucketServer({ limit: -3 })).toThrow("`limit` must be a positive integer, got -3");
    expect(() => new TokenBucketServer({ limit: 1, headers: ["nope" as never] })).toThrow(RangeError);
    expect(() => new LeakyBucketServer({ rate: 1, burst: 1.5 })).toThrow("`burst` must be a non-negative integer, got 1.5");
    expect(() => new SlidingLogServer({ limit: 1, changes: [{ at: 5, limit: 1 }, { at: 1, limit: 2 }] })).toThrow("`changes[1].at`");
    expect(() => new FixedWindowServer({ limit: 1, status: 200 })).toThrow("`status` must be an HTTP error status (400–599), got 200");
    const server = new SlidingLogServer({ limit: 1 });
    server.decide(10);
    expect(() => server.decide(5)).toThrow("`now` must not go backwards (last 10), got 5");
    expect(() => server.decide(20, 0)).toThrow("`cost` must be a positive integer, got 0");
    expect(() => new SeededRandom(0.5)).toThrow("`seed` must be a safe integer, got 0.5");
  });
});
