/**
 * Finds the runtimes the project claims, as real executables, and fails loudly when one is missing:
 * a runtime that cannot start fails the run, it is never skipped.
 *
 * - Node 24: the `node` devDependency (`node_modules/node/bin/node`).
 * - Node 20: the machine's own Node 20 (`SLUICE_NODE20`, else the first `node` on PATH outside
 *   node_modules, else /usr/local/bin/node or /usr/bin/node).
 * - Deno 2 and Bun 1: the `deno` and `bun` devDependencies. Their npm packages put the native
 *   binary in place with a postinstall script, which npm may skip (`--ignore-scripts`, or npm's
 *   install-script approvals); the binary is also inside the platform package each one pulls in as
 *   an optional dependency (`@deno/linux-x64-glibc/deno`, `@oven/bun-linux-x64/bin/bun`), so we look
 *   there too. Every candidate must answer `--version` before it is used.
 */
import { existsSync, readFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { probe } from "./exec.ts";
import { ROOT } from "./paths.ts";

export interface Runtime {
  /** "node24", "node20", "deno" or "bun": the name totals are reported under. */
  readonly id: string;
  /** The executable. */
  readonly path: string;
  /** The version it reports, e.g. "20.20.2". */
  readonly version: string;
}

function firstWorking(id: string, candidates: readonly string[], parse: (out: string) => string | undefined): Runtime {
  for (const path of candidates) {
    if (!existsSync(path)) continue;
    const out = probe(path, ["--version"]);
    const version = out === undefined ? undefined : parse(out);
    if (version !== undefined) return { id, path, version };
  }
  throw new Error(`${id}: no working executable; tried ${candidates.join(", ") || "nothing"}`);
}

/** The platform packages a launcher package lists as optional dependencies, where installed. */
function platformPackages(launcher: string): string[] {
  const manifest = join(ROOT, "node_modules", launcher, "package.json");
  if (!existsSync(manifest)) return [];
  const pkg = JSON.parse(readFileSync(manifest, "utf8")) as { optionalDependencies?: Record<string, string> };
  return Object.keys(pkg.optionalDependencies ?? {})
    .map((name) => join(ROOT, "node_modules", name))
    .filter((dir) => existsSync(dir));
}

const nodeVersion = (out: string): string | undefined => /^v(\d+\.\d+\.\d+)/.exec(out)?.[1];

export function node24(): Runtime {
  const runtime = firstWorking("node24", [join(ROOT, "node_modules", "node", "bin", "node")], nodeVersion);
  if (!runtime.version.startsWith("24.")) throw new Error(`node24: the devDependency reports ${runtime.version}`);
  return runtime;
}

export function node20(): Runtime {
  const override = process.env.SLUICE_NODE20;
  const onPath = (process.env.PATH ?? "")
    .split(delimiter)
    .filter((dir) => dir !== "" && !dir.includes("node_modules"))
    .map((dir) => join(dir, "node"));
  const candidates = override ? [override] : [...onPath, "/usr/local/bin/node", "/usr/bin/node"];
  const found = candidates.filter((p) => existsSync(p)).map((p) => {
    try {
      return firstWorking("node20", [p], nodeVersion);
    } catch {
      return undefined;
    }
  });
  const runtime = found.find((r) => r?.version.startsWith("20."));
  if (runtime === undefined) {
    const seen = found.filter((r) => r !== undefined).map((r) => `${r.path} (v${r.version})`);
    throw new Error(
      `node20: no Node 20 found (set SLUICE_NODE20=/path/to/node); saw ${seen.join(", ") || "no node at all"}`,
    );
  }
  return runtime;
}

export function deno(): Runtime {
  // Every Deno this process starts inherits this: no release check, so nothing leaves the machine.
  process.env.DENO_NO_UPDATE_CHECK ??= "1";
  const candidates = [
    join(ROOT, "node_modules", "deno", "deno"),
    ...platformPackages("deno").map((dir) => join(dir, "deno")),
  ];
  const runtime = firstWorking("deno", candidates, (out) => /^deno (\d+\.\d+\.\d+)/.exec(out)?.[1]);
  if (!runtime.version.startsWith("2.")) throw new Error(`deno: expected Deno 2, found ${runtime.version}`);
  return runtime;
}

export function bun(): Runtime {
  const candidates = [
    join(ROOT, "node_modules", "bun", "bin", "bun.exe"),
    ...platformPackages("bun").map((dir) => join(dir, "bin", "bun")),
  ];
  const runtime = firstWorking("bun", candidates, (out) => /^(\d+\.\d+\.\d+)/.exec(out)?.[1]);
  if (!runtime.version.startsWith("1.")) throw new Error(`bun: expected Bun 1, found ${runtime.version}`);
  return runtime;
}

/** Every runtime by id, for the scripts that take one as an argument. */
export const RUNTIMES: Readonly<Record<string, () => Runtime>> = { node24, node20, deno, bun };

if (import.meta.main) {
  let failed = false;
  for (const [id, find] of Object.entries(RUNTIMES)) {
    try {
      const r = find();
      console.log(`${id.padEnd(7)} ${r.version.padEnd(8)} ${r.path}`);
    } catch (error) {
      failed = true;
      console.error((error as Error).message);
    }
  }
  if (failed) process.exitCode = 1;
}
