/**
 * What sluice costs a user's bundle: each entry point's ESM build, bundled with everything it imports
 * and minified (esbuild, as a user's bundler would), then gzipped (level 9). Fails when an entry
 * exceeds its budget in `scripts/entries.ts`, or when the limiter core (every limiter, `combine`,
 * `KeyedLimiter`, clocks and errors, without the HTTP layer) exceeds {@link CORE_BUDGET}. Also
 * reports one limiter alone, which is what tree-shaking leaves when an app imports just
 * `SmoothLimiter` (`sideEffects: false`), and checks what `createThrottledFetch` alone costs against
 * {@link FETCH_ONLY_BUDGET}.
 *
 *   node scripts/check-size.ts        (after `npm run build`)
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { distName, ENTRIES } from "./entries.ts";
import { assertFreshDist } from "./lib/dist.ts";
import { TMP } from "./lib/paths.ts";
import { CheckList } from "./lib/results.ts";
import { CORE_BUDGET, CORE_EXPORTS, FETCH_ONLY_BUDGET, FETCH_ONLY_GOAL, measure, type Size } from "./lib/size.ts";

const kib = (n: number) => `${(n / 1024).toFixed(2)} KiB`;

const describe = (s: Size) =>
  `${kib(s.gzip)} min+gzip (${s.gzip} bytes); ${kib(s.minified)} minified, ${kib(s.brotli)} min+brotli`;

const checks = new CheckList("size");
const report: Record<string, Size & { budget?: number }> = {};
await checks.check("dist/ is built and current", () => assertFreshDist());
for (const entry of ENTRIES) {
  // Everything the entry exports, kept alive: the most a user can pay for it.
  const file = `./${distName(entry)}.js`;
  const label = entry.subpath === "." ? "sluice (everything)" : `sluice/${entry.subpath.slice(2)}`;
  const budget = entry.sizeBudget;
  await checks.check(`${label}: min+gzip within budget${budget === undefined ? " (none set)" : ` of ${kib(budget)}`}`, async () => {
    const size = await measure(`export * from ${JSON.stringify(file)};`);
    report[label] = { ...size, ...(budget === undefined ? {} : { budget }) };
    if (budget !== undefined && size.gzip > budget) {
      throw new Error(`${size.gzip} bytes gzipped exceeds the budget of ${budget} bytes (scripts/entries.ts)`);
    }
    return describe(size);
  });
}
await checks.check(`limiter core: min+gzip within budget of ${kib(CORE_BUDGET)}`, async () => {
  const size = await measure(`export { ${CORE_EXPORTS.join(", ")} } from "./index.js";`);
  report["limiter core"] = { ...size, budget: CORE_BUDGET };
  if (size.gzip > CORE_BUDGET) throw new Error(`${size.gzip} bytes gzipped exceeds the core budget of ${CORE_BUDGET} bytes`);
  return describe(size);
});
await checks.check(`only createThrottledFetch: min+gzip within budget of ${kib(FETCH_ONLY_BUDGET)}`, async () => {
  const size = await measure(`export { createThrottledFetch } from "./index.js";`);
  report["createThrottledFetch alone (tree-shaken)"] = { ...size, budget: FETCH_ONLY_BUDGET };
  if (size.gzip > FETCH_ONLY_BUDGET) throw new Error(`${size.gzip} bytes gzipped exceeds the budget of ${FETCH_ONLY_BUDGET} bytes (scripts/lib/size.ts)`);
  const goal = size.gzip <= FETCH_ONLY_GOAL ? "goal met" : `GOAL NOT MET: the goal is ${kib(FETCH_ONLY_GOAL)}`;
  return `${describe(size)}; ${goal}`;
});
const alone = await measure(`export { SmoothLimiter } from "./index.js";`);
report["SmoothLimiter alone (tree-shaken)"] = alone;
console.log(`  · for reference, SmoothLimiter alone (tree-shaken): ${describe(alone)}`);
mkdirSync(TMP, { recursive: true });
writeFileSync(join(TMP, "size.json"), `${JSON.stringify(report, null, 2)}\n`);
checks.finish();
