/**
 * `npm test`: every step of `scripts/lib/steps.ts` in order — type check, build, vitest on Node 24,
 * the behavioural suite on Node 20, Deno, Bun and Chromium, the package, size and JSR checks, the
 * runtime examples — then the totals. A failing step does not stop the others (CI reports every
 * failure at once); the exit code is non-zero when anything failed. A test or check step that leaves
 * no results (no JUnit report, no `.tmp/results/<id>.json`) failed, whatever its exit code.
 *
 *   npm test                    everything
 *   npm test -- deno bun        only these steps (by id)
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { cases, fullName } from "../test/behaviour/index.ts";
import { exec } from "./lib/exec.ts";
import { RESULTS, ROOT } from "./lib/paths.ts";
import { clearResult, junitCaseNames, parseJunit, readResult, type StepResult, writeResult } from "./lib/results.ts";
import { STEPS, type Step } from "./lib/steps.ts";
import { settleStep } from "./lib/totals.ts";
import { summarize } from "./summary.ts";

const npm = process.platform === "win32" ? "npm.cmd" : "npm";

/**
 * Counts for a step whose runner writes JUnit (vitest), checked to include the whole behavioural
 * suite; `undefined` when the report is missing (then the step failed, see `settleStep`).
 */
function fromJunit(step: Step): StepResult | undefined {
  let xml: string;
  try {
    xml = readFileSync(join(ROOT, step.junit!), "utf8");
  } catch {
    return undefined;
  }
  const result = parseJunit(xml);
  const names = new Set(junitCaseNames(xml));
  const missing = cases().map(fullName).filter((name) => !names.has(name));
  const failures = [...result.failures];
  if (missing.length > 0) failures.push(`${missing.length} behavioural cases missing from the report, e.g. ${missing[0]}`);
  return { ...result, failed: result.failed + (missing.length > 0 ? 1 : 0), failures };
}

async function runStep(step: Step): Promise<number> {
  clearResult(step.id);
  if (step.junit !== undefined) rmSync(join(ROOT, step.junit), { force: true });
  console.log(`\n━━ ${step.id}: ${step.label} ━━ (npm run ${step.script})`);
  const start = performance.now();
  let status: number;
  try {
    ({ status } = await exec(npm, ["run", "--silent", step.script], { cwd: ROOT, inherit: true }));
  } catch (error) {
    status = 1;
    console.error((error as Error).message);
  }
  const reported = step.junit !== undefined ? fromJunit(step) : readResult(step.id);
  writeResult(step.id, settleStep(step, status, reported));
  return (performance.now() - start) / 1000;
}

const only = process.argv.slice(2);
const unknown = only.filter((id) => !STEPS.some((s) => s.id === id));
if (unknown.length > 0) {
  console.error(`unknown step(s): ${unknown.join(", ")}; steps are ${STEPS.map((s) => s.id).join(", ")}`);
  process.exit(2);
}
const steps = only.length > 0 ? STEPS.filter((s) => only.includes(s.id)) : STEPS;
if (only.length === 0) rmSync(RESULTS, { recursive: true, force: true });
const seconds: Record<string, number> = {};
const start = performance.now();
for (const step of steps) seconds[step.id] = await runStep(step);
const total = summarize(steps, seconds, (performance.now() - start) / 1000);
if (total.tests.failed + total.checks.failed > 0) process.exitCode = 1;
