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
import { DEFAULTS } from "../../src/defaults.ts";

fc.configureGlobal({ seed: 20250115 });

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

  test("the budget is spent only when everything else says yes, and never for a throttle", async () => {
    const budget = new RetryBudget({ ratio: 0, reserve: 1 });
    expect(await decideRetry(input({ outcome: response(404), budget }))).toMatchObject({ retry: false });
    expect(await decideRetry(input({ outcome: response(429, 100), budget }))).toMatchObject({ retry: true });
    expect(budget.available).toBe(1);
    expect(await decideRetry(input({ outcome: response(500), budget }))).toMatchObject({ retry: true });
    expect(await decideRetry(input({ outcome: response(500), budget }))).toEqual({ retry: false, reason: "budget" });
    expect(await decideRetry(input({ outcome: response(429), budget }))).toMatchObject({ retry: true });
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
      .rejects.toThrow("`retry.shouldRetry` must return true, false or undefined, got yes");
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
  const outcomeArb: fc.Arbitrary<AttemptOutcome> = fc.oneof(
    fc.record({
      kind: fc.constant("response" as const),
      status: fc.constantFrom(200, 201, 301, 400, 403, 404, 408, 409, 429, 500, 501, 502, 503, 504),
      serverDelay: fc.option(fc.integer({ min: 0, max: 200_000 }), { nil: undefined }),
    }),
    fc.record({ kind: fc.constant("error" as const), timedOut: fc.boolean() }),
  );
  const inputArb = fc.record({
    attempt: fc.integer({ min: 1, max: 6 }),
    outcome: outcomeArb,
    idempotent: fc.boolean(),
    replayable: fc.boolean(),
    elapsed: fc.integer({ min: 0, max: 100_000 }),
    totalTimeout: fc.oneof(fc.constant(Infinity), fc.integer({ min: 1, max: 200_000 })),
    random: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
    hook: fc.constantFrom<boolean | undefined | "none">(true, false, undefined, "none"),
    hookDelay: fc.option(fc.integer({ min: 0, max: 100_000 }), { nil: undefined }),
    limit: fc.integer({ min: 0, max: 5 }),
  });
  type Generated = typeof inputArb extends fc.Arbitrary<infer T> ? T : never;
  const run = (i: Generated) => decideRetry({
    ...i,
    policy: { ...policy, limit: i.limit },
    random: () => i.random,
    shouldRetry: i.hook === "none" ? undefined : () => i.hook as boolean | undefined,
    delay: () => i.hookDelay,
  });

  test("never retries a body that cannot be replayed", async () => {
    await fc.assert(fc.asyncProperty(inputArb, async (i) => {
      if (!i.replayable) expect((await run(i)).retry).toBe(false);
    }));
  });

  test("never waits less than the server asked, and never honours more than maxRetryAfter", async () => {
    await fc.assert(fc.asyncProperty(inputArb, async (i) => {
      const decision = await run(i);
      const serverDelay = i.outcome.kind === "response" ? i.outcome.serverDelay : undefined;
      if (decision.retry && serverDelay !== undefined) {
        expect(decision.delay).toBeGreaterThanOrEqual(serverDelay);
        expect(serverDelay).toBeLessThanOrEqual(policy.maxRetryAfter);
      }
    }));
  });

  test("never makes more than `limit` retries, whatever shouldRetry says", async () => {
    await fc.assert(fc.asyncProperty(inputArb, async (i) => {
      if (i.attempt > i.limit) expect((await run(i)).retry).toBe(false);
    }));
  });

  test("without hooks, a non-idempotent request is retried only on 429 or 503 with a server delay", async () => {
    await fc.assert(fc.asyncProperty(inputArb, async (i) => {
      const decision = await decideRetry({ ...i, idempotent: false, policy: { ...policy, limit: i.limit }, random: () => i.random });
      if (decision.retry) {
        expect(i.outcome.kind).toBe("response");
        expect(isThrottled(i.outcome)).toBe(true);
      }
    }));
  });

  test("a retry's wait always ends before the total timeout", async () => {
    await fc.assert(fc.asyncProperty(inputArb, async (i) => {
      const decision = await run(i);
      if (decision.retry) expect(i.elapsed + decision.delay).toBeLessThan(i.totalTimeout);
    }));
  });

  test("without hooks, an untimed retry waits within [0, backoff step)", async () => {
    await fc.assert(fc.asyncProperty(inputArb, async (i) => {
      const decision = await decideRetry({ ...i, policy: { ...policy, limit: i.limit }, random: () => i.random });
      const serverDelay = i.outcome.kind === "response" ? i.outcome.serverDelay : undefined;
      if (decision.retry && serverDelay === undefined && !decision.throttled) {
        expect(decision.delay).toBeGreaterThanOrEqual(0);
        expect(decision.delay).toBeLessThan(backoffStep(i.attempt, policy.backoff));
      }
    }));
  });

  test("reading hostile headers never throws, and every delay is a finite whole number of ms ≥ 0", () => {
    // Header values as servers can send them: any Latin-1 text without CR, LF or NUL.
    const value = fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 60 });
    const interesting = fc.oneof(value, fc.constantFrom("0", "1.5", "-1", "1e3", "99999999999999999999", '"p";r=0;t=5', "Wed, 15 Jan 2025 12:00:30 GMT"));
    const names = ["retry-after", "retry-after-ms", "ratelimit", "ratelimit-policy", "ratelimit-remaining", "ratelimit-reset",
      "x-ratelimit-remaining", "x-ratelimit-reset", "x-ratelimit-reset-after", "date", "age"];
    fc.assert(fc.property(
      fc.constantFrom(200, 403, 429, 503),
      fc.dictionary(fc.constantFrom(...names), interesting),
      (status, headers) => {
        const signals = readServerSignals(new Response(null, { status, headers }), { now, lenient: true, rateLimitHeaders: true });
        for (const ms of [signals.delay?.ms, signals.exhausted?.resetMs]) {
          if (ms === undefined) continue;
          expect(Number.isSafeInteger(ms)).toBe(true);
          expect(ms).toBeGreaterThanOrEqual(0);
        }
        const pause = pauseFor(signals, 1, policy);
        if (pause !== undefined) expect(pause.ms).toBeLessThanOrEqual(policy.maxRetryAfter);
      },
    ), { numRuns: 2000 });
  });

  test("RetryBudget: retries ≤ reserve + ratio × calls over any sequence, exactly", () => {
    fc.assert(fc.property(
      fc.integer({ min: 0, max: 1000 }), // ratio in thousandths
      fc.integer({ min: 0, max: 20 }),
      fc.array(fc.boolean(), { maxLength: 3000 }), // true = a call, false = a retry attempt
      (thousandths, reserve, ops) => {
        const budget = new RetryBudget({ ratio: thousandths / 1000, reserve });
        let calls = 0;
        let retries = 0;
        for (const isCall of ops) {
          if (isCall) {
            calls++;
            budget.deposit();
          } else if (budget.tryWithdraw()) {
            retries++;
          }
          // Integer form of retries ≤ reserve + ratio × calls.
          expect(retries * 1000).toBeLessThanOrEqual(reserve * 1000 + thousandths * calls);
        }
      },
    ));
  });

  test("RetryBudget: a quiet client keeps its reserve; a storm is held to the ratio", () => {
    const budget = new RetryBudget({ ratio: 0.2, reserve: 10 });
    for (let i = 0; i < 1000; i++) budget.deposit();
    expect(budget.available).toBe(10);
    let retries = 0;
    for (let i = 0; i < 1000; i++) {
      budget.deposit();
      if (budget.tryWithdraw()) retries++;
    }
    // 10 + 0.2 × 1000, less the first deposit of the storm, which the full reserve could not hold.
    expect(retries).toBe(209);
  });
});
