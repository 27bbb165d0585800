/**
 * Randomised end-to-end checks of the advertised guarantees: random servers (statuses, delays,
 * network errors, silence), random methods and bodies, run through createThrottledFetch in virtual
 * time. Whatever happens: never more than `limit` retries, never earlier than the server asked, never
 * a streamed body twice, never a non-idempotent request after an ambiguous failure, the caller gets
 * the last answer, and no timer is left behind.
 */
import fc from "fast-check";
import { expect, test } from "vitest";
import { WindowLimiter } from "../../src/limiters/window.ts";
import { TimeoutError } from "../../src/http/errors.ts";
import { track } from "../helpers.ts";
import { setup } from "./support/setup.ts";
import { reply } from "./support/stub-fetch.ts";
import { Reach } from "../reach.ts";

type Answer =
  | { kind: "status"; status: number; delay?: { header: "retry-after" | "retry-after-ms"; value: number } }
  | { kind: "network" }
  | { kind: "hang" };

const answerArb: fc.Arbitrary<Answer> = fc.oneof(
  { weight: 6, arbitrary: fc.record({
    kind: fc.constant("status" as const),
    // Throttles (the only answers a non-idempotent request may be retried after) half the time.
    status: fc.oneof(fc.constantFrom(429, 503), fc.constantFrom(200, 404, 408, 500, 502, 504)),
    delay: fc.option(fc.record({
      header: fc.constantFrom("retry-after" as const, "retry-after-ms" as const),
      value: fc.integer({ min: 0, max: 90 }), // s or ms: some beyond maxRetryAfter (60 s)
    }), { nil: undefined }),
  }, { requiredKeys: ["kind", "status"] }) },
  { weight: 1, arbitrary: fc.constant({ kind: "network" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "hang" as const }) },
);

const MAX_RETRY_AFTER = 60_000;
const TIMEOUT = 1000;

function delayMs(answer: Answer): number | undefined {
  if (answer.kind !== "status" || answer.delay === undefined) return undefined;
  return answer.delay.header === "retry-after" ? answer.delay.value * 1000 : answer.delay.value;
}

test("throttled fetch keeps its guarantees against any server", async () => {
  const reach = new Reach("throttled fetch");
  await fc.assert(fc.asyncProperty(
    fc.oneof(fc.constantFrom("GET", "PUT", "DELETE"), fc.constantFrom("POST", "PATCH")), // non-idempotent half the time
    fc.constantFrom("none", "string", "stream"),
    fc.array(answerArb, { minLength: 1, maxLength: 5 }),
    fc.integer({ min: 0, max: 3 }),
    fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
    async (method, bodyKind, script, limit, random) => {
      reach.run();
      const { api, stub, clock } = setup({
        makeLimiter: (c) => new WindowLimiter({ limit: 5, interval: 1000, clock: c, countFrom: "completion" }),
        retry: { limit, budget: false },
        timeout: TIMEOUT,
        random: () => random,
      });
      const answers = [...script];
      stub.otherwise(() => {
        const answer = answers.shift() ?? { kind: "status", status: 200 };
        if (answer.kind === "network") throw new TypeError("fetch failed");
        if (answer.kind === "hang") return "hang";
        const headers: Record<string, string> = {};
        if (answer.delay !== undefined) headers[answer.delay.header] = String(answer.delay.value);
        return reply(answer.status, headers);
      });
      const hasBody = method !== "GET" && bodyKind !== "none";
      const body = !hasBody ? undefined : bodyKind === "string"
        ? "payload"
        : new ReadableStream({ start: (c) => { c.enqueue(new TextEncoder().encode("payload")); c.close(); } });
      const outcome = track(clock, api("https://prop.example/r", {
        method, ...(body !== undefined && { body, duplex: "half" }),
      } as RequestInit));
      await clock.runAll();

      expect(outcome.settled).toBe(true);
      expect(clock.pendingTimers).toBe(0);
      const calls = stub.calls;
      const sent = calls.length;
      expect(sent).toBeLessThanOrEqual(limit + 1);
      reach.hit("all retries spent", limit > 0 && sent === limit + 1);
      if (bodyKind === "stream" && hasBody) {
        expect(sent).toBe(1);
        // The stream stopped a retry the answer asked for.
        reach.hit("a stream not retried", limit > 0 && script[0]!.kind === "status" && [408, 429, 500, 502, 503, 504].includes(script[0]!.status));
      }
      const idempotent = ["GET", "PUT", "DELETE"].includes(method);
      const allAnswers = [...script, ...Array<Answer>(10).fill({ kind: "status", status: 200 })];

      for (let i = 0; i + 1 < sent; i++) {
        const answer = allAnswers[i]!;
        const given = delayMs(answer);
        // Answered at once (a hang answers at the timeout): the retry goes no earlier than asked.
        const answeredAt = calls[i]!.at + (answer.kind === "hang" ? TIMEOUT : 0);
        if (given !== undefined) {
          reach.hit("a retry after a server delay");
          expect(given).toBeLessThanOrEqual(MAX_RETRY_AFTER);
          // Compared as instants, not as a difference: with fractional virtual times (jittered
          // backoffs) `(a + 50) - a` may be 49.99999999999999 though the retry went exactly at a + 50.
          expect(calls[i + 1]!.at).toBeGreaterThanOrEqual(answeredAt + given);
        }
        if (reach.hit("a non-idempotent request retried", !idempotent)) {
          // Only a refusal before any work may be repeated.
          expect(answer.kind).toBe("status");
          const status = (answer as { status: number }).status;
          expect(status === 429 || (status === 503 && given !== undefined)).toBe(true);
        }
        if (reach.hit("a body replayed", hasBody)) expect(calls[i + 1]!.body).toBe("payload");
        reach.hit("a retry after a timeout", answer.kind === "hang");
      }

      // The caller gets the last attempt's answer, as fetch would have given it.
      const last = allAnswers[sent - 1]!;
      if (last.kind === "status") expect((outcome.value as Response).status).toBe(last.status);
      else if (last.kind === "network") expect(outcome.error).toBeInstanceOf(TypeError);
      else expect(outcome.error).toBeInstanceOf(TimeoutError);
      reach.hit(`ended with ${last.kind}`);
    },
  ), { numRuns: 1000 });
  reach.atLeast({
    "all retries spent": 60, "a stream not retried": 50, "a retry after a server delay": 80, "a non-idempotent request retried": 20,
    "a body replayed": 50, "a retry after a timeout": 12, "ended with status": 500, "ended with network": 40, "ended with hang": 40,
  });
});
