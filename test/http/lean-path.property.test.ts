/**
 * The lean path and the full path of the throttled fetch decide alike. The same random calls — URL
 * (valid, with credentials, relative, other schemes), method (any case), headers (none, valid,
 * invalid, a `Headers`), body, caller signal aborted at a random time, `timeout`, `totalTimeout`,
 * maxWait — against the same random server (statuses, Retry-After, retry-after-ms, quota headers,
 * network errors, silence) run twice in virtual time: through `createThrottledFetch` (lean
 * whenever it can be) and through the same options forced onto the full path (a `Request` view
 * built up front, linked signals and a copied `init` on every attempt). Everything observable must
 * agree: every call's outcome and the virtual time it settled, the class and message of every
 * error, and every attempt the server saw (time, method, URL, headers, body) — so pauses, backoffs
 * and timeouts fell at the same instants.
 */
import fc from "fast-check";
import { expect, test } from "vitest";
import { ManualClock } from "../../src/clock.ts";
import { WindowLimiter } from "../../src/limiters/window.ts";
import { resolveOptions, type ThrottledFetchOptions } from "../../src/http/options.ts";
import { createThrottledFetch, throttledFetchOf, type ThrottledFetch } from "../../src/http/throttled-fetch.ts";
import { track } from "../helpers.ts";
import { EPOCH0 } from "./support/setup.ts";
import { reply, StubFetch } from "./support/stub-fetch.ts";
import { Reach } from "../reach.ts";

type Answer =
  | { kind: "status"; status: number; headers: Record<string, string> }
  | { kind: "network" }
  | { kind: "hang" };

const answerArb: fc.Arbitrary<Answer> = fc.oneof(
  { weight: 6, arbitrary: fc.record({
    kind: fc.constant("status" as const),
    status: fc.constantFrom(200, 200, 201, 404, 408, 429, 500, 503),
    headers: fc.oneof(
      fc.constant({}),
      fc.integer({ min: 0, max: 90 }).map((s) => ({ "Retry-After": String(s) })),
      fc.integer({ min: 0, max: 3000 }).map((ms) => ({ "retry-after-ms": String(ms) })),
      fc.record({ remaining: fc.integer({ min: 0, max: 3 }), reset: fc.integer({ min: 1, max: 5 }) })
        .map(({ remaining, reset }) => ({ "X-RateLimit-Remaining": String(remaining), "X-RateLimit-Reset": String(reset) })),
      fc.constant({ RateLimit: '"default";r=0;t=2', "RateLimit-Policy": '"default";q=5;w=10' }),
    ),
  }) },
  { weight: 1, arbitrary: fc.constant({ kind: "network" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "hang" as const }) },
);

// Valid calls most of the time (they are what the lean path serves); invalid ones must fail alike.
const urlArb = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom("https://diff.example/r?q=secret", "https://diff.example/r", "http://diff.example:8080/a/b") },
  { weight: 1, arbitrary: fc.constantFrom("https://user:pw@diff.example/r", "/relative", "ftp://diff.example/f", "http://[bad/", "https://diff.example:99999/") },
);
const methodArb = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom("GET", "get", "POST", "post", "PUT", "PATCH", "patch", "DELETE") },
  { weight: 1, arbitrary: fc.constantFrom("QUERY", "CONNECT", "bad method") },
);
const headersArb = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom("none" as const, "valid" as const) },
  { weight: 1, arbitrary: fc.constantFrom("invalid" as const, "object" as const) },
);

interface CallSpec {
  url: string;
  method: string | undefined;
  headers: "none" | "valid" | "invalid" | "object";
  body: boolean;
  /** Send the body even with GET/HEAD (fetch's TypeError). */
  bodyOnGet: boolean;
  abortAt: number | undefined;
  startAt: number;
}

const callArb: fc.Arbitrary<CallSpec> = fc.record({
  url: urlArb,
  method: fc.option(methodArb, { nil: undefined }),
  headers: headersArb,
  body: fc.boolean(),
  bodyOnGet: fc.oneof({ weight: 1, arbitrary: fc.constant(true) }, { weight: 12, arbitrary: fc.constant(false) }),
  abortAt: fc.oneof({ weight: 7, arbitrary: fc.constant(undefined) }, { weight: 3, arbitrary: fc.integer({ min: 0, max: 5000 }) }),
  startAt: fc.integer({ min: 0, max: 3000 }),
});

interface Scenario {
  calls: CallSpec[];
  answers: Answer[];
  timeout: number;
  totalTimeout: number;
  maxWait: number | undefined;
  retry: number;
}

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  calls: fc.array(callArb, { minLength: 1, maxLength: 3 }),
  answers: fc.array(answerArb, { minLength: 1, maxLength: 8 }),
  timeout: fc.constantFrom(Infinity, Infinity, Infinity, 1000, 5000),
  totalTimeout: fc.constantFrom(Infinity, Infinity, Infinity, 4000, 30_000),
  maxWait: fc.option(fc.constantFrom(0, 500, 10_000), { nil: undefined, freq: 4 }),
  retry: fc.integer({ min: 0, max: 3 }),
});

