/**
 * The benchmark's arithmetic, on inputs whose answers are known by hand: every figure in
 * bench/RESULTS.md goes through these helpers, so they are specified here like library code.
 */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { Reach } from "./reach.ts";
import { readFileSync } from "node:fs";
import { saturationSvg } from "../bench/lib/svg.ts";
import { keepMarkedBlocks, marked, markedBlocks, replaceBlock } from "../bench/lib/marked.ts";
import { OrderTracker } from "../bench/lib/order.ts";
import { LEVELS, levels } from "../bench/sections/scheduler.ts";
import {
  histogram,
  idealStart,
  latenessPerGrant,
  latenessVsIdeal,
  maxInWindow,
  maxWeightInWindow,
  median,
  percentile,
  steadyUtilisation,
  trailingCounts,
  windowViolations,
} from "../bench/lib/stats.ts";

/** Brute force: the most events in any half-open window [t, t + w), trying every event as t. */
function bruteMax(times: number[], weights: number[], w: number): number {
  let best = 0;
  for (const start of times) {
    let sum = 0;
    times.forEach((t, i) => {
      if (t >= start && t < start + w) sum += weights[i]!;
    });
    best = Math.max(best, sum);
  }
  return best;
}

describe("median and percentile", () => {
  test("median is the middle value, or the mean of the two middle values", () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([7])).toBe(7);
  });

  test("median does not reorder the caller's array", () => {
    const values = [3, 1, 2];
    median(values);
    expect(values).toEqual([3, 1, 2]);
  });

  test("percentile interpolates between closest ranks (NumPy's default)", () => {
    const v = [10, 20, 30, 40, 50];
    expect(percentile(v, 0)).toBe(10);
    expect(percentile(v, 100)).toBe(50);
    expect(percentile(v, 50)).toBe(30);
    expect(percentile(v, 25)).toBe(20);
    expect(percentile(v, 90)).toBeCloseTo(46, 10); // rank 3.6: 40 + 0.6 × 10
    expect(percentile([1, 2, 3, 4], 50)).toBe(2.5);
    // 1..100: rank 98.01 → 99.01
    expect(percentile(Array.from({ length: 100 }, (_, i) => i + 1), 99)).toBeCloseTo(99.01, 10);
  });

  test("percentile sorts numerically, not as strings", () => {
    expect(percentile([100, 9, 20], 0)).toBe(9);
    expect(median([100, 9, 20])).toBe(20);
  });

  test("empty input and out-of-range p are errors, not NaN", () => {
    expect(() => median([])).toThrow(RangeError);
    expect(() => percentile([1], 101)).toThrow(RangeError);
    expect(() => percentile([1], Number.NaN)).toThrow(RangeError);
  });
});

