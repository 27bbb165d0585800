/** Guards for scripts that test the built package: `dist/` must exist and be newer than the sources. */
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { distName, ENTRIES } from "../entries.ts";
import { DIST, ROOT } from "./paths.ts";

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith(".ts")) {
      newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
    }
  }
  return newest;
}

/** Throws unless every entry's ESM and CJS builds exist and are at least as new as `src/`. */
export function assertFreshDist(): void {
  const sources = Math.max(newestMtime(join(ROOT, "src")), statSync(join(ROOT, "tsup.config.ts")).mtimeMs);
  for (const entry of ENTRIES) {
    for (const ext of [".js", ".cjs", ".d.ts", ".d.cts"]) {
      const file = join(DIST, `${distName(entry)}${ext}`);
      let mtime: number;
      try {
        mtime = statSync(file).mtimeMs;
      } catch {
        throw new Error(`dist/${distName(entry)}${ext} is missing: run \`npm run build\``);
      }
      if (mtime < sources) throw new Error(`dist/ is older than src/: run \`npm run build\``);
    }
  }
}