/** A call fetch itself accepts (so the lean path may serve it without a `Request`). */
function valid(spec: CallSpec): boolean {
  return spec.url.startsWith("http") && !/[@[]|99999/.test(spec.url) && (spec.headers === "none" || spec.headers === "valid") &&
    (spec.method === undefined || !["QUERY", "CONNECT", "bad method"].includes(spec.method)) && !hasBody(spec) === !sendsBody(spec);
}
const isGet = (spec: CallSpec) => spec.method === undefined || spec.method.toUpperCase() === "GET";
const sendsBody = (spec: CallSpec) => spec.body && (!isGet(spec) || spec.bodyOnGet);
const hasBody = (spec: CallSpec) => sendsBody(spec) && !isGet(spec);

function init(spec: CallSpec, signal: AbortSignal | undefined): RequestInit | undefined {
  const headers: HeadersInit | undefined = spec.headers === "none" ? undefined
    : spec.headers === "valid" ? { authorization: "Bearer tok", "x-trace": "1" }
    : spec.headers === "invalid" ? { "x-bad": "a\nb" }
    : new Headers({ accept: "application/json" });
  if (spec.method === undefined && headers === undefined && !sendsBody(spec) && signal === undefined) return undefined;
  return {
    ...(spec.method !== undefined && { method: spec.method }),
    ...(headers !== undefined && { headers }),
    ...(sendsBody(spec) && { body: "payload" }),
    ...(signal !== undefined && { signal }),
  };
}

interface Observed {
  outcomes: unknown[];
  attempts: unknown[];
  pendingTimers: number;
}

async function run(s: Scenario, full: boolean, reach: Reach | undefined): Promise<Observed> {
  const clock = new ManualClock();
  const stub = new StubFetch(clock);
  const answers = [...s.answers];
  stub.otherwise(() => {
    const answer = answers.shift() ?? { kind: "status", status: 200, headers: {} };
    if (answer.kind === "network") throw new TypeError("fetch failed");
    if (answer.kind === "hang") return "hang";
    return reply(answer.status, answer.headers);
  });
  const options: ThrottledFetchOptions = {
    limiter: new WindowLimiter({ limit: 2, interval: 1000, clock, countFrom: "completion" }),
    clock,
    fetch: stub.fetch,
    wallClock: () => EPOCH0 + clock.now(),
    random: () => 0.5,
    retry: { limit: s.retry, budget: false, backoff: { base: 200, cap: 2000 } },
    timeout: s.timeout,
    totalTimeout: s.totalTimeout,
    ...(s.maxWait !== undefined && { maxWait: s.maxWait }),
  };
  const api: ThrottledFetch = full ? throttledFetchOf(resolveOptions(options), true) : createThrottledFetch(options);
  const tracked: ReturnType<typeof track<Response>>[] = [];
  s.calls.forEach((spec, i) => {
    const controller = spec.abortAt === undefined ? undefined : new AbortController();
    if (controller !== undefined) clock.setTimeout(() => controller.abort(new Error("caller abort")), spec.startAt + spec.abortAt!);
    clock.setTimeout(() => {
      tracked[i] = track(clock, api(spec.url, init(spec, controller?.signal)));
    }, spec.startAt);
  });
  await clock.runAll();
  const outcomes = await Promise.all(tracked.map(async (o) => {
    if (!o.settled) return { settled: false };
    if (o.error !== undefined) {
      const e = o.error as Error;
      reach?.hit(`error ${e.constructor.name}`);
      return { at: o.at, error: e.constructor.name, name: e.name, message: e.message };
    }
    const r = o.value!;
    reach?.hit(`status ${r.status >= 400 ? "4xx/5xx" : "2xx"}`);
    return { at: o.at, status: r.status, body: await r.text() };
  }));
  const attempts = stub.calls.map((c) => ({ at: c.at, method: c.method, url: c.url, headers: [...c.headers], body: c.body }));
  return { outcomes, attempts, pendingTimers: clock.pendingTimers };
}

test("the lean path and the full path agree on every outcome", async () => {
  const reach = new Reach("lean vs full");
  await fc.assert(fc.asyncProperty(scenarioArb, async (s) => {
    reach.run();
    const leanRun = await run(s, false, reach);
    const fullRun = await run(s, true, undefined);
    expect(leanRun).toEqual(fullRun);
    expect(leanRun.pendingTimers).toBe(0);
    const lean = s.calls.filter(valid);
    reach.hit("a call served without a Request view", lean.length > 0);
    reach.hit("a call without a signal or timer either", lean.some((c) => c.abortAt === undefined) && s.timeout === Infinity && s.totalTimeout === Infinity);
    reach.hit("retried", leanRun.attempts.length > s.calls.length);
    reach.hit("a wait spanning a pause", leanRun.attempts.some((a, i) => i > 0 && (a as { at: number }).at - (leanRun.attempts[i - 1] as { at: number }).at >= 1000));
  }), { numRuns: 500 });
  reach.atLeast({
    // Each ≥ 5 standard deviations below the count measured over repeated runs (see reach.ts).
    "a call served without a Request view": 420, "a call without a signal or timer either": 70, retried: 28, "a wait spanning a pause": 95,
    "error TypeError": 140, "error TimeoutError": 12, "error Error": 12, "status 2xx": 200, "status 4xx/5xx": 210,
  });
});
