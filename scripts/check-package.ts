/**
 * The npm package, checked as users get it: `npm pack` → the tarball installed (offline) into a
 * scratch project in a temp directory → `import` and `require` of every entry point on Node 20 and
 * Node 24 → TypeScript resolving the types under `moduleResolution` node16, nodenext and bundler.
 * Also publint and Are-the-types-wrong on the same tarball, the manifest against `scripts/entries.ts`,
 * and `engines.node` against the oldest Node the tests run.
 *
 *   node scripts/check-package.ts      (after `npm run build`)
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { distName, ENTRIES, npmSpecifier } from "./entries.ts";
import { declaredValues } from "./lib/declared-exports.ts";
import { assertFreshDist } from "./lib/dist.ts";
import { run } from "./lib/exec.ts";
import { readJson } from "./lib/json.ts";
import { ROOT, TMP } from "./lib/paths.ts";
import { CheckList } from "./lib/results.ts";
import { node20, node24, type Runtime } from "./lib/runtimes.ts";
import { syncManifests } from "./sync-manifests.ts";

const checks = new CheckList("package");
const pkg = readJson(join(ROOT, "package.json"));
const name = pkg.name as string;
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
const bin = (tool: string) => join(ROOT, "node_modules", ".bin", tool);

await checks.check("package.json exports, main, module, types and typesVersions match scripts/entries.ts", () => {
  const { npm: problems } = syncManifests(false);
  if (problems.length > 0) throw new Error(problems.join("\n"));
});

const runtimes: Runtime[] = [];
await checks.check("Node 20 and Node 24 are available to test on", () => {
  runtimes.push(node20(), node24());
});

await checks.check("engines.node names the oldest Node the tests run", () => {
  const engines = (pkg.engines as Record<string, string> | undefined)?.node;
  const oldest = runtimes.map((r) => r.version).sort((a, b) => Number(a.split(".")[0]) - Number(b.split(".")[0]))[0];
  if (oldest === undefined) throw new Error("no Node runtime found");
  const major = oldest.split(".")[0];
  if (engines !== `>=${major}`) throw new Error(`engines.node is ${JSON.stringify(engines)}, but the oldest Node tested is ${oldest}: expected ">=${major}"`);
});

// Pack what `npm publish` would publish. The build already ran (it is a step of its own), so the
// `prepack` build is skipped here rather than run twice.
const packDir = join(TMP, "pack");
rmSync(packDir, { recursive: true, force: true });
mkdirSync(packDir, { recursive: true });
let tarball = "";
await checks.check("npm pack produces a tarball with the built entry points and nothing else", async () => {
  assertFreshDist();
  const { stdout } = await run(npm, ["pack", "--ignore-scripts", "--json", "--pack-destination", packDir], { cwd: ROOT });
  const [info] = JSON.parse(stdout) as [{ filename: string; files: { path: string }[] }];
  tarball = join(packDir, info.filename);
  const files = info.files.map((f) => f.path);
  const stray = files.filter((f) => !/^(dist\/[^/]+\.(c?js|d\.c?ts)|package\.json|README\.md|LICENSE)$/.test(f));
  if (stray.length > 0) throw new Error(`unexpected files in the tarball: ${stray.join(", ")}`);
  const needed = ENTRIES.flatMap((e) => [".js", ".cjs", ".d.ts", ".d.cts"].map((x) => `dist/${distName(e)}${x}`));
  const missing = needed.filter((f) => !files.includes(f));
  if (missing.length > 0) throw new Error(`missing from the tarball: ${missing.join(", ")}`);
});

await checks.check("publint --strict reports no problems", async () => {
  await run(bin("publint"), ["run", tarball, "--strict"], { cwd: ROOT });
});

await checks.check("Are the types wrong? (attw, strict profile: node10, node16 CJS/ESM, bundler) reports no problems", async () => {
  await run(bin("attw"), [tarball, "--profile", "strict", "--format", "table-flipped", "--no-color", "--no-emoji"], { cwd: ROOT });
});

// A scratch project in a temp directory that installs the tarball, offline.
const scratch = mkdtempSync(join(tmpdir(), "sluice-pack-"));
try {
  await checks.check("the tarball installs into a fresh project, offline", async () => {
    writeFileSync(join(scratch, "package.json"), JSON.stringify({ name: "scratch", private: true }, null, 2));
    await run(npm, ["install", "--offline", "--no-audit", "--no-fund", "--no-package-lock", tarball], { cwd: scratch });
  });
  writeSmokeFiles(scratch);
  for (const runtime of runtimes) {
    await checks.check(`Node ${runtime.version}: import of every entry point works (ESM)`, async () => {
      await run(runtime.path, ["smoke.mjs"], { cwd: scratch, timeout: 30_000 });
    });
    await checks.check(`Node ${runtime.version}: require of every entry point works (CJS)`, async () => {
      await run(runtime.path, ["smoke.cjs"], { cwd: scratch, timeout: 30_000 });
    });
  }
  await checks.check("the types declare as values exactly what every entry point exports at run time (ESM and CJS)", async () => {
    const installed = join(scratch, "node_modules", name);
    const manifest = readJson(join(installed, "package.json")) as { exports: Record<string, { import: { types: string }; require: { types: string } }> };
    const problems: string[] = [];
    for (const entry of ENTRIES) {
      const spec = npmSpecifier(name, entry);
      const { stdout } = await run(runtimes.at(-1)?.path ?? process.execPath, ["--input-type=module", "-e", `
        import { createRequire } from "node:module";
        const require = createRequire(process.cwd() + "/");
        const keys = (ns) => Object.keys(ns).filter((k) => k !== "__esModule" && k !== "default").sort();
        console.log(JSON.stringify({ esm: keys(await import(${JSON.stringify(spec)})), cjs: keys(require(${JSON.stringify(spec)})) }));`], { cwd: scratch, timeout: 30_000 });
      const runtime = JSON.parse(stdout) as { esm: string[]; cjs: string[] };
      const types = manifest.exports[entry.subpath]!;
      for (const [format, file, names] of [["ESM", types.import.types, runtime.esm], ["CJS", types.require.types, runtime.cjs]] as const) {
        const declared = declaredValues(join(installed, file));
        const notAtRuntime = declared.filter((n) => !names.includes(n));
        const undeclared = names.filter((n) => !declared.includes(n));
        if (notAtRuntime.length > 0) problems.push(`${spec} (${format}): declared but not exported: ${notAtRuntime.join(", ")}`);
        if (undeclared.length > 0) problems.push(`${spec} (${format}): exported but not declared: ${undeclared.join(", ")}`);
      }
    }
    if (problems.length > 0) throw new Error(problems.join("\n"));
  });
  for (const mode of ["node16", "nodenext", "bundler"] as const) {
    await checks.check(`TypeScript resolves the types with moduleResolution ${mode} (from ESM and CJS files)`, async () => {
      await run(runtimes.at(-1)?.path ?? process.execPath, [tsc, "-p", `tsconfig.${mode}.json`], { cwd: scratch, timeout: 60_000 });
    });
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

checks.finish();

/** The files the scratch project runs and type-checks, generated from the entry list. */
function writeSmokeFiles(dir: string): void {
  const specs = ENTRIES.map((e) => npmSpecifier(name, e));
  const behaviour = (ns: string) => `
const { ManualClock, WindowLimiter, SmoothLimiter, combine } = ${ns};
const clock = new ManualClock();
const limiter = combine(
  new WindowLimiter({ limit: 1, interval: 1000, clock }),
  new SmoothLimiter({ limit: 10, clock }),
);
await limiter.acquire();
const next = limiter.acquire().then(() => clock.now());
await clock.advance(1000);
if ((await next) !== 1000) throw new Error("the second permit should be granted at t=1000");
`;
  // Both formats must expose the same names (tsup's CJS adds only __esModule).
  const names = (ns: string) => `Object.keys(${ns}).filter((k) => k !== "__esModule" && k !== "default").sort().join()`;
  writeFileSync(join(dir, "smoke.mjs"), `// ESM: every entry point imports; the core works; entries share one core.
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
${specs.map((s, i) => `import * as e${i} from ${JSON.stringify(s)};`).join("\n")}
const entries = [${specs.map((s, i) => `[${JSON.stringify(s)}, e${i}]`).join(", ")}];
for (const [spec, ns] of entries) {
  if (Object.keys(ns).length === 0) throw new Error(spec + " exports nothing");
  const cjs = require(spec);
  if (${names("ns")} !== ${names("cjs")}) throw new Error(spec + ": ESM and CJS export different names");
}
${behaviour("e0")}
${ENTRIES.some((e) => e.subpath === "./testing") ? `if ((await import("${name}/testing")).ManualClock !== e0.ManualClock) throw new Error("${name}/testing has its own copy of ManualClock");` : ""}
if (require(${JSON.stringify(`${name}/package.json`)}).name !== ${JSON.stringify(name)}) throw new Error("${name}/package.json does not resolve to the manifest");
console.log("ESM ok:", entries.map(([s]) => s).join(", "));
`);
  writeFileSync(join(dir, "smoke.cjs"), `// CJS: every entry point requires; the core works; entries share one core.
${specs.map((s, i) => `const e${i} = require(${JSON.stringify(s)});`).join("\n")}
const entries = [${specs.map((s, i) => `[${JSON.stringify(s)}, e${i}]`).join(", ")}];
for (const [spec, ns] of entries) if (Object.keys(ns).length === 0) throw new Error(spec + " exports nothing");
(async () => {
${behaviour("e0")}
${ENTRIES.some((e) => e.subpath === "./testing") ? `if (require("${name}/testing").ManualClock !== e0.ManualClock) throw new Error("${name}/testing has its own copy of ManualClock");` : ""}
if (require(${JSON.stringify(`${name}/package.json`)}).name !== ${JSON.stringify(name)}) throw new Error("${name}/package.json does not resolve to the manifest");
console.log("CJS ok:", entries.map(([s]) => s).join(", "));
})().catch((error) => { console.error(error); process.exitCode = 1; });
`);
  // Type usage, the same for ESM (.mts) and CJS (.cts) files: real types, not \`any\`.
  const usage = `
${specs.map((s, i) => `import * as e${i} from ${JSON.stringify(s)};`).join("\n")}
import { combine, ManualClock, MaxWaitExceededError, SmoothLimiter, WindowLimiter, type Limiter } from ${JSON.stringify(name)};

type IsAny<T> = 0 extends 1 & T ? true : false;
${specs.map((_, i) => `const typed${i}: IsAny<typeof e${i}> = false;`).join("\n")}
const clock = new ManualClock();
const limiter: Limiter = combine(new SmoothLimiter({ limit: 2, clock }), new WindowLimiter({ limit: 5, interval: 1000, clock }));
const wait: number = limiter.tryAcquire();
const result: Promise<string> = limiter.schedule(() => "done", { permits: 1, maxWait: 100 });
const error = new MaxWaitExceededError(10, 5);
const retryAfter: number = error.retryAfter;
// @ts-expect-error \`interval\` is required by WindowLimiter
new WindowLimiter({ limit: 5 });
// @ts-expect-error \`limit\` must be a number
new SmoothLimiter({ limit: "2" });
export { ${specs.map((_, i) => `typed${i}`).join(", ")}, wait, result, retryAfter };
`;
  writeFileSync(join(dir, "types-esm.mts"), usage);
  writeFileSync(join(dir, "types-cjs.cts"), usage);
  const base = {
    strict: true,
    noEmit: true,
    skipLibCheck: false, // our declaration files are checked too
    target: "es2022",
    typeRoots: [join(ROOT, "node_modules", "@types")],
  };
  const configs = {
    // A Node project: Node's types, no DOM.
    node16: { ...base, module: "node16", moduleResolution: "node16", lib: ["es2022"], types: ["node"] },
    nodenext: { ...base, module: "nodenext", moduleResolution: "nodenext", lib: ["es2022"], types: ["node"] },
    // A bundled browser project: the DOM, no Node types.
    bundler: { ...base, module: "preserve", moduleResolution: "bundler", lib: ["es2022", "dom"], types: [] },
  };
  for (const [mode, compilerOptions] of Object.entries(configs)) {
    writeFileSync(
      join(dir, `tsconfig.${mode}.json`),
      JSON.stringify({ compilerOptions, files: ["types-esm.mts", "types-cjs.cts"] }, null, 2),
    );
  }
}
