/**
 * `npm run test:undici`: sluice/undici on every Node × undici pair the peer range claims, through
 * `node:test` against the built package. The suite (`test/undici/compat/suite.ts`) is bundled once
 * (sluice's entries → dist/, undici left external) and run per pair, loading that pair's undici
 * through its npm alias (`SLUICE_UNDICI`). The Node 24 × undici 8 pair is also covered in depth by
 * vitest (`test/undici/`).
 *
 *   Node 20 (the machine's) × undici 7.0.0 (undici7-min) and 7.30.2 (undici7)
 *   Node 24 (devDependency)  × undici 7.30.2, 8.0.1 (undici8-min) and 8.12.4 (undici)
 *
 * And one fact the docs state: undici 8 does not load on Node 20 (it requires Node ≥ 22.19).
 */
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { bundleAdapter } from "./lib/bundle.ts";
import { assertFreshDist } from "./lib/dist.ts";
import { exec } from "./lib/exec.ts";
import { DIST, RESULTS, ROOT, TMP } from "./lib/paths.ts";
import { clearResult, parseJunit, writeResult } from "./lib/results.ts";
import { node20, node24, type Runtime } from "./lib/runtimes.ts";

const ID = "undici";
const TIMEOUT = 120_000;

/** Each pair: the runtime and the installed undici copy (package name or npm alias). */
const MATRIX: ReadonlyArray<{ runtime: () => Runtime; undici: string }> = [
  { runtime: node20, undici: "undici7-min" },
  { runtime: node20, undici: "undici7" },
  { runtime: node24, undici: "undici7" },
  { runtime: node24, undici: "undici8-min" },
  { runtime: node24, undici: "undici" },
];

const versionOf = (pkg: string) =>
  (JSON.parse(readFileSync(join(ROOT, "node_modules", pkg, "package.json"), "utf8")) as { version: string }).version;

async function main(): Promise<void> {
  clearResult(ID);
  mkdirSync(RESULTS, { recursive: true });
  const totals = { passed: 0, failed: 0, skipped: 0, failures: [] as string[] };
  const fail = (message: string) => {
    totals.failed++;
    totals.failures.push(message);
    console.error(message);
  };
  const suite = join(TMP, "undici", "suite.mjs");
  try {
    assertFreshDist();
    await bundleAdapter({
      adapter: "test/undici/compat/suite.ts",
      outfile: suite,
      platform: "node",
      distSpecifier: (file) => join(DIST, file),
      external: ["node:*", "undici", "undici7", "undici7-min", "undici8-min"],
    });
  } catch (error) {
    fail(`the undici suite cannot be built: ${(error as Error).message}`);
  }

  for (const pair of totals.failed === 0 ? MATRIX : []) {
    let runtime: Runtime;
    try {
      runtime = pair.runtime();
    } catch (error) {
      fail(`${pair.undici}: ${(error as Error).message}`);
      continue;
    }
    const name = `${runtime.id}-${pair.undici}`;
    const junit = join(RESULTS, `undici-${name}.xml`);
    rmSync(junit, { force: true });
    console.log(`\nsluice/undici on Node ${runtime.version} × undici ${versionOf(pair.undici)} (${pair.undici})`);
    const { status } = await exec(runtime.path, [
      "--test",
      "--test-reporter=spec",
      "--test-reporter-destination=stdout",
      "--test-reporter=junit",
      `--test-reporter-destination=${junit}`,
      suite,
    ], { cwd: ROOT, inherit: true, timeout: TIMEOUT, env: { ...process.env, SLUICE_UNDICI: pair.undici } });
    let counts;
    try {
      counts = parseJunit(readFileSync(junit, "utf8"));
    } catch {
      counts = { passed: 0, failed: 0, skipped: 0, failures: [] };
    }
    totals.passed += counts.passed;
    totals.skipped += counts.skipped;
    totals.failed += counts.failed;
    totals.failures.push(...counts.failures.map((f) => `${name}: ${f}`));
    if (status !== 0 && counts.failed === 0) fail(`${name}: the test runner exited with ${status}`);
    if (counts.passed + counts.failed === 0) fail(`${name}: no test ran`);
  }

  // The docs say undici 8 cannot be used on Node 20: keep that true.
  try {
    const runtime = node20();
    const { status, stderr } = await exec(runtime.path, ["-e", "require('undici')"], { cwd: ROOT, timeout: 30_000 });
    if (status === 0) fail(`undici ${versionOf("undici")} loaded on Node ${runtime.version}: update the README (Throttle a whole Node process)`);
    else {
      totals.passed++;
      console.log(`undici ${versionOf("undici")} does not load on Node ${runtime.version}: ${stderr.split("\n").find((l) => /Error/.test(l))?.trim()}`);
    }
  } catch (error) {
    fail(`Node 20 check: ${(error as Error).message}`);
  }

  writeResult(ID, totals);
  console.log(`\n${ID}: ${totals.passed} passed, ${totals.failed} failed${totals.skipped ? `, ${totals.skipped} skipped` : ""}`);
  if (totals.failed > 0) process.exitCode = 1;
}

await main();
