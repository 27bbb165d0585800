/**
 * Totals of the last `npm test` (or of steps run one by one), from `.tmp/results/`: a table per
 * step, the failures, and a last line `N passed, N failed` (`, N skipped`) for CI.
 *
 *   node scripts/summary.ts          the table, the failures and the totals line
 *   node scripts/summary.ts --line   only the totals line
 *
 * A step with no result counts as one failure: nothing is ever silently missing from the total.
 */
import { readResult, type StepResult } from "./lib/results.ts";
import { type Step, STEPS } from "./lib/steps.ts";

export function summarize(
  steps: readonly Step[] = STEPS,
  seconds: Record<string, number> = {},
  totalSeconds?: number,
  lineOnly = false,
): StepResult {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  const failures: string[] = [];
  const rows: string[] = [];
  for (const step of steps) {
    const result = readResult(step.id) ?? { passed: 0, failed: 1, skipped: 0, failures: [`${step.id}: no result (did the step run?)`] };
    passed += result.passed;
    failed += result.failed;
    skipped += result.skipped;
    failures.push(...result.failures.map((f) => `[${step.id}] ${f}`));
    const time = seconds[step.id] === undefined ? "" : `${seconds[step.id]!.toFixed(1)} s`;
    rows.push(
      `${result.failed > 0 ? "✗" : "✓"} ${step.id.padEnd(10)} ${String(result.passed).padStart(5)} ${String(result.failed).padStart(6)} ${String(result.skipped).padStart(7)} ${time.padStart(8)}  ${step.label}`,
    );
  }
  if (lineOnly) {
    console.log(`${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ""}`);
    return { passed, failed, skipped, failures };
  }
  console.log(`\n  ${"step".padEnd(10)} ${"pass".padStart(5)} ${"fail".padStart(6)} ${"skip".padStart(7)} ${"time".padStart(8)}`);
  for (const row of rows) console.log(row);
  if (failures.length > 0) {
    console.log("\nfailures:");
    for (const f of failures) console.log(`  ${f}`);
  }
  console.log("");
  if (totalSeconds !== undefined) console.log(`npm test took ${totalSeconds.toFixed(1)} s`);
  console.log(`${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ""}`);
  return { passed, failed, skipped, failures };
}

if (import.meta.main) {
  if (summarize(STEPS, {}, undefined, process.argv.includes("--line")).failed > 0) process.exitCode = 1;
}
