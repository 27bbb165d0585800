/**
 * undici's raw response headers are read exactly as `Headers.get` reads the same fields — and so the
 * interceptor takes exactly the throttled fetch's decision for any response (property tests).
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { pauseFor, readServerSignals } from "../../src/http/throttle.ts";
import { headersView, mayCarrySignals } from "../../src/integrations/undici/headers.ts";
import { Reach } from "../reach.ts";

const NOW = Date.UTC(2025, 0, 15, 12, 0, 0);
const latin1 = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));

describe("headersView", () => {
  test("reads undici's header object: lower-case names, repeated fields as arrays", () => {
    const view = headersView({ "retry-after": "2", "x-ratelimit-remaining": ["0", "3"] });
    expect(view.get("Retry-After")).toBe("2");
    expect(view.get("x-ratelimit-remaining")).toBe("0, 3");
    expect(view.get("date")).toBeNull();
  });

  test("reads the raw form: a flat name/value array of strings or latin-1 bytes, names in any case", () => {
    const view = headersView([latin1("Retry-After"), latin1("5"), "X-RateLimit-Reset", "30", "x-ratelimit-reset", "40"]);
    expect(view.get("retry-after")).toBe("5");
    expect(view.get("X-RATELIMIT-RESET")).toBe("30, 40");
  });

  test("anything else reads as no headers", () => {
    for (const value of [undefined, null, "retry-after: 2", 42]) expect(headersView(value).get("retry-after")).toBeNull();
  });

  const name = fc.constantFrom("retry-after", "Retry-After", "retry-after-ms", "date", "x-ratelimit-remaining",
    "X-RateLimit-Reset", "ratelimit", "ratelimit-policy", "RateLimit-Remaining", "ratelimit-reset", "content-type",
    "X-Rate-Limit-Remaining", "x-rate-limit-reset", "x-ratelimit-reset-after", "x-request-id", "ratelimit-limit");
  // Field values as they arrive on the wire (no surrounding whitespace, which the parsers trim anyway).
  const value = fc.oneof(
    fc.stringMatching(/^[0-9]{1,6}(\.[0-9]{1,3})?$/),
    fc.constantFrom("0", "soon", "-1", "1e3", new Date(NOW + 5000).toUTCString(), new Date(NOW).toUTCString(),
      '"default";r=0;t=12', '"default";q=100;w=60', "limit=100, remaining=0, reset=30"),
  );
  const fields = fc.array(fc.tuple(name, value), { maxLength: 6 });

  test("property: for any fields, get(name) equals Headers.get(name), in the object and the raw forms", () => {
    const reach = new Reach("headersView");
    // Repeats of the asked field are generated on purpose (up to two more, in the case as asked):
    // drawn by chance alone they came ~12 times in 1000 runs, at the edge of the reach minimum.
    fc.assert(fc.property(fields, name, fc.array(value, { maxLength: 2 }), (drawn, asked, repeats) => {
      const list = [...drawn, ...repeats.map((v): [string, string] => [asked, v])];
      reach.run();
      const expected = new Headers(list).get(asked);
      reach.hit("the asked field present", expected !== null);
      reach.hit("a repeated field joined", expected?.includes(", ") === true && list.filter(([n]) => n.toLowerCase() === asked.toLowerCase()).length > 1);
      const asObject: Record<string, string | string[]> = {};
      for (const [n, v] of list) {
        const k = n.toLowerCase();
        const before = asObject[k];
        asObject[k] = before === undefined ? v : [...(Array.isArray(before) ? before : [before]), v];
      }
      expect(headersView(asObject).get(asked)).toBe(expected);
      expect(headersView(list.flatMap(([n, v]) => [latin1(n), latin1(v)])).get(asked)).toBe(expected);
    }), { numRuns: 1000 });
    reach.atLeast({ "the asked field present": 100, "a repeated field joined": 12 });
  });

  test("property: for any response, the interceptor's pause decision is the throttled fetch's", () => {
    const policy = { maxRetryAfter: 60_000, backoff: { base: 1000, cap: 30_000 } };
    const reach = new Reach("pause decision");
    // A reported quota comes as a family of fields; draw whole families too, or a quota pause is rare.
    const quota = fc.constantFrom<[string, string][]>(
      [["x-ratelimit-remaining", "0"], ["x-ratelimit-reset", "30"]],
      [["ratelimit", '"default";r=0;t=12'], ["ratelimit-policy", '"default";q=100;w=60']],
      [["RateLimit-Remaining", "0"], ["ratelimit-reset", "7"]],
    );
    fc.assert(fc.property(
      fc.constantFrom(200, 403, 429, 500, 503),
      fc.oneof(
        fc.tuple(fields, fc.option(quota, { nil: [] })).map(([list, q]) => [...list, ...q]),
        // Most real answers: no signal field at all (the interceptor's quick check clears them).
        fc.array(fc.tuple(fc.constantFrom("content-type", "Date", "x-request-id", "etag", "Rate"), value), { maxLength: 4 }),
      ),
      fc.integer({ min: 1, max: 6 }),
      fc.boolean(),
      (status, list, attempt, rateLimitHeaders) => {
        const options = { now: NOW, lenient: true, rateLimitHeaders };
        const viaFetch = pauseFor(readServerSignals(new Response(null, { status, headers: list }), options), attempt, policy);
        // As the interceptor decides: a response the quick check clears (no 429, no signal field)
        // is not parsed at all.
        const raw = list.flat();
        const parsed = status === 429 || mayCarrySignals(raw);
        const viaUndici = parsed ? pauseFor(readServerSignals({ status, headers: headersView(raw) }, options), attempt, policy) : undefined;
        expect(viaUndici).toEqual(viaFetch);
        reach.hit("cleared by the quick check", !parsed);
        reach.hit("a pause", viaFetch !== undefined && viaFetch.ms > 0);
        reach.hit("a quota pause", viaFetch?.reason === "quota-exhausted");
      },
    ), { numRuns: 600 });
    reach.atLeast({ "a pause": 60, "a quota pause": 15, "cleared by the quick check": 100 });
  });
});

describe("mayCarrySignals: the quick check before any header is parsed", () => {
  // Every name the throttled fetch's parsers read, in the cases servers send them.
  const read = [
    "Retry-After", "retry-after-ms", "RateLimit", "RateLimit-Policy", "ratelimit-remaining", "RateLimit-Limit",
    "RateLimit-Reset", "X-RateLimit-Remaining", "x-ratelimit-limit", "X-RateLimit-Reset", "x-ratelimit-reset-after",
    "X-Rate-Limit-Remaining", "x-rate-limit-reset",
  ];
  const plain = ["content-type", "Content-Length", "date", "connection", "keep-alive", "x-request-id", "Retry", "rate", "etag", "server"];

  test.each(read)("%s may carry a signal, as an object key and in a raw array (string or bytes)", (name) => {
    expect(mayCarrySignals({ "content-type": "text/plain", [name]: "1" })).toBe(true);
    expect(mayCarrySignals(["Content-Type", "text/plain", name, "1"])).toBe(true);
    expect(mayCarrySignals([new TextEncoder().encode("date"), "x", new TextEncoder().encode(name), "1"])).toBe(true);
  });

  test("answers without any of them carry none (so no headers view is built)", () => {
    expect(mayCarrySignals(Object.fromEntries(plain.map((n) => [n, "1"])))).toBe(false);
    expect(mayCarrySignals(plain.flatMap((n) => [n, "1"]))).toBe(false);
    expect(mayCarrySignals({})).toBe(false);
    expect(mayCarrySignals(null)).toBe(false);
  });
});
