/**
 * Keeps the README's facts true: the compatibility table names exactly the runtimes and versions the
 * tests run, and the sizes it states are the measured ones. The facts sit between markers, in
 * README.md (each marker must appear at least once):
 *
 *   <!-- compat-table:start --> | Runtime | Version | … | <!-- compat-table:end -->
 *   <!-- size:core -->5.9 KiB<!-- /size:core -->        within 0.25 KiB of the measured min+gzip
 *   <!-- size:smooth -->3.7 KiB<!-- /size:smooth -->    SmoothLimiter alone, likewise
 *   <!-- size:core-budget -->7 KiB<!-- /size:core-budget -->  exactly the budget CI enforces
 *   <!-- size:fetch -->, <!-- size:main -->             createThrottledFetch alone, the whole main entry
 *   <!-- size:main-budget -->15 KiB<!-- /size:main-budget -->  the main entry's budget (scripts/entries.ts)
 *
 * and the measured figures (scripts/docs-figures.ts): every generated block present and dated, the
 * benchmark summary dated as bench/RESULTS.md and stating only figures found there.
 *
 *   node scripts/check-docs.ts      (after `npm run build`)
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { assertFreshDist } from "./lib/dist.ts";
import { readJson } from "./lib/json.ts";
import { ROOT } from "./lib/paths.ts";
import { CheckList } from "./lib/results.ts";
import { bun, deno, node20, node24 } from "./lib/runtimes.ts";
import { CORE_BUDGET, CORE_EXPORTS, measure } from "./lib/size.ts";
import { checkFigures } from "./docs-figures.ts";
import { ENTRIES } from "./entries.ts";

const DOCS = ["README.md"].filter((f) => existsSync(join(ROOT, f)));
const texts = DOCS.map((file) => ({ file, text: readFileSync(join(ROOT, file), "utf8") }));

/** Every text between `<!-- name -->` and `<!-- /name -->`, with the file it is in. */
function marked(name: string, end = `/${name}`): { file: string; value: string }[] {
  const re = new RegExp(`<!-- ${name} -->([\\s\\S]*?)<!-- ${end} -->`, "g");
  const found = texts.flatMap(({ file, text }) => [...text.matchAll(re)].map((m) => ({ file, value: m[1]!.trim() })));
  if (found.length === 0) throw new Error(`no <!-- ${name} --> marker in ${DOCS.join(" or ") || "any doc"}`);
  return found;
}

const major = (version: string) => version.split(".")[0]!;
const checks = new CheckList("docs");

await checks.check("the compatibility table lists exactly the runtimes and versions the tests run", () => {
  const ts = readJson(join(ROOT, "node_modules", "typescript", "package.json")).version as string;
  const engines = (readJson(join(ROOT, "package.json")).engines as Record<string, string>).node;
  const expected = [
    `Node.js | ${major(node24().version)}`,
    `Node.js | ${major(node20().version)}`,
    `Deno | ${major(deno().version)}`,
    `Bun | ${major(bun().version)}`,
    "Chromium | headless",
    `TypeScript | ${ts.split(".").slice(0, 2).join(".")}`,
  ].sort();
  for (const { file, value } of marked("compat-table:start", "compat-table:end")) {
    const rows = value.split("\n").filter((l) => l.startsWith("|")).slice(2); // after header + rule
    const claimed = rows.map((row) => row.split("|").slice(1, 3).map((c) => c.trim()).join(" | ")).sort();
    if (claimed.join("\n") !== expected.join("\n")) {
      throw new Error(`${file}: the table claims\n  ${claimed.join("\n  ")}\nbut the tests run\n  ${expected.join("\n  ")}`);
    }
    const oldest = rows.find((r) => r.includes(`| ${major(node20().version)} |`));
    if (oldest === undefined || !oldest.includes(`node ${engines}`)) {
      throw new Error(`${file}: the Node ${major(node20().version)} row must name the minimum as \`engines: node ${engines}\``);
    }
  }
});

await checks.check("the sizes stated are the measured ones (within 0.25 KiB) and the budget is CI's", async () => {
  assertFreshDist();
  const core = await measure(`export { ${CORE_EXPORTS.join(", ")} } from "./index.js";`);
  const smooth = await measure(`export { SmoothLimiter } from "./index.js";`);
  const problems: string[] = [];
  const near = (marker: string, bytes: number) => {
    for (const { file, value } of marked(marker)) {
      const stated = /^([\d.]+) KiB$/.exec(value);
      if (stated === null || Math.abs(Number(stated[1]) - bytes / 1024) > 0.25) {
        problems.push(`${file}: ${marker} says "${value}", measured ${(bytes / 1024).toFixed(1)} KiB`);
      }
    }
  };
  const fetch = await measure(`export { createThrottledFetch } from "./index.js";`);
  const main = await measure(`export * from "./index.js";`);
  near("size:core", core.gzip);
  near("size:smooth", smooth.gzip);
  near("size:fetch", fetch.gzip);
  near("size:main", main.gzip);
  for (const { file, value } of marked("size:core-budget")) {
    if (value !== `${CORE_BUDGET / 1024} KiB`) problems.push(`${file}: size:core-budget says "${value}", CI enforces ${CORE_BUDGET / 1024} KiB`);
  }
  const mainBudget = ENTRIES.find((e) => e.subpath === ".")!.sizeBudget!;
  for (const { file, value } of marked("size:main-budget")) {
    if (value !== `${mainBudget / 1024} KiB`) problems.push(`${file}: size:main-budget says "${value}", CI enforces ${mainBudget / 1024} KiB`);
  }
  if (problems.length > 0) throw new Error(problems.join("\n"));
  return `core ${(core.gzip / 1024).toFixed(2)} KiB, SmoothLimiter alone ${(smooth.gzip / 1024).toFixed(2)} KiB, ` +
    `throttled fetch ${(fetch.gzip / 1024).toFixed(2)} KiB, main entry ${(main.gzip / 1024).toFixed(2)} KiB`;
});

await checks.check("the README's measured figures are dated, and the benchmark summary matches bench/RESULTS.md", () => {
  const problems = checkFigures(readFileSync(join(ROOT, "README.md"), "utf8"), readFileSync(join(ROOT, "bench", "RESULTS.md"), "utf8"));
  if (problems.length > 0) throw new Error(`${problems.join("\n")}\n(npm run docs:figures re-measures the generated blocks)`);
});

checks.finish();
