/**
 * The JSR package: deno.json agrees with package.json (name `@sluice/sluice`, the same version, the
 * same subpaths one-for-one), `deno publish --dry-run` passes with slow types forbidden, and
 * `deno doc --lint` is clean on every entry module (every export documented). All offline.
 *
 *   node scripts/check-jsr.ts
 */
import { join } from "node:path";
import { ENTRIES, jsrModule } from "./entries.ts";
import { exec, run } from "./lib/exec.ts";
import { readJson } from "./lib/json.ts";
import { ROOT } from "./lib/paths.ts";
import { CheckList } from "./lib/results.ts";
import { deno } from "./lib/runtimes.ts";
import { syncManifests } from "./sync-manifests.ts";

const checks = new CheckList("jsr");
// Read when each command starts: resolving Deno sets DENO_NO_UPDATE_CHECK (see lib/runtimes.ts).
const env = () => ({ ...process.env, NO_COLOR: "1" });

await checks.check("deno.json: name @sluice/sluice, version equal to package.json's, exports matching npm one-for-one", () => {
  const problems = [...syncManifests(false).jsr];
  // npm's "./package.json" is the manifest itself, not a module: JSR has no counterpart.
  const npmSubpaths = Object.keys(readJson(join(ROOT, "package.json")).exports as object).filter((s) => s !== "./package.json");
  const jsrSubpaths = Object.keys(readJson(join(ROOT, "deno.json")).exports as object);
  if (npmSubpaths.join() !== jsrSubpaths.join()) {
    problems.push(`subpaths differ: npm ${npmSubpaths.join(", ")}; JSR ${jsrSubpaths.join(", ")}`);
  }
  if (problems.length > 0) throw new Error(problems.join("\n"));
  const { version } = readJson(join(ROOT, "deno.json"));
  return `@sluice/sluice@${String(version)}: ${jsrSubpaths.join(", ")}`;
});

await checks.check("deno publish --dry-run passes (type check, no slow types)", async () => {
  const { stdout, stderr } = await run(deno().path, ["publish", "--dry-run", "--allow-dirty"], {
    cwd: ROOT,
    env: env(),
    timeout: 120_000,
  });
  if (!/Dry run complete/.test(`${stdout}\n${stderr}`)) throw new Error(`unexpected output:\n${stdout}\n${stderr}`);
});

await checks.check("deno doc --lint is clean on every entry module", async () => {
  const modules = ENTRIES.map(jsrModule);
  const { status, stdout, stderr } = await exec(deno().path, ["doc", "--lint", ...modules], { cwd: ROOT, env: env(), timeout: 120_000 });
  if (status !== 0) {
    // deno doc trips over @types/node's triple-slash references (found through package.json); those
    // warnings are noise about Node's types, not about ours, so they are left out of the report.
    const lines = `${stdout}\n${stderr}`.split("\n");
    const noise = (i: number) =>
      /^Warning Failed resolving types\..*@types\/node/.test(lines[i]!) ||
      (/^\s+at .*@types\/node/.test(lines[i]!) && i > 0 && /^Warning Failed resolving types/.test(lines[i - 1]!));
    throw new Error(lines.filter((_, i) => !noise(i)).join("\n").trim());
  }
  return modules.join(", ");
});

checks.finish();
