/**
 * The rules behind `npm test`'s totals (`scripts/lib/totals.ts`): nothing a step failed to report can
 * pass for a success, checks are counted apart from tests, and a skipped test is never quiet.
 */
import { describe, expect, test } from "vitest";
import type { StepResult } from "../../scripts/lib/results.ts";
import type { Step } from "../../scripts/lib/steps.ts";
import { settleStep, tally } from "../../scripts/lib/totals.ts";

const vitest: Step = { id: "node24", kind: "tests", script: "test:node", label: "vitest", junit: ".tmp/results/node24.xml" };
const deno: Step = { id: "deno", kind: "tests", script: "test:deno", label: "Deno" };
const tsc: Step = { id: "typecheck", kind: "command", script: "typecheck", label: "tsc" };
const size: Step = { id: "size", kind: "checks", script: "check:size", label: "size" };
const counts = (passed: number, failed = 0, skipped = 0, failures: string[] = []): StepResult => ({ passed, failed, skipped, failures });

describe("settleStep", () => {
  test("a missing JUnit report is a failure, even when the runner exited 0", () => {
    expect(settleStep(vitest, 0, undefined)).toEqual(counts(0, 1, 0, ["node24: no results (.tmp/results/node24.xml is missing)"]));
  });

  test("a test or check step that wrote no result file failed, whatever its exit code", () => {
    expect(settleStep(deno, 0, undefined).failed).toBe(1);
    expect(settleStep(size, 0, undefined).failed).toBe(1);
    expect(settleStep(size, 2, undefined).failures).toContain("npm run check:size exited with 2");
  });

  test("a plain command (tsc, tsup) is one check decided by its exit code", () => {
    expect(settleStep(tsc, 0, undefined)).toEqual(counts(1));
    expect(settleStep(tsc, 2, undefined)).toEqual(counts(0, 1, 0, ["npm run typecheck exited with 2"]));
  });

  test("a non-zero exit with no failed case is a failure; so is a report with no case", () => {
    expect(settleStep(vitest, 1, counts(10))).toEqual(counts(10, 1, 0, ["npm run test:node exited with 1"]));
    expect(settleStep(vitest, 0, counts(0, 0, 3))).toEqual(counts(0, 1, 3, ["node24: no test ran"]));
  });

  test("a clean report is taken as it is", () => {
    expect(settleStep(vitest, 0, counts(10, 0, 2))).toEqual(counts(10, 0, 2));
  });
});

describe("tally", () => {
  test("checks are counted apart from tests, and the closing line counts every failure", () => {
    const totals = tally([[tsc, counts(0, 1, 0, ["tsc failed"])], [size, counts(4)], [vitest, counts(100)]]);
    expect(totals.tests).toEqual(counts(100));
    expect(totals.checks).toEqual(counts(4, 1, 0, ["[typecheck] tsc failed"]));
    expect(totals.line).toBe("100 passed, 1 failed");
  });

  test("a step that left no result at all counts as one failure", () => {
    const totals = tally([[vitest, counts(100)], [deno, undefined]]);
    expect(totals.line).toBe("100 passed, 1 failed");
    expect(totals.failures).toEqual(["[deno] deno: no result (did the step run?)"]);
  });

  test("skipped tests always show in the closing line", () => {
    expect(tally([[vitest, counts(100, 0, 36)]]).line).toBe("100 passed, 0 failed, 36 skipped");
  });

  test("where skips are refused (CI), each step that skipped tests fails", () => {
    const totals = tally([[vitest, counts(100, 0, 36)], [deno, counts(50)]], { refuseSkips: true });
    expect(totals.line).toBe("150 passed, 1 failed, 36 skipped");
    expect(totals.failures).toEqual(["[node24] 36 test(s) skipped: this run refuses skips (every test must run)"]);
  });
});
