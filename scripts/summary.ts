/**
 * Totals of the last `npm test` (or of steps run one by one), from `.tmp/results/`: a table per
 * step, the failures, the tests and the checks (type check, build, named checks) counted apart, and a
 * last line `N passed, N failed` (`, N skipped`) for CI — tests passed, and EVERY failure, checks
 * included (`scripts/lib/totals.ts` holds the rules).
 *
 *   node scripts/summary.ts          the table, the failures and the totals
 *   node scripts/summary.ts --line   only the closing line
 *
 * A step with no result counts as one failure: nothing is ever silently missing from the total.
 * Skipped tests are announced above the closing line; with `SLUICE_CI=1` (set by `.ci/run`) each
 * step that skipped any is a failure.
 */
import { readResult } from "./lib/results.ts";
import { type Step, STEPS } from "./lib/steps.ts";
import { tally, type Totals } from "./lib/totals.ts";

/** True when skipped tests fail the run: CI (`.ci/run` sets `SLUICE_CI=1`). */
export const refuseSkips: boolean = process.env.SLUICE_CI === "1";

export function summarize(
  steps: readonly Step[] = STEPS,
  seconds: Record<string, number> = {},
  totalSeconds?: number,
  lineOnly = false,
): Totals {
  const results = steps.map((step) => [step, readResult(step.id)] as const);
  const totals = tally(results, { refuseSkips });
  if (lineOnly) {
    console.log(totals.line);
    return totals;
  }
  console.log(`\n  ${"step".padEnd(10)} ${"pass".padStart(5)} ${"fail".padStart(6)} ${"skip".padStart(7)} ${"time".padStart(8)}`);
  for (const [step, given] of results) {
    const result = given ?? { passed: 0, failed: 1, skipped: 0 };
    const time = seconds[step.id] === undefined ? "" : `${seconds[step.id]!.toFixed(1)} s`;
    const mark = result.failed > 0 || (refuseSkips && result.skipped > 0) ? "✗" : result.skipped > 0 ? "!" : "✓";
    console.log(
      `${mark} ${step.id.padEnd(10)} ${String(result.passed).padStart(5)} ${String(result.failed).padStart(6)} ${String(result.skipped).padStart(7)} ${time.padStart(8)}  ${step.label}`,
    );
  }
  if (totals.failures.length > 0) {
    console.log("\nfailures:");
    for (const f of totals.failures) console.log(`  ${f}`);
  }
  console.log("");
  if (totalSeconds !== undefined) console.log(`npm test took ${totalSeconds.toFixed(1)} s`);
  const { tests, checks } = totals;
  console.log(`tests:  ${tests.passed} passed, ${tests.failed} failed, ${tests.skipped} skipped`);
  console.log(`checks: ${checks.passed} passed, ${checks.failed} failed (type check, build, package, size, JSR, docs, examples)`);
  if (tests.skipped > 0) {
    console.log(`*** ${tests.skipped} TEST(S) SKIPPED: this run did NOT test everything${refuseSkips ? " (refused: counted as failures)" : ""} ***`);
  }
  console.log(totals.line);
  return totals;
}

if (import.meta.main) {
  const totals = summarize(STEPS, {}, undefined, process.argv.includes("--line"));
  if (totals.tests.failed + totals.checks.failed > 0) process.exitCode = 1;
}
