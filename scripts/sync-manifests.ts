/**
 * Keeps package.json and deno.json true to `scripts/entries.ts`: the npm `exports` map (types first,
 * ESM and CJS), the `main`/`module`/`types`/`typesVersions` fallbacks for older resolvers, and the JSR
 * `exports` (same subpaths, one-for-one) and `version` (package.json's).
 *
 *   node scripts/sync-manifests.ts          rewrite the fields that drifted
 *   node scripts/sync-manifests.ts --check  fail, naming each field that drifted (used by the tests)
 */
import { join } from "node:path";
import { distName, ENTRIES, type EntryPoint, jsrModule } from "./entries.ts";
import { type Json, type JsonObject, readJson, sameJson, writeJson } from "./lib/json.ts";
import { ROOT } from "./lib/paths.ts";

export const JSR_NAME = "@sluice/sluice";

function dist(entry: EntryPoint, ext: string): string {
  return `./dist/${distName(entry)}${ext}`;
}

/** The npm fields derived from the entry list, in the order they should appear. */
export function expectedPackageFields(): JsonObject {
  const root = ENTRIES.find((e) => e.subpath === ".");
  if (root === undefined) throw new Error('scripts/entries.ts must list the "." entry');
  const exports: JsonObject = {};
  for (const entry of ENTRIES) {
    exports[entry.subpath] = {
      // `types` first in each branch: TypeScript takes the first condition that matches.
      import: { types: dist(entry, ".d.ts"), default: dist(entry, ".js") },
      require: { types: dist(entry, ".d.cts"), default: dist(entry, ".cjs") },
    };
  }
  // Tools that read a dependency's manifest (bundler plugins, version checks) import it by this path;
  // `exports` hides every path it does not list.
  exports["./package.json"] = "./package.json";
  // For `moduleResolution: node` (node10), which ignores `exports`: subpaths through typesVersions.
  const subpaths: JsonObject = {};
  for (const entry of ENTRIES) {
    if (entry.subpath !== ".") subpaths[entry.subpath.slice(2)] = [dist(entry, ".d.cts")];
  }
  return {
    main: dist(root, ".cjs"),
    module: dist(root, ".js"),
    types: dist(root, ".d.cts"),
    ...(Object.keys(subpaths).length > 0 ? { typesVersions: { "*": subpaths } } : {}),
    exports,
  };
}

/** The JSR fields derived from the entry list and package.json. */
export function expectedDenoFields(pkg: JsonObject): JsonObject {
  return {
    name: JSR_NAME,
    version: pkg.version as Json,
    exports: Object.fromEntries(ENTRIES.map((e) => [e.subpath, jsrModule(e)])),
  };
}

/** Problems that no rewrite fixes: they need a decision (peer dependency versions). */
export function peerProblems(pkg: JsonObject): string[] {
  const problems: string[] = [];
  const peers = (pkg.peerDependencies ?? {}) as JsonObject;
  const meta = (pkg.peerDependenciesMeta ?? {}) as Record<string, { optional?: boolean }>;
  for (const entry of ENTRIES) {
    for (const peer of entry.peers ?? []) {
      if (!(peer in peers)) problems.push(`package.json peerDependencies lacks "${peer}" (needed by ${entry.subpath})`);
      if (meta[peer]?.optional !== true) {
        problems.push(`package.json peerDependenciesMeta."${peer}".optional must be true (only ${entry.subpath} needs it)`);
      }
    }
  }
  return problems;
}

/** Merges `fields` into `target`, keeping the position of keys already present; returns the drifted keys. */
function apply(target: JsonObject, fields: JsonObject, anchor: string): { merged: JsonObject; drifted: string[] } {
  const drifted = Object.keys(fields).filter((k) => !sameJson(target[k], fields[k]));
  const merged: JsonObject = {};
  const missing = Object.keys(fields).filter((k) => !(k in target));
  for (const [key, value] of Object.entries(target)) {
    merged[key] = key in fields ? fields[key]! : value;
    if (key === anchor) for (const k of missing) merged[k] = fields[k]!;
  }
  for (const k of missing) if (!(k in merged)) merged[k] = fields[k]!;
  if (!("typesVersions" in fields) && "typesVersions" in merged) {
    delete merged.typesVersions;
    drifted.push("typesVersions");
  }
  return { merged, drifted };
}

export interface ManifestProblems {
  /** package.json fields that drifted from the entry list, and missing optional peers. */
  readonly npm: string[];
  /** deno.json name, version or exports that drifted from package.json and the entry list. */
  readonly jsr: string[];
}

/** Compares (and with `write`, fixes) both manifests; returns the problems left. */
export function syncManifests(write: boolean): ManifestProblems {
  const pkgPath = join(ROOT, "package.json");
  const denoPath = join(ROOT, "deno.json");
  const pkg = readJson(pkgPath);
  const deno = readJson(denoPath);
  const npm = apply(pkg, expectedPackageFields(), "sideEffects");
  const jsr = apply(deno, expectedDenoFields(pkg), "name");
  const problems: ManifestProblems = { npm: [], jsr: [] };
  if (write) {
    if (npm.drifted.length > 0) writeJson(pkgPath, npm.merged);
    if (jsr.drifted.length > 0) writeJson(denoPath, jsr.merged);
    for (const k of npm.drifted) console.log(`package.json: updated "${k}"`);
    for (const k of jsr.drifted) console.log(`deno.json: updated "${k}"`);
  } else {
    const fix = " (`npm run sync:manifests` rewrites it)";
    for (const k of npm.drifted) problems.npm.push(`package.json "${k}" does not match scripts/entries.ts${fix}`);
    for (const k of jsr.drifted) {
      problems.jsr.push(
        k === "version"
          ? `deno.json version ${JSON.stringify(deno.version)} differs from package.json version ${JSON.stringify(pkg.version)}${fix}`
          : `deno.json "${k}" does not match ${k === "name" ? JSR_NAME : "scripts/entries.ts"}${fix}`,
      );
    }
  }
  problems.npm.push(...peerProblems(pkg));
  return problems;
}

if (import.meta.main) {
  const { npm, jsr } = syncManifests(!process.argv.includes("--check"));
  for (const p of [...npm, ...jsr]) console.error(p);
  if (npm.length + jsr.length > 0) process.exitCode = 1;
}