describe("maxInWindow and windowViolations", () => {
  test("windows are half-open: a grant exactly one window later is in the next window", () => {
    expect(maxInWindow([0, 1000], 1000).max).toBe(1);
    expect(maxInWindow([0, 999.999], 1000).max).toBe(2);
    expect(windowViolations([0, 1000], 1000, 1)).toBe(0);
    expect(windowViolations([0, 999.999], 1000, 1)).toBe(1);
  });

  test("ten per second done right has no violation; one early grant is one violation", () => {
    const right = [...Array.from({ length: 10 }, (_, i) => i), ...Array.from({ length: 10 }, (_, i) => 1000 + i)];
    expect(maxInWindow(right, 1000).max).toBe(10);
    expect(windowViolations(right, 1000, 10)).toBe(0);
    const early = [...right.slice(0, 10), 999.5, ...right.slice(11)];
    expect(maxInWindow(early, 1000).max).toBe(11);
    expect(windowViolations(early, 1000, 10)).toBe(1);
  });

  test("a fixed-window burst at the boundary: 4 in 1 ms with a limit of 2 per 1000 ms", () => {
    const times = [999, 999, 1000, 1000];
    expect(maxInWindow(times, 1000)).toEqual({ max: 4, at: 999 });
    expect(windowViolations(times, 1000, 2)).toBe(2);
  });

  test("order of the input does not matter, and ties count", () => {
    expect(maxInWindow([5, 1, 3, 3, 100], 3).max).toBe(3); // [3, 6): 3, 3, 5
    expect(maxInWindow([], 10).max).toBe(0);
  });

  test("weights: the largest sum of permits inside any window", () => {
    expect(maxWeightInWindow([0, 50, 100, 150], [6, 4, 1, 5], 100).max).toBe(10); // [0,100): 6+4
    expect(maxWeightInWindow([0, 50, 100, 150], [6, 4, 1, 5], 101).max).toBe(11);
    expect(() => maxWeightInWindow([0], [1, 2], 10)).toThrow(RangeError);
  });

  test("agrees with a brute-force count on random inputs", () => {
    const reach = new Reach("max in window");
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 1, max: 5 })), { maxLength: 60 }),
        fc.integer({ min: 1, max: 1500 }),
        (events, w) => {
          reach.hit(events.length > 1 ? "several events" : "at most one event");
          const times = events.map(([t]) => t / 2);
          const weights = events.map(([, k]) => k);
          expect(maxWeightInWindow(times, weights, w).max).toBe(bruteMax(times, weights, w));
          expect(maxInWindow(times, w).max).toBe(bruteMax(times, times.map(() => 1), w));
        },
      ),
    );
    reach.atLeast({ "several events": 50 });
  });

  test("violations are zero exactly when the max fits the limit", () => {
    const reach = new Reach("violations");
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 3000 }), { maxLength: 50 }), fc.integer({ min: 1, max: 6 }), (times, limit) => {
        const fits = maxInWindow(times, 1000).max <= limit;
        reach.hit(fits ? "fits the limit" : "over the limit");
        expect(windowViolations(times, 1000, limit) === 0).toBe(fits);
      }),
      { numRuns: 300 },
    );
    reach.atLeast({ "fits the limit": 40, "over the limit": 40 });
  });
});

describe("ideal schedule and lateness", () => {
  test("bursts: limit at once per window; even: one every window/limit", () => {
    expect([0, 99, 100, 250].map((k) => idealStart("window", k, 10, 100, 1000))).toEqual([10, 10, 1010, 2010]);
    expect([0, 1, 150].map((k) => idealStart("even", k, 0, 100, 1000))).toEqual([0, 10, 1500]);
  });

  test("lateness vs the ideal schedule accumulates a per-window delay", () => {
    // limit 2 per 100 ms; each window 1 ms later than the previous one
    const starts = [0, 0, 101, 101, 202, 202];
    expect(latenessVsIdeal(starts, "window", 0, 2, 100)).toEqual([0, 0, 1, 1, 2, 2]);
    // …while the per-grant figure sees each window only 1 ms late relative to what it was allowed
    expect(latenessPerGrant(starts, "window", 0, 2, 100)).toEqual([0, 0, 1, 1, 1, 1]);
  });

  test("per-grant lateness of an even schedule compares with the previous grant", () => {
    expect(latenessPerGrant([0, 10.5, 20.5, 30], "even", 0, 100, 1000)).toEqual([0, 0.5, 0, -0.5]);
  });
});

describe("steadyUtilisation", () => {
  test("a perfect strict-window schedule and a perfect even schedule are both 100%", () => {
    const burst = Array.from({ length: 1500 }, (_, k) => Math.floor(k / 100) * 1000);
    expect(steadyUtilisation(burst, 100, 1000)).toBeCloseTo(1, 12);
    const even = Array.from({ length: 1500 }, (_, k) => k * 10);
    expect(steadyUtilisation(even, 100, 1000)).toBeCloseTo(1, 12);
  });

  test("a limiter that loses 10 ms per window is at 1000/1010; one that lets 110 through is above 100%", () => {
    const late = Array.from({ length: 1500 }, (_, k) => Math.floor(k / 100) * 1010);
    expect(steadyUtilisation(late, 100, 1000)).toBeCloseTo(1000 / 1010, 12);
    const over = Array.from({ length: 1100 }, (_, k) => Math.floor(k / 110) * 1000);
    expect(steadyUtilisation(over, 100, 1000)).toBeGreaterThan(1.05);
  });

  test("does not depend on where the first window falls", () => {
    const even = Array.from({ length: 500 }, (_, k) => 12_345.6 + k * 10);
    expect(steadyUtilisation(even, 100, 1000)).toBeCloseTo(1, 12);
    expect(() => steadyUtilisation([1, 2], 100, 1000)).toThrow(RangeError);
  });
});

