/**
 * Runs the runtime examples as their users would, after type-checking each with its runtime's types:
 *
 *   examples/deno.ts  `deno check`, then `deno run --allow-net=127.0.0.1` (imports `@sluice/sluice`)
 *   examples/bun.ts   `tsc -p examples/tsconfig.bun.json`, then `bun run` (imports `sluice`, the build)
 *
 * Each example starts its own local server and ends by printing `done: …`; a missing line fails.
 */
import { join } from "node:path";
import { assertFreshDist } from "./lib/dist.ts";
import { run } from "./lib/exec.ts";
import { ROOT } from "./lib/paths.ts";
import { CheckList } from "./lib/results.ts";
import { bun, deno, node24 } from "./lib/runtimes.ts";

const checks = new CheckList("examples");
// Read when each command starts: resolving Deno sets DENO_NO_UPDATE_CHECK (see lib/runtimes.ts).
const env = () => ({ ...process.env, NO_COLOR: "1" });
const expectDone = (stdout: string, what: RegExp) => {
  if (!what.test(stdout)) throw new Error(`the example did not finish as expected; it printed:\n${stdout}`);
  return stdout.trim().split("\n").at(-1);
};

await checks.check("examples/deno.ts type-checks (deno check)", async () => {
  await run(deno().path, ["check", "--no-lock", "examples/deno.ts"], { cwd: ROOT, env: env(), timeout: 60_000 });
});
await checks.check("examples/deno.ts runs on Deno", async () => {
  const { stdout } = await run(deno().path, ["run", "--no-lock", "--allow-net=127.0.0.1", "examples/deno.ts"], {
    cwd: ROOT,
    env: env(),
    timeout: 60_000,
  });
  return expectDone(stdout, /^done: 8 requests/m);
});
await checks.check("examples/bun.ts type-checks with Bun's types (tsc)", async () => {
  assertFreshDist();
  const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
  await run(node24().path, [tsc, "-p", "examples/tsconfig.bun.json"], { cwd: ROOT, timeout: 60_000 });
});
await checks.check("examples/bun.ts runs on Bun", async () => {
  const { stdout } = await run(bun().path, ["run", "examples/bun.ts"], { cwd: ROOT, env: env(), timeout: 60_000 });
  return expectDone(stdout, /^done: 6 requests/m);
});
checks.finish();
