/**
 * The retry decision, the backoff, the server signals and the retry budget as pure functions:
 * tables of cases for the rule, and properties for the guarantees the docs advertise.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import {
  type AttemptOutcome,
  backoffDelay,
  backoffStep,
  decideRetry,
  isThrottled,
  type RetryInput,
  type RetryPolicy,
} from "../../src/http/retry.ts";
import { pauseFor, readServerSignals } from "../../src/http/throttle.ts";
import { RetryBudget } from "../../src/http/budget.ts";

type Op = "call" | "retry" | "end";
import { DEFAULTS } from "../../src/defaults.ts";
import { Reach } from "../reach.ts";

const policy: RetryPolicy = {
  limit: DEFAULTS.retry.limit,
  methods: new Set(DEFAULTS.retry.methods),
  statusCodes: new Set(DEFAULTS.retry.statusCodes),
  maxRetryAfter: DEFAULTS.retry.maxRetryAfter,
  backoff: DEFAULTS.retry.backoff,
};

function input(overrides: Partial<RetryInput> & { outcome: AttemptOutcome }): RetryInput {
  return {
    attempt: 1, idempotent: true, replayable: true, elapsed: 0, totalTimeout: Infinity, policy,
    random: () => 0.5, ...overrides,
  };
}

const response = (status: number, serverDelay?: number): AttemptOutcome => ({ kind: "response", status, serverDelay });
const networkError: AttemptOutcome = { kind: "error", timedOut: false };
const timeout: AttemptOutcome = { kind: "error", timedOut: true };

describe("decideRetry(): the rule as a table", () => {
  test.each<[string, Partial<RetryInput> & { outcome: AttemptOutcome }, Awaited<ReturnType<typeof decideRetry>>]>([
    ["GET 503 → backoff 0.5 × 1000", { outcome: response(503) }, { retry: true, delay: 500, throttled: false }],
    ["GET 503, 2nd retry → 0.5 × 2000", { attempt: 2, outcome: response(503) }, { retry: true, delay: 1000, throttled: false }],
    ["GET after the limit", { attempt: 3, outcome: response(503) }, { retry: false, reason: "attempts" }],
    ["GET 200", { outcome: response(200) }, { retry: false, reason: "not-retryable" }],
    ["GET 404", { outcome: response(404) }, { retry: false, reason: "not-retryable" }],
    ["GET network error", { outcome: networkError }, { retry: true, delay: 500, throttled: false }],
    ["GET attempt timeout", { outcome: timeout }, { retry: true, delay: 500, throttled: false }],
    // The pause every caller is already held by (a refusal run's advised wait) counts as a server's
    // delay would (a review, 2026-11-27: retries waited 2 min each, calls took 6 min).
    ["429 held by a 90-s pause > maxRetryAfter: the response", { outcome: response(429), paused: 90_000 }, { retry: false, reason: "retry-after-too-long", delay: 90_000 }],
    ["429 held by a 20-s pause, totalTimeout 10 s: the response", { outcome: response(429), paused: 20_000, totalTimeout: 10_000 }, { retry: false, reason: "total-timeout" }],
    ["429 held by a 20-s pause, maxWait 5 s: the response", { outcome: response(429), paused: 20_000, maxWait: 5_000 }, { retry: false, reason: "max-wait" }],
    ["429 held by a 20-s pause: retried (the wait is the pause)", { outcome: response(429), paused: 20_000 }, { retry: true, delay: 1000, throttled: true }],
    ["GET 503 + Retry-After 4 s", { outcome: response(503, 4000) }, { retry: true, delay: 4000, throttled: true }],
    ["GET 500 + Retry-After 4 s (not a throttle, but the server timed it)", { outcome: response(500, 4000) }, { retry: true, delay: 4000, throttled: false }],
    ["GET 429 without delay → full backoff step", { outcome: response(429) }, { retry: true, delay: 1000, throttled: true }],
    ["GET 429 + 90 s > maxRetryAfter", { outcome: response(429, 90_000) }, { retry: false, reason: "retry-after-too-long", delay: 90_000 }],
    ["GET 429 + exactly maxRetryAfter", { outcome: response(429, 60_000) }, { retry: true, delay: 60_000, throttled: true }],
    ["POST 500", { idempotent: false, outcome: response(500) }, { retry: false, reason: "not-retryable" }],
    ["POST 503 without delay", { idempotent: false, outcome: response(503) }, { retry: false, reason: "not-retryable" }],
    ["POST network error", { idempotent: false, outcome: networkError }, { retry: false, reason: "not-retryable" }],
    ["POST timeout", { idempotent: false, outcome: timeout }, { retry: false, reason: "not-retryable" }],
    ["POST 429", { idempotent: false, outcome: response(429) }, { retry: true, delay: 1000, throttled: true }],
    ["POST 503 + delay", { idempotent: false, outcome: response(503, 2000) }, { retry: true, delay: 2000, throttled: true }],
    ["streamed body", { replayable: false, outcome: response(503) }, { retry: false, reason: "streamed-body" }],
    ["streamed body on a 200 is just final", { replayable: false, outcome: response(200) }, { retry: false, reason: "not-retryable" }],
    ["wait would end at the deadline", { elapsed: 9500, totalTimeout: 10_000, outcome: response(503) }, { retry: false, reason: "total-timeout" }],
    ["wait longer than maxWait", { maxWait: 400, outcome: response(503) }, { retry: false, reason: "max-wait" }],
    ["wait within maxWait", { maxWait: 500, outcome: response(503) }, { retry: true, delay: 500, throttled: false }],
    ["wait ends before the deadline", { elapsed: 9499, totalTimeout: 10_000, outcome: response(503) }, { retry: true, delay: 500, throttled: false }],
  ])("%s", async (_name, overrides, expected) => {
    expect(await decideRetry(input(overrides))).toEqual(expected);
  });

  test("the budget is spent only when everything else says yes, and never for a throttle the server timed (at least the first backoff step)", async () => {
    const budget = new RetryBudget({ ratio: 0, reserve: 1 });
    expect(await decideRetry(input({ outcome: response(404), budget }))).toMatchObject({ retry: false });
    expect(await decideRetry(input({ outcome: response(429, 1000), budget }))).toMatchObject({ retry: true });
    expect(budget.available).toBe(1);
    expect(await decideRetry(input({ outcome: response(500), budget }))).toMatchObject({ retry: true });
    expect(await decideRetry(input({ outcome: response(500), budget }))).toEqual({ retry: false, reason: "budget" });
    expect(await decideRetry(input({ outcome: response(429), budget }))).toMatchObject({ retry: true });
    // A delay shorter than the first backoff step pauses next to nothing: such a retry is budgeted.
    expect(await decideRetry(input({ outcome: response(429, 0), budget }))).toEqual({ retry: false, reason: "budget" });
  });

  test("hooks: shouldRetry is asked only when limits allow; bad return values are errors naming the hook", async () => {
    let asked = 0;
    const shouldRetry = () => {
      asked++;
      return true;
    };
    await decideRetry(input({ attempt: 3, outcome: response(404), shouldRetry }));
    await decideRetry(input({ replayable: false, outcome: response(404), shouldRetry }));
    expect(asked).toBe(0);
    expect(await decideRetry(input({ outcome: response(404), shouldRetry }))).toMatchObject({ retry: true });
    await expect(decideRetry(input({ outcome: response(500), shouldRetry: () => "yes" as never })))
      .rejects.toThrow("`retry.shouldRetry` must return true, false, undefined or { retryAfter }, got yes");
    await expect(decideRetry(input({ outcome: response(500), delay: () => -1 })))
      .rejects.toThrow("`retry.delay` must return a non-negative finite number of ms or undefined, got -1");
    await expect(decideRetry(input({ outcome: response(500), delay: () => Infinity }))).rejects.toThrow(RangeError);
  });
});

describe("backoff", () => {
  test("steps double from base up to cap, and never overflow", () => {
    const b = { base: 1000, cap: 30_000 };
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffStep(n, b))).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
    expect(backoffStep(5000, b)).toBe(30_000);
  });

  test("full jitter spans [0, step)", () => {
    const b = { base: 1000, cap: 30_000 };
    expect(backoffDelay(3, b, () => 0)).toBe(0);
    expect(backoffDelay(3, b, () => 0.999)).toBeCloseTo(3996);
    expect(() => backoffDelay(1, b, () => 1)).toThrow("`random` must return a number in [0, 1), got 1");
  });
});

describe("server signals and the shared pause", () => {
  const now = Date.UTC(2025, 0, 15, 12);
  const read = (status: number, headers: Record<string, string>, rateLimitHeaders = true) =>
    readServerSignals(new Response(null, { status, headers }), { now, lenient: true, rateLimitHeaders });

  test.each<[string, number, Record<string, string>, ReturnType<typeof pauseFor>]>([
    ["429 + Retry-After", 429, { "retry-after": "3" }, { ms: 3000, reason: "throttled", requested: 3000, tooLong: false }],
    ["429 + retry-after-ms wins", 429, { "retry-after": "3", "retry-after-ms": "250" }, { ms: 250, reason: "throttled", requested: 250, tooLong: false }],
    ["429 bare → backoff step", 429, {}, { ms: 1000, reason: "throttled", requested: 1000, tooLong: false }],
    ["429 + 2 h: nobody paused", 429, { "retry-after": "7200" }, { ms: 0, reason: "throttled", requested: 7_200_000, tooLong: true }],
    ["503 + RateLimit reset", 503, { ratelimit: '"p";r=0;t=9' }, { ms: 9000, reason: "throttled", requested: 9000, tooLong: false }],
    ["503 bare: no pause", 503, {}, undefined],
    ["200 + remaining 0", 200, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": "12" }, { ms: 12_000, reason: "quota-exhausted", requested: 12_000, tooLong: false }],
    ["200 + remaining 1", 200, { "x-ratelimit-remaining": "1", "x-ratelimit-reset": "12" }, undefined],
    ["200 + remaining 0, no reset", 200, { "x-ratelimit-remaining": "0" }, undefined],
    ["200 + remaining 0 from a cache (Age)", 200, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": "12", age: "30" }, undefined],
    ["403 + GitHub exhausted quota", 403, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(now / 1000 + 30) }, { ms: 30_000, reason: "quota-exhausted", requested: 30_000, tooLong: false }],
    ["garbage Retry-After on a 429 → backoff step", 429, { "retry-after": "soon, maybe" }, { ms: 1000, reason: "throttled", requested: 1000, tooLong: false }],
  ])("%s", (_name, status, headers, expected) => {
    expect(pauseFor(read(status, headers), 1, policy)).toEqual(expected);
  });

  test("rateLimitHeaders: false ignores a reported quota (but not a throttle)", () => {
    expect(read(200, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": "5" }, false).exhausted).toBeUndefined();
    expect(read(429, { "retry-after": "5" }, false).throttled).toBe(true);
  });
});

describe("properties", () => {
  const now = Date.UTC(2025, 0, 15, 12);
  const RUNS = 300;
  const anyStatus = fc.constantFrom(200, 201, 301, 400, 403, 404, 408, 409, 429, 500, 501, 502, 503, 504);
  // Mostly honourable delays, a quarter beyond maxRetryAfter.
  const serverDelayArb = fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: 0, max: policy.maxRetryAfter }) },
    { weight: 1, arbitrary: fc.integer({ min: policy.maxRetryAfter + 1, max: 4 * policy.maxRetryAfter }) },
  );
  const outcomeArb = (status = anyStatus, serverDelay: fc.Arbitrary<number | undefined> = fc.option(serverDelayArb, { nil: undefined })): fc.Arbitrary<AttemptOutcome> =>
    fc.oneof(
      { weight: 4, arbitrary: fc.record({ kind: fc.constant("response" as const), status, serverDelay }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant("error" as const), timedOut: fc.boolean() }) },
    );
  // Every field the rule reads, each drawn so the rule's other gates let most cases through to the
  // branch a property is about (each property overrides the field it tests).
  const inputArb = (overrides: Partial<{ [K in keyof Generated]: fc.Arbitrary<Generated[K]> }> = {}) => fc.record({
    attempt: fc.integer({ min: 1, max: 4 }),
    outcome: outcomeArb(),
    idempotent: fc.boolean(),
    replayable: fc.constant(true),
    elapsed: fc.integer({ min: 0, max: 10_000 }),
    totalTimeout: fc.oneof({ weight: 3, arbitrary: fc.constant(Infinity) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 200_000 }) }),
    random: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
    hook: fc.constantFrom<boolean | undefined | "none">(true, false, undefined, "none"),
    hookDelay: fc.option(fc.integer({ min: 0, max: 100_000 }), { nil: undefined }),
    limit: fc.integer({ min: 4, max: 6 }),
    ...overrides,
  } as { [K in keyof Generated]: fc.Arbitrary<Generated[K]> });
  interface Generated {
    attempt: number;
    outcome: AttemptOutcome;
    idempotent: boolean;
    replayable: boolean;
    elapsed: number;
    totalTimeout: number;
    random: number;
    hook: boolean | undefined | "none";
    hookDelay: number | undefined;
    limit: number;
  }
  const run = (i: Generated, hooks = true) => decideRetry({
    ...i,
    policy: { ...policy, limit: i.limit },
    random: () => i.random,
    ...(hooks && {
      shouldRetry: i.hook === "none" ? undefined : () => i.hook as boolean | undefined,
      delay: () => i.hookDelay,
    }),
  });
  const serverDelayOf = (i: Generated) => i.outcome.kind === "response" ? i.outcome.serverDelay : undefined;

  test("never retries a body that cannot be replayed", async () => {
    const reach = new Reach("streamed body");
    await fc.assert(fc.asyncProperty(inputArb(), async (i) => {
      reach.run();
      // The same call with a replayable body would be retried: only the stream stops it.
      if (reach.hit("retried if replayable", (await run(i)).retry)) {
        expect((await run({ ...i, replayable: false })).retry).toBe(false);
      }
    }), { numRuns: RUNS });
    reach.atLeast({ "retried if replayable": 40 });
  });

  test("never waits less than the server asked, and never honours more than maxRetryAfter", async () => {
    const reach = new Reach("server delay");
    // Every response carries a delay, and the delay hook always answers (often less than the server).
    const timed = inputArb({ outcome: outcomeArb(fc.constantFrom(429, 503, 500, 502), serverDelayArb), hookDelay: fc.integer({ min: 0, max: 100_000 }) });
    await fc.assert(fc.asyncProperty(timed, async (i) => {
      reach.run();
      const decision = await run(i);
      const serverDelay = serverDelayOf(i);
      if (serverDelay === undefined) return;
      if (reach.hit("retried after a server delay", decision.retry) && decision.retry) {
        expect(decision.delay).toBeGreaterThanOrEqual(serverDelay);
        expect(serverDelay).toBeLessThanOrEqual(policy.maxRetryAfter);
        reach.hit("a hook asked for less than the server", i.hookDelay !== undefined && i.hookDelay < serverDelay);
      }
      if (reach.hit("server asked beyond maxRetryAfter", serverDelay > policy.maxRetryAfter)) {
        expect(decision).toMatchObject({ retry: false });
      }
    }), { numRuns: RUNS });
    reach.atLeast({ "retried after a server delay": 50, "a hook asked for less than the server": 8, "server asked beyond maxRetryAfter": 20 });
  });

  test("never makes more than `limit` retries, whatever shouldRetry says", async () => {
    const reach = new Reach("attempts");
    const spent = fc.integer({ min: 0, max: 5 }).chain((limit) => inputArb({
      limit: fc.constant(limit),
      attempt: fc.integer({ min: limit + 1, max: limit + 3 }),
    }));
    await fc.assert(fc.asyncProperty(spent, async (i) => {
      reach.run();
      // The interesting cases: everything else (the hook included) says yes.
      reach.hit("retried with one more attempt", (await run({ ...i, limit: i.attempt })).retry);
      reach.hit("shouldRetry said yes", i.hook === true);
      expect((await run(i)).retry).toBe(false);
    }), { numRuns: RUNS });
    reach.atLeast({ "retried with one more attempt": 30, "shouldRetry said yes": 30 });
  });

  test("without hooks, a non-idempotent request is retried only on 429 or 503 with a server delay", async () => {
    const reach = new Reach("non-idempotent");
    // Throttles (429, 503) as often as the rest: both sides of the rule are reached.
    const post = inputArb({ idempotent: fc.constant(false), outcome: outcomeArb(fc.oneof(fc.constantFrom(429, 503), fc.constantFrom(200, 408, 500, 502, 504))) });
    await fc.assert(fc.asyncProperty(post, async (i) => {
      reach.run();
      const decision = await run(i, false);
      if (reach.hit("retried", decision.retry)) {
        expect(i.outcome.kind).toBe("response");
        expect(isThrottled(i.outcome)).toBe(true);
      } else {
        // Refused although an idempotent request would have been retried.
        reach.hit("refused where GET is retried", (await run({ ...i, idempotent: true }, false)).retry);
      }
    }), { numRuns: RUNS });
    reach.atLeast({ retried: 30, "refused where GET is retried": 30 });
  });

  test("a retry's wait always ends before the total timeout", async () => {
    const reach = new Reach("total timeout");
    // Time already spent: anywhere before the deadline, so some waits fit and some do not.
    const deadline = fc.integer({ min: 1, max: 100_000 }).chain((totalTimeout) => inputArb({
      outcome: outcomeArb(fc.constantFrom(408, 429, 500, 502, 503, 504)),
      hook: fc.constantFrom<Generated["hook"]>(true, undefined, "none"),
      totalTimeout: fc.constant(totalTimeout),
      elapsed: fc.integer({ min: 0, max: totalTimeout - 1 }),
    }));
    await fc.assert(fc.asyncProperty(deadline, async (i) => {
      reach.run();
      const decision = await run(i);
      if (reach.hit("retried", decision.retry) && decision.retry) expect(i.elapsed + decision.delay).toBeLessThan(i.totalTimeout);
      // The boundary: refused only because the wait would reach the deadline.
      reach.hit("refused for the deadline", !decision.retry && decision.reason === "total-timeout");
    }), { numRuns: RUNS });
    reach.atLeast({ retried: 20, "refused for the deadline": 40 });
  });

  test("without hooks, an untimed retry waits within [0, backoff step)", async () => {
    const reach = new Reach("backoff");
    const untimed = inputArb({ outcome: outcomeArb(fc.constantFrom(408, 429, 500, 502, 503, 504), fc.constant(undefined)) });
    await fc.assert(fc.asyncProperty(untimed, async (i) => {
      reach.run();
      const decision = await run(i, false);
      if (reach.hit("untimed retry", decision.retry && !decision.throttled) && decision.retry) {
        expect(decision.delay).toBeGreaterThanOrEqual(0);
        expect(decision.delay).toBeLessThan(backoffStep(i.attempt, policy.backoff));
        reach.hit("beyond the first step", i.attempt > 1);
      }
    }), { numRuns: RUNS });
    reach.atLeast({ "untimed retry": 50, "beyond the first step": 30 });
  });

  test("reading hostile headers never throws, and every delay is a finite whole number of ms ≥ 0", () => {
    // Header values as servers can send them: any Latin-1 text without CR, LF or NUL.
    const value = fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 60 });
    const interesting = fc.oneof(value, fc.constantFrom("0", "1.5", "-1", "1e3", "99999999999999999999", '"p";r=0;t=5', "Wed, 15 Jan 2025 12:00:30 GMT"));
    const names = ["retry-after", "retry-after-ms", "ratelimit", "ratelimit-policy", "ratelimit-remaining", "ratelimit-reset",
      "x-ratelimit-remaining", "x-ratelimit-reset", "x-ratelimit-reset-after", "date", "age"];
    const reach = new Reach("hostile headers");
    fc.assert(fc.property(
      fc.constantFrom(200, 403, 429, 503),
      fc.dictionary(fc.constantFrom(...names), interesting),
      (status, headers) => {
        reach.run();
        const signals = readServerSignals(new Response(null, { status, headers }), { now, lenient: true, rateLimitHeaders: true });
        reach.hit("a server delay read", signals.delay !== undefined);
        reach.hit("an exhausted quota read", signals.exhausted !== undefined);
        for (const ms of [signals.delay?.ms, signals.exhausted?.resetMs]) {
          if (ms === undefined) continue;
          expect(Number.isSafeInteger(ms)).toBe(true);
          expect(ms).toBeGreaterThanOrEqual(0);
        }
        const pause = pauseFor(signals, 1, policy);
        if (reach.hit("a pause", pause !== undefined && pause.ms > 0)) expect(pause!.ms).toBeLessThanOrEqual(policy.maxRetryAfter);
        reach.hit("a pause refused as too long", pause?.tooLong === true);
      },
    ), { numRuns: 2000 });
    reach.atLeast({ "a server delay read": 250, "an exhausted quota read": 5, "a pause": 350, "a pause refused as too long": 15 });
  });

  test("RetryBudget: retries ≤ reserve + ratio × calls over any sequence, exactly", () => {
    const reach = new Reach("retry budget");
    fc.assert(fc.property(
      fc.integer({ min: 0, max: 1000 }), // ratio in thousandths
      fc.integer({ min: 0, max: 20 }),
      // true = a call, false = a retry attempt; retries as often as calls or three times as often,
      // so the budget runs dry in most runs and the bound is reached.
      // "end" = a call in progress ends (calls overlap: many may be in progress at once).
      fc.oneof(
        fc.array(fc.constantFrom<Op>("call", "retry", "end"), { minLength: 20, maxLength: 3000 }),
        fc.array(fc.constantFrom<Op>("call", "retry", "retry", "retry", "end"), { minLength: 20, maxLength: 3000 }),
      ),
      (thousandths, reserve, ops) => {
        reach.run();
        const budget = new RetryBudget({ ratio: thousandths / 1000, reserve });
        let calls = 0;
        const ends: (() => void)[] = [];
        let retries = 0;
        let refused = false;
        let atBound = false;
        for (const op of ops) {
          if (op === "call") {
            calls++;
            ends.push(budget.start());
          } else if (op === "end") {
            ends.shift()?.();
          } else if (budget.tryWithdraw()) {
            retries++;
          } else {
            refused = true;
          }
          // Held: at most the reserve (at least 1) plus `ratio` for each call in progress.
          expect(budget.available * 1000).toBeLessThanOrEqual(Math.max(reserve, 1) * 1000 + thousandths * ends.length);
          // Integer form of retries ≤ reserve + ratio × calls.
          expect(retries * 1000).toBeLessThanOrEqual(reserve * 1000 + thousandths * calls);
          atBound ||= retries > 0 && (reserve * 1000 + thousandths * calls) - retries * 1000 < 1000;
        }
        reach.hit("a retry refused", refused);
        reach.hit("retries within one of the bound", atBound);
      },
    ), { numRuns: 200 });
    reach.atLeast({ "a retry refused": 60, "retries within one of the bound": 60 });
  });

  test("RetryBudget: a quiet client keeps its reserve; a storm is held to the ratio", () => {
    const budget = new RetryBudget({ ratio: 0.2, reserve: 10 });
    for (let i = 0; i < 1000; i++) budget.start()();
    expect(budget.available).toBe(10);
    let retries = 0;
    for (let i = 0; i < 1000; i++) {
      const end = budget.start();
      if (budget.tryWithdraw()) retries++;
      end();
    }
    // 10 + 0.2 × 1000: each call's deposit is held while it is in progress.
    expect(retries).toBe(210);
  });

  test("RetryBudget: calls made at once hold room for their deposits (10 + 0.2 × 200 retries, not 10), and it goes as they end", () => {
    const budget = new RetryBudget({ ratio: 0.2, reserve: 10 });
    const ends = Array.from({ length: 200 }, () => budget.start());
    expect(budget.available).toBe(50);
    ends[0]!();
    ends[0]!(); // once only
    expect(budget.available).toBe(49);
    for (const end of ends) end();
    expect(budget.available).toBe(10);
    // A deposit of your own holds no such room: the reserve caps it, as before.
    for (let i = 0; i < 10_000; i++) budget.deposit();
    expect(budget.available).toBe(10);
  });
});