describe("histogram and trailing counts", () => {
  test("histogram counts per bin from t0 and ignores what falls outside", () => {
    expect(histogram([-1, 0, 99.9, 100, 250, 1000], 0, 100, 3)).toEqual([2, 1, 1]);
  });

  test("trailing counts are what a rolling-window server sees at each sample", () => {
    // window 100: at t, grants in (t − 100, t]
    expect(trailingCounts([0, 50, 100, 150], [0, 99, 100, 150, 250], 100)).toEqual([1, 2, 2, 2, 0]);
  });
});

test("the chart is well-formed SVG with one panel per library and the limit line", () => {
  const svg = saturationSvg(
    [
      { label: "A <strict>", t0: 0, starts: [0, 1, 1000, 1001] },
      { label: "B", t0: 0, starts: [0, 500, 1000] },
    ],
    { limit: 2, interval: 1000, title: "test" },
  );
  expect(svg.startsWith("<svg")).toBe(true);
  expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
  expect(svg).toContain("A &lt;strict&gt;");
  expect(svg.match(/<polyline /g)).toHaveLength(2);
  expect(svg.match(/stroke-dasharray="5,3"/g)!.length).toBe(3); // legend + one per panel
  expect(svg).not.toContain("NaN");
});

describe("marked blocks in RESULTS.md", () => {
  const redis = "<!-- redis:start -->\n## sluice/redis\n\n| a |\n<!-- redis:end -->";
  const other = "<!-- http-client:start -->\nfigures\n<!-- http-client:end -->";

  test("markedBlocks finds each block with its markers, in order; an unterminated start is not a block", () => {
    const text = `# head\n\n${redis}\n\ntext\n\n<!-- lost:start -->\nno end\n\n${other}\n`;
    expect(markedBlocks(text)).toEqual([
      { name: "redis", text: redis },
      { name: "http-client", text: other },
    ]);
  });

  test("a block nested in another belongs to it", () => {
    const text = "<!-- a:start -->\nx <!-- b:start -->y<!-- b:end -->\n<!-- a:end -->";
    expect(markedBlocks(text).map((b) => b.name)).toEqual(["a"]);
  });

  test("a full rewrite keeps every block another script wrote, verbatim, and drops none of its own", () => {
    const previous = `# old\n\nold figures\n\n${redis}\n\n${other}\n\n${marked("scheduler", "old scheduler")}\n`;
    const next = `# new\n\nnew figures\n\n${marked("scheduler", "new scheduler")}\n`;
    const out = keepMarkedBlocks(next, previous);
    expect(out).toContain(redis);
    expect(out).toContain(other);
    expect(out).toContain("new scheduler");
    expect(out).not.toContain("old scheduler");
    expect(out).not.toContain("old figures");
    expect(markedBlocks(out).map((b) => b.name)).toEqual(["scheduler", "redis", "http-client"]);
  });

  test("a rewrite of the committed bench/RESULTS.md keeps all of its marked blocks", () => {
    const committed = readFileSync(new URL("../bench/RESULTS.md", import.meta.url), "utf8");
    const blocks = markedBlocks(committed);
    expect(blocks.map((b) => b.name)).toContain("redis");
    const out = keepMarkedBlocks("# sluice benchmarks\n\nfresh run\n", committed);
    for (const block of blocks) expect(out).toContain(block.text);
  });

  test("replaceBlock swaps one block in place and leaves the rest byte for byte; appends a missing one", () => {
    const previous = `# head\n\n${redis}\n\nmiddle\n\n${marked("scheduler", "old")}\n\ntail\n`;
    const out = replaceBlock(previous, markedBlocks(marked("scheduler", "new"))[0]!);
    expect(out).toBe(previous.replace(marked("scheduler", "old"), marked("scheduler", "new")));
    const appended = replaceBlock("# head\n", { name: "x", text: marked("x", "body") });
    expect(appended).toBe(`# head\n\n${marked("x", "body")}\n`);
  });
});

