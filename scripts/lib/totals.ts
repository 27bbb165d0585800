/**
 * The rules that turn what each step left behind into the totals of `npm test`, as pure functions
 * (tested in `test/package/totals.test.ts`). Nothing can be silently missing: a step that should have
 * reported counts and did not is a failure, never "1 passed"; a skipped test is announced loudly, and
 * fails the run where skips are refused (CI).
 */
import type { StepResult } from "./results.ts";
import type { Step } from "./steps.ts";

/**
 * The result of one step, from its exit status and the counts it reported (`undefined` when it left
 * no result file, or its JUnit report is missing).
 *
 * @example
 * ```ts
 * settleStep({ id: "node24", kind: "tests", script: "test:node", label: "" }, 0, undefined).failed; // 1
 * ```
 */
export function settleStep(step: Step, status: number, reported: StepResult | undefined): StepResult {
  const exited = `npm run ${step.script} exited with ${status}`;
  if (reported === undefined) {
    if (step.kind === "command") {
      // tsc, tsup: one check, and their exit code is all they report.
      return status === 0
        ? { passed: 1, failed: 0, skipped: 0, failures: [] }
        : { passed: 0, failed: 1, skipped: 0, failures: [exited] };
    }
    const where = step.junit ?? `.tmp/results/${step.id}.json`;
    const failures = [`${step.id}: no results (${where} is missing)`];
    if (status !== 0) failures.push(exited);
    return { passed: 0, failed: 1, skipped: 0, failures };
  }
  if (status !== 0 && reported.failed === 0) {
    return { ...reported, failed: 1, failures: [...reported.failures, exited] };
  }
  if (reported.passed + reported.failed === 0) {
    return { ...reported, failed: 1, failures: [...reported.failures, `${step.id}: no ${step.kind === "tests" ? "test" : "check"} ran`] };
  }
  return reported;
}

export interface Totals {
  /** Test cases (the `tests` steps), including the failures added for skips when skips are refused. */
  readonly tests: StepResult;
  /** The type check, the build and the named checks. */
  readonly checks: StepResult;
  /** Every failure, tests and checks, `[step] reason`. */
  readonly failures: readonly string[];
  /** The plain closing line: tests passed, every failure (tests and checks), tests skipped. */
  readonly line: string;
}

/**
 * Adds up the steps' results (`undefined`: the step left nothing, one failure). With `refuseSkips`,
 * each step that skipped tests gets one failure naming how many: CI tests everything or fails.
 *
 * @example
 * ```ts
 * tally([[step, { passed: 3, failed: 0, skipped: 1, failures: [] }]], { refuseSkips: true }).line;
 * // "3 passed, 1 failed, 1 skipped"
 * ```
 */
export function tally(
  results: ReadonlyArray<readonly [Step, StepResult | undefined]>,
  { refuseSkips = false }: { refuseSkips?: boolean } = {},
): Totals {
  const sum = { tests: { passed: 0, failed: 0, skipped: 0 }, checks: { passed: 0, failed: 0, skipped: 0 } };
  const failures: string[] = [];
  const testFailures: string[] = [];
  const checkFailures: string[] = [];
  for (const [step, given] of results) {
    let result = given ?? { passed: 0, failed: 1, skipped: 0, failures: [`${step.id}: no result (did the step run?)`] };
    if (refuseSkips && result.skipped > 0) {
      result = {
        ...result,
        failed: result.failed + 1,
        failures: [...result.failures, `${result.skipped} test(s) skipped: this run refuses skips (every test must run)`],
      };
    }
    const bucket = step.kind === "tests" ? sum.tests : sum.checks;
    bucket.passed += result.passed;
    bucket.failed += result.failed;
    bucket.skipped += result.skipped;
    const named = result.failures.map((f) => `[${step.id}] ${f}`);
    failures.push(...named);
    (step.kind === "tests" ? testFailures : checkFailures).push(...named);
  }
  const failed = sum.tests.failed + sum.checks.failed;
  const skipped = sum.tests.skipped + sum.checks.skipped;
  return {
    tests: { ...sum.tests, failures: testFailures },
    checks: { ...sum.checks, failures: checkFailures },
    failures,
    line: `${sum.tests.passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ""}`,
  };
}

