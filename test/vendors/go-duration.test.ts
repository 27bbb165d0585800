import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { parseGoDuration, parseGoDurationNs } from "../../src/vendors/index.ts";
import { Reach } from "../reach.ts";

describe("parseGoDuration", () => {
  test.each([
    // OpenAI's samples (rate-limits guide: 1s, 6m0s; community thread: 12ms, 9ms) and Go's own forms.
    ["6m0s", 360_000],
    ["1s", 1_000],
    ["1.2s", 1_200],
    ["850ms", 850],
    ["12ms", 12],
    ["9ms", 9],
    ["1h2m3.5s", 3_723_500],
    ["1h0m0s", 3_600_000],
    ["0s", 0],
    ["0", 0],
    ["1µs", 1], // rounded up to whole ms
    ["1us", 1],
    ["1\u03bcs", 1], // Greek mu, which Go also accepts
    ["999999ns", 1],
    ["1000000ns", 1],
    ["1000001ns", 2],
    ["1.5ms", 2],
    ["0.001s", 1],
    ["0.0000001s", 1], // 100 ns
    ["0.0000000001s", 0], // below a nanosecond: dropped, as Go does
    ["2562047h47m16.854775807s", 9_223_372_036_855], // Go's largest duration
    ["1m1m", 120_000], // Go sums repeated units
    // Go's time.ParseDuration lets either side of the dot be empty (not both): ".5s", "1.s".
    [".5s", 500],
    ["1.s", 1_000],
    ["1h.5m", 3_630_000],
  ])("%j → %j ms", (value, expected) => {
    expect(parseGoDuration(value)).toBe(expected);
  });

  test.each([
    [null], [undefined], [""], ["1"], ["-1s"], ["+1s"], [".s"], ["."], ["1.s.5"], ["1 s"], [" 1s"], ["1s "], ["1S"],
    ["1d"], ["1sec"], ["s"], ["1.2.3s"], ["1e3ms"], ["0x10s"], ["1s,1s"], ["١s"], [`${"1".repeat(70)}s`],
  ])("malformed %j → undefined", (value) => {
    expect(parseGoDuration(value)).toBeUndefined();
  });

  test("parseGoDurationNs keeps exact nanoseconds", () => {
    expect(parseGoDurationNs("1.5us")).toBe(1_500n);
    expect(parseGoDurationNs("0.1s")! + parseGoDurationNs("0.2s")!).toBe(300_000_000n);
    expect(parseGoDurationNs("1h2m3.000000004s")).toBe(3_723_000_000_004n);
  });
});

/** Go's `Duration.String()` for a non-negative duration, written from its documented output forms. */
function goString(ns: bigint, micro: string): string {
  if (ns === 0n) return "0s";
  if (ns < 1_000_000_000n) {
    if (ns < 1_000n) return `${ns}ns`;
    if (ns < 1_000_000n) return `${decimal(ns, 3)}${micro}`;
    return `${decimal(ns, 6)}ms`;
  }
  const h = ns / 3_600_000_000_000n;
  const m = (ns / 60_000_000_000n) % 60n;
  const s = decimal(ns % 60_000_000_000n, 9);
  return `${h > 0n ? `${h}h` : ""}${h > 0n || m > 0n ? `${m}m` : ""}${s}s`;
}

/** `value / 10^digits` written with the fraction's trailing zeros stripped. */
function decimal(value: bigint, digits: number): string {
  const scale = 10n ** BigInt(digits);
  const fraction = (value % scale).toString().padStart(digits, "0").replace(/0+$/, "");
  return `${value / scale}${fraction === "" ? "" : `.${fraction}`}`;
}

const MAX_GO_DURATION = 2n ** 63n - 1n;

describe("parseGoDuration properties", () => {
  test("reads back every duration Go writes, rounded up to whole ms", () => {
    const reach = new Reach("Go duration round trip");
    // Spread over magnitudes: ns up to hours and Go's maximum.
    const magnitude = fc.integer({ min: 0, max: 19 }).chain((digits) =>
      fc.bigInt({ min: 0n, max: digits === 19 ? MAX_GO_DURATION : 10n ** BigInt(digits) }));
    fc.assert(fc.property(magnitude, fc.constantFrom("µs", "\u03bcs"), (ns, micro) => {
      reach.run();
      const text = goString(ns, micro);
      reach.hit("below a second", ns > 0n && ns < 1_000_000_000n);
      reach.hit("with hours", ns >= 3_600_000_000_000n);
      reach.hit("with a fraction", text.includes("."));
      reach.hit("rounded up", ns % 1_000_000n !== 0n);
      expect(parseGoDurationNs(text)).toBe(ns);
      expect(parseGoDuration(text)).toBe(Number((ns + 999_999n) / 1_000_000n));
    }), { numRuns: 500 });
    reach.atLeast({ "below a second": 200, "with hours": 60, "with a fraction": 190, "rounded up": 400 });
  });

  test("hostile input never throws, and only the grammar is accepted", () => {
    const reach = new Reach("Go duration hostile input");
    // Go's grammar without the sign: a number with digits on at least one side of an optional dot.
    const GRAMMAR = /^(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h))+$|^0$/;
    const piece = fc.oneof(
      fc.constantFrom("0", "1", "12", "999", ".", "5", "ns", "us", "µs", "\u03bcs", "ms", "s", "m", "h", "-", "+", " ", "e", "d", "S"),
      fc.string({ maxLength: 3 }),
      fc.string({ unit: "binary", maxLength: 2 }),
    );
    const component = fc.tuple(fc.stringMatching(/^\d{1,4}$/), fc.option(fc.stringMatching(/^\d{1,10}$/)),
      fc.constantFrom("ns", "us", "µs", "\u03bcs", "ms", "s", "m", "h"))
      .map(([whole, fraction, unit]) => `${whole}${fraction === null ? "" : `.${fraction}`}${unit}`);
    const valid = fc.array(component, { minLength: 1, maxLength: 4 }).map((c) => c.join(""));
    // A valid duration with one random piece spliced in: mostly malformed, by a hair.
    const mutated = fc.tuple(valid, piece, fc.nat()).map(([text, extra, at]) => {
      const i = at % (text.length + 1);
      return text.slice(0, i) + extra + text.slice(i);
    });
    const hostile = fc.array(piece, { maxLength: 12 }).map((p) => p.join(""));
    fc.assert(fc.property(fc.oneof(valid, mutated, hostile), (text) => {
      reach.run();
      const parsed = parseGoDuration(text);
      if (reach.hit("accepted", parsed !== undefined)) {
        expect(Number.isSafeInteger(parsed) && parsed! >= 0).toBe(true);
        expect(text.length <= 64 && GRAMMAR.test(text)).toBe(true);
      } else {
        reach.hit("refused");
        expect(text.length > 64 || !GRAMMAR.test(text)).toBe(true);
      }
    }), { numRuns: 2_000 });
    reach.atLeast({ accepted: 750, refused: 900 });
  });
});