describe("OrderTracker: in flight, priority and FIFO inversions", () => {
  test("counts the most running at once", () => {
    const t = new OrderTracker();
    const [a, b, c] = [t.submit(), t.submit(), t.submit()];
    t.start(a!);
    t.start(b!);
    t.finish();
    t.start(c!);
    t.finish();
    t.finish();
    expect(t.maxInFlight).toBe(2);
    expect(t.inFlight).toBe(0);
    expect(t.fifoInversions).toBe(0);
  });

  test("a start while a more important task submitted earlier waits is one inversion, however many it passes", () => {
    const t = new OrderTracker(3);
    const low = t.submit(0);
    const high1 = t.submit(2);
    const high2 = t.submit(1);
    t.start(low); // passes two more important ones: one inversion
    t.start(high1);
    t.start(high2);
    expect(t.priorityInversions).toBe(1);
    expect(t.fifoInversions).toBe(0);
  });

  test("a task submitted after a start is never an inversion against it", () => {
    const t = new OrderTracker(2);
    const low = t.submit(0);
    t.start(low);
    const high = t.submit(1);
    t.start(high);
    expect(t.priorityInversions).toBe(0);
  });

  test("FIFO within a level: passing an earlier task of the same level counts once per start", () => {
    const t = new OrderTracker(2);
    const [a, b, c] = [t.submit(1), t.submit(1), t.submit(1)];
    t.start(c!); // passes a and b
    t.start(a!);
    t.start(b!);
    expect(t.fifoInversions).toBe(1);
    expect(t.priorityInversions).toBe(0);
  });

  test("rejects a level out of range and a task started twice", () => {
    const t = new OrderTracker(2);
    expect(() => t.submit(2)).toThrow(RangeError);
    const a = t.submit(0);
    t.start(a);
    expect(() => t.start(a)).toThrow(RangeError);
    expect(() => new OrderTracker(0)).toThrow(RangeError);
  });

  test("agrees with a brute-force count on random submissions and starts", () => {
    const reach = new Reach("order tracker");
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.record({ submit: fc.integer({ min: 0, max: 2 }) }), fc.record({ start: fc.nat() })), { minLength: 10, maxLength: 60 }),
        (steps) => {
          const t = new OrderTracker(3);
          const levels: number[] = [];
          const started: boolean[] = [];
          let priority = 0;
          let fifo = 0;
          for (const step of steps) {
            if ("submit" in step) {
              levels.push(step.submit);
              started.push(false);
              t.submit(step.submit);
              continue;
            }
            const waiting = levels.flatMap((_, id) => (started[id] ? [] : [id]));
            if (waiting.length === 0) continue;
            const id = waiting[step.start % waiting.length]!;
            const passedHigher = waiting.some((o) => levels[o]! > levels[id]!);
            const passedSame = waiting.some((o) => o < id && levels[o] === levels[id]);
            reach.hit(passedHigher ? "priority inversion" : "in priority order");
            if (passedSame) reach.hit("FIFO inversion");
            priority += passedHigher ? 1 : 0;
            fifo += passedSame ? 1 : 0;
            started[id] = true;
            t.start(id);
          }
          expect(t.priorityInversions).toBe(priority);
          expect(t.fifoInversions).toBe(fifo);
        },
      ),
      { numRuns: 200 },
    );
    reach.atLeast({ "priority inversion": 300, "in priority order": 750, "FIFO inversion": 200 }); // measured ≈ 430, 925, 290
  });
});

test("the scheduler's priority levels are the same sequence every run, with every level used", () => {
  const a = levels(1000);
  expect(levels(1000)).toEqual(a);
  for (let level = 0; level < LEVELS; level++) expect(a.filter((x) => x === level).length).toBeGreaterThan(150);
});
