/**
 * The core runs on every runtime we claim because it uses only web-standard APIs: no `node:`
 * imports, no npm packages, no Node-only or browser-only globals, anywhere in `src/` outside the
 * Node-only entry points (`src/integrations/` but for the folders of web entries, and entries marked
 * `runtime: "node"` in scripts/entries.ts) — and no web entry point reaches into those.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { distName, ENTRIES } from "../../scripts/entries.ts";
import { findViolations, projectProgram } from "./web-standard.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const TSCONFIG = join(ROOT, "tsconfig.json");
const nodeOnlySources = new Set(ENTRIES.filter((e) => e.runtime === "node").map((e) => join(ROOT, e.source)));
// `src/integrations/<name>/` holds the code of entry `./<name>`: Node-only unless that entry is a web
// one (sluice/otel), whose code is then held to this check like the core's.
const webIntegrations = new Set(ENTRIES.filter((e) => e.runtime === "web").map(distName));
const isNodeOnly = (file: string) => {
  const [folder] = relative(join(ROOT, "src", "integrations"), file).split(/[\\/]/);
  return nodeOnlySources.has(file) || (folder !== ".." && !webIntegrations.has(folder!));
};

const coreFiles = readdirSync(join(ROOT, "src"), { recursive: true, withFileTypes: true })
  .filter((d) => d.isFile() && d.name.endsWith(".ts"))
  .map((d) => join(d.parentPath, d.name))
  .filter((file) => !isNodeOnly(file))
  .sort();

describe("the core uses only web-standard APIs", () => {
  test("no file in src/ outside Node-only entry points imports node: modules or packages, or uses Node- or browser-only globals", () => {
    expect(coreFiles.length).toBeGreaterThan(5);
    const program = projectProgram(TSCONFIG, coreFiles);
    const found = findViolations(program, coreFiles, ROOT).map((v) => `${v.file}:${v.line} ${v.what}`);
    expect(found).toEqual([]);
  });

  test("no web entry point reaches a Node-only module", () => {
    const webEntries = ENTRIES.filter((e) => e.runtime === "web").map((e) => join(ROOT, e.source));
    const program = projectProgram(TSCONFIG, webEntries);
    const reached = program.getSourceFiles().map((s) => resolve(s.fileName)).filter((f) => f.startsWith(join(ROOT, "src")));
    expect(reached.length).toBeGreaterThan(5);
    expect(reached.filter(isNodeOnly).map((f) => relative(ROOT, f))).toEqual([]);
  });

  describe("the check itself", () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-web-standard-"));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    test("flags node: imports, packages, Node-only and browser-only globals, and passes web APIs and feature detection", () => {
      const bad = join(dir, "bad.ts");
      writeFileSync(bad, [
        `import { readFileSync } from "node:fs";`, // 1
        `export { x } from "some-package";`, // 2
        `export const env = process.env.HOME;`, // 3
        `export const bytes = Buffer.from("x");`, // 4
        `export const title = document.title;`, // 5
        `export const later = () => import("node:os");`, // 6
        `export const ok = [setTimeout, AbortSignal.timeout(1), performance.now(), new URL("http://x"), fetch];`, // 7
        `export const maybe = (globalThis as { setImmediate?: () => void }).setImmediate;`, // 8
        `// process.exit() in a comment, "Buffer" in a string`, // 9
        `export const immediate = setImmediate;`, // 10
        `export { readFileSync };`, // 11
        `export const viaGlobal = globalThis.process;`, // 12
      ].join("\n"));
      const program = projectProgram(TSCONFIG, [bad]);
      const found = findViolations(program, [bad], dir).map((v) => `${v.line} ${v.what}`);
      expect(found).toEqual([
        `1 imports "node:fs" (only relative modules of our own)`,
        `2 imports "some-package" (only relative modules of our own)`,
        "3 uses `process`, which only Node declares",
        "4 uses `Buffer`, which only Node declares",
        "5 uses `document`, which only browsers have",
        `6 imports "node:os" (only relative modules of our own)`,
        "10 uses `setImmediate`, which only Node declares",
        "12 uses `process`, which only Node declares",
      ]);
    });
  });
});
