/**
 * `npm test`: every step of `scripts/lib/steps.ts` in order — type check, build, vitest on Node 24,
 * the behavioural suite on Node 20, Deno, Bun and Chromium, the package, size and JSR checks, the
 * runtime examples — then the totals. A failing step does not stop the others (CI reports every
 * failure at once); the exit code is non-zero when anything failed.
 *
 *   npm test                    everything
 *   npm test -- deno bun        only these steps (by id)
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { cases, fullName } from "../test/behaviour/index.ts";
import { exec } from "./lib/exec.ts";
import { RESULTS, ROOT } from "./lib/paths.ts";
import { clearResult, junitCaseNames, parseJunit, readResult, writeResult } from "./lib/results.ts";
import { STEPS, type Step } from "./lib/steps.ts";
import { summarize } from "./summary.ts";

const npm = process.platform === "win32" ? "npm.cmd" : "npm";

/** Counts for a step whose runner writes JUnit (vitest), checked to include the whole behavioural suite. */
function fromJunit(step: Step): void {
  let xml: string;
  try {
    xml = readFileSync(join(ROOT, step.junit!), "utf8");
  } catch {
    return;
  }
  const result = parseJunit(xml);
  const names = new Set(junitCaseNames(xml));
  const missing = cases().map(fullName).filter((name) => !names.has(name));
  const failures = [...result.failures];
  if (missing.length > 0) failures.push(`${missing.length} behavioural cases missing from the report, e.g. ${missing[0]}`);
  writeResult(step.id, { ...result, failed: result.failed + (missing.length > 0 ? 1 : 0), failures });
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
  if (step.junit !== undefined) fromJunit(step);
  const result = readResult(step.id);
  if (result === undefined) {
    // A plain command (tsc, tsup): one check, decided by its exit code.
    writeResult(step.id, status === 0
      ? { passed: 1, failed: 0, skipped: 0, failures: [] }
      : { passed: 0, failed: 1, skipped: 0, failures: [`npm run ${step.script} exited with ${status}`] });
  } else if (status !== 0 && result.failed === 0) {
    writeResult(step.id, { ...result, failed: 1, failures: [...result.failures, `npm run ${step.script} exited with ${status}`] });
  } else if (status === 0 && result.passed + result.failed === 0) {
    writeResult(step.id, { ...result, failed: 1, failures: [...result.failures, `${step.id}: no test ran`] });
  }
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
if (total.failed > 0) process.exitCode = 1;
