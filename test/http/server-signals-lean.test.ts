/**
 * `readServerSignals` skips the header parsers when one pass over the names finds no Retry-After,
 * retry-after-ms, RateLimit or X-RateLimit field. That shortcut must never change a decision: the
 * same random responses read through a `Headers` (listable: the shortcut applies) and through a
 * view with only `get()` (not listable: every parser runs) give identical signals — and so do
 * undici's raw header forms through `headersView`.
 */
import fc from "fast-check";
import { expect, test } from "vitest";
import { readServerSignals } from "../../src/http/throttle.ts";
import { headersView } from "../../src/integrations/undici/headers.ts";
import { Reach } from "../reach.ts";

const NOW = Date.UTC(2025, 0, 15, 12, 0, 0);

const fieldArb = fc.oneof(
  // Fields the parsers read, in any case, with valid and invalid values.
  fc.tuple(
    fc.constantFrom("Retry-After", "retry-after-ms", "RateLimit", "RateLimit-Policy", "RateLimit-Remaining", "RateLimit-Reset",
      "RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "x-rate-limit-remaining", "x-rate-limit-reset", "X-RateLimit-Reset-After"),
    fc.oneof(fc.nat({ max: 120 }).map(String), fc.constantFrom('"default";r=0;t=3', "0", "abc", "1.5", "Wed, 15 Jan 2025 12:00:30 GMT")),
  ),
  // Fields they read only beside those, and fields nobody reads.
  fc.tuple(fc.constantFrom("Date", "Age", "Content-Type", "X-Request-Id", "Cache-Control"),
    fc.constantFrom("Wed, 15 Jan 2025 12:00:00 GMT", "5", "0", "text/plain", "no-store")),
);

test("the no-rate-headers shortcut decides exactly as the full parse", () => {
  const reach = new Reach("server signals shortcut");
  fc.assert(fc.property(
    fc.constantFrom(200, 204, 403, 429, 500, 503),
    fc.oneof(
      fc.array(fieldArb, { maxLength: 4 }),
      // A whole vendor family (remaining + reset), alone: the shortcut must still see it.
      fc.tuple(fc.constantFrom("x-ratelimit-", "X-Rate-Limit-"), fc.nat({ max: 3 }), fc.integer({ min: 1, max: 60 }))
        .map(([prefix, remaining, reset]): [string, string][] => [[`${prefix}remaining`, String(remaining)], [`${prefix}reset`, String(reset)]]),
    ),
    fc.nat({ max: 3 }),
    (status, fields, inFlight) => {
      reach.run();
      const headers = new Headers();
      for (const [name, value] of fields) headers.append(name, value);
      const options = { now: NOW, lenient: true, rateLimitHeaders: true, inFlight };
      const listed = readServerSignals({ status, headers }, options);
      const full = readServerSignals({ status, headers: { get: (name: string) => headers.get(name) } }, options);
      expect(listed).toEqual(full);
      const raw = fields.flatMap(([name, value]) => [name, value]);
      expect(readServerSignals({ status, headers: headersView(raw) }, options)).toEqual(full);
      const relevant = fields.some(([name]) => /rate|retry-after/i.test(name));
      reach.hit("no rate header (shortcut)", !relevant);
      reach.hit("a signal found", full.delay !== undefined || full.exhausted !== undefined);
      reach.hit("a 429 without headers", !relevant && status === 429);
    },
  ), { numRuns: 2000 });
  // Each ≥ 5 standard deviations below the count measured over repeated runs (see reach.ts).
  reach.atLeast({ "no rate header (shortcut)": 300, "a signal found": 580, "a 429 without headers": 20 });
});
