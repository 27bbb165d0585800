/**
 * Runs the behavioural suite (`test/behaviour/`) on one runtime, through that runtime's own test
 * runner, and records its counts for the summary:
 *
 *   node scripts/run-behaviour.ts node20   node:test on the machine's Node 20, against dist/
 *   node scripts/run-behaviour.ts deno     Deno.test on Deno 2, against the TypeScript source (JSR)
 *   node scripts/run-behaviour.ts bun      bun:test on Bun 1, against dist/ (npm)
 *
 * (Node 24 runs the suite through vitest with the rest of the tests; Chromium through
 * `scripts/test-browser.ts`.) Every runner writes a JUnit report; the counts come from it. A runtime
 * that cannot be found or started fails the run.
 */
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { bundleAdapter } from "./lib/bundle.ts";
import { assertFreshDist } from "./lib/dist.ts";
import { exec } from "./lib/exec.ts";
import { DIST, RESULTS, ROOT, TMP } from "./lib/paths.ts";
import { clearResult, parseJunit, writeResult } from "./lib/results.ts";
import { bun, deno, node20, type Runtime } from "./lib/runtimes.ts";
import { cases } from "../test/behaviour/index.ts";

/** Kills a runner that hangs; the suite itself takes a few seconds. */
const TIMEOUT = 180_000;

interface Plan {
  readonly runtime: () => Runtime;
  /** Prepares what the runner needs, then returns its command line (junit report at `junit`). */
  readonly prepare: (runtime: Runtime, junit: string) => Promise<string[]>;
}

const bundled = (name: string) => join(TMP, "behaviour", name);

const PLANS: Record<string, Plan> = {
  node20: {
    runtime: node20,
    async prepare(_runtime, junit) {
      assertFreshDist();
      const outfile = bundled("node20.suite.mjs");
      await bundleAdapter({
        adapter: "test/behaviour/run/node-test.ts",
        outfile,
        platform: "node",
        distSpecifier: (file) => join(DIST, file),
        external: ["node:*"],
      });
      return [
        "--test",
        "--test-reporter=spec",
        "--test-reporter-destination=stdout",
        "--test-reporter=junit",
        `--test-reporter-destination=${junit}`,
        outfile,
      ];
    },
  },
  deno: {
    runtime: deno,
    async prepare(_runtime, junit) {
      // --no-lock: nothing to pin (no dependencies), and no deno.lock left behind in the repository.
      return ["test", "--no-lock", "--allow-net=127.0.0.1", `--junit-path=${junit}`, "test/behaviour/run/deno.ts"];
    },
  },
  bun: {
    runtime: bun,
    async prepare(_runtime, junit) {
      assertFreshDist();
      const outfile = bundled("bun.suite.mjs");
      await bundleAdapter({
        adapter: "test/behaviour/run/bun.ts",
        outfile,
        platform: "node",
        distSpecifier: (file) => join(DIST, file),
        external: ["node:*", "bun:test"],
      });
      return ["test", `--reporter=junit`, `--reporter-outfile=${junit}`, `./${join(".tmp", "behaviour", "bun.suite.mjs")}`];
    },
  },
};

async function main(id: string | undefined): Promise<void> {
  const plan = id === undefined ? undefined : PLANS[id];
  if (id === undefined || plan === undefined) {
    console.error(`usage: node scripts/run-behaviour.ts <${Object.keys(PLANS).join("|")}>`);
    process.exitCode = 2;
    return;
  }
  clearResult(id);
  const junit = join(RESULTS, `${id}.xml`);
  mkdirSync(RESULTS, { recursive: true });
  rmSync(junit, { force: true });
  let runtime: Runtime;
  let args: string[];
  try {
    runtime = plan.runtime();
    args = await plan.prepare(runtime, junit);
  } catch (error) {
    const reason = `${id} cannot start: ${(error as Error).message}`;
    console.error(reason);
    writeResult(id, { passed: 0, failed: 1, skipped: 0, failures: [reason] });
    process.exitCode = 1;
    return;
  }
  console.log(`behavioural suite on ${id} ${runtime.version} (${runtime.path})`);
  const { status } = await exec(runtime.path, args, { cwd: ROOT, inherit: true, timeout: TIMEOUT });
  let counts;
  try {
    counts = parseJunit(readFileSync(junit, "utf8"));
  } catch {
    counts = { passed: 0, failed: 0, skipped: 0, failures: [] };
  }
  const failures = [...counts.failures];
  let failed = counts.failed;
  if (status !== 0 && failed === 0) {
    failed = 1; // the runner failed outside any test case (a file that would not load, a leak, a crash)
    failures.push(`${id}: the test runner exited with ${status}`);
  }
  // Every registered case must be reported, so a runner that loads only part of the suite fails.
  const expected = cases().length;
  const reported = counts.passed + counts.failed + counts.skipped;
  if (reported !== expected) {
    failed += 1;
    failures.push(`${id}: ${expected} cases are registered, the runner reported ${reported}`);
    console.error(failures.at(-1));
  }
  writeResult(id, { passed: counts.passed, failed, skipped: counts.skipped, failures });
  console.log(`${id}: ${counts.passed} passed, ${failed} failed${counts.skipped ? `, ${counts.skipped} skipped` : ""}`);
  if (failed > 0) process.exitCode = 1;
}

await main(process.argv[2]);
