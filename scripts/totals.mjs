// Prints the plain totals line CI reads ("N passed, N failed") from the JSON reports that
// `npm test` writes to .tmp/results/. Plain JavaScript so any Node (the system's v20 too) runs it.
// A suite that wrote no report counts as one failure: a runner that could not start never passes.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const dir = join(process.cwd(), ".tmp", "results");
const expected = (process.env.SLUICE_EXPECTED_REPORTS ?? "vitest").split(",").filter(Boolean);
let passed = 0;
let failed = 0;
for (const name of expected) {
  const file = join(dir, `${name}.json`);
  if (!existsSync(file)) {
    console.log(`${name}: no report (the suite did not run)`);
    failed += 1;
    continue;
  }
  const report = JSON.parse(readFileSync(file, "utf8"));
  // vitest's JSON reporter (jest-compatible) and our own runners share these two fields.
  const p = report.numPassedTests ?? 0;
  const f = (report.numFailedTests ?? 0) + (report.numTodoTests ?? 0) + (report.numPendingTests ?? 0);
  console.log(`${name}: ${p} passed, ${f} failed`);
  passed += p;
  failed += f;
}
if (existsSync(dir)) {
  for (const extra of readdirSync(dir).filter((f) => f.endsWith(".json") && !expected.includes(f.slice(0, -5)))) {
    console.log(`note: unexpected report ${extra} was not counted`);
  }
}
console.log(`${passed} passed, ${failed} failed`);
