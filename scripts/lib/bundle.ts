/**
 * Bundles a behavioural-suite adapter into one JavaScript file for a runtime that should test the
 * BUILT package: imports of sluice's entry modules (`src/index.ts`, `src/testing.ts`, …) become
 * imports of their `dist/` builds, left external, so the cases exercise exactly what npm ships.
 * Anything else under `src/` is refused: behavioural cases use the public API only.
 */
import { build, type Plugin } from "esbuild";
import { existsSync } from "node:fs";
import { isAbsolute, join, relative, resolve } from "node:path";
import { distName, ENTRIES } from "../entries.ts";
import { DIST, ROOT } from "./paths.ts";

export interface BundleOptions {
  /** The adapter module, e.g. `test/behaviour/run/node-test.ts`. */
  readonly adapter: string;
  readonly outfile: string;
  readonly platform: "node" | "browser";
  /** How the bundle imports an entry's ESM build: a file path (Node, Bun) or a URL path (browser). */
  readonly distSpecifier: (file: string) => string;
  /** Modules the runtime provides (`node:*`, `bun:test`). */
  readonly external?: readonly string[];
}

function entriesToDist(distSpecifier: (file: string) => string): Plugin {
  const bySource = new Map(ENTRIES.map((e) => [resolve(ROOT, e.source), `${distName(e)}.js`]));
  const src = join(ROOT, "src");
  return {
    name: "sluice-entries-to-dist",
    setup(b) {
      b.onResolve({ filter: /^\.\.?\// }, (args) => {
        const target = resolve(args.resolveDir, args.path);
        const file = bySource.get(target);
        if (file !== undefined) {
          if (!existsSync(join(DIST, file))) return { errors: [{ text: `dist/${file} is missing: run \`npm run build\`` }] };
          return { path: distSpecifier(file), external: true };
        }
        const inSrc = relative(src, target);
        if (!inSrc.startsWith("..") && !isAbsolute(inSrc)) {
          return { errors: [{ text: `${args.path}: behavioural cases may import sluice only through its entry points` }] };
        }
        return undefined;
      });
    },
  };
}

export async function bundleAdapter(options: BundleOptions): Promise<void> {
  await build({
    entryPoints: [join(ROOT, options.adapter)],
    outfile: options.outfile,
    bundle: true,
    format: "esm",
    platform: options.platform,
    target: options.platform === "browser" ? "es2022" : "node20",
    external: [...(options.external ?? [])],
    plugins: [entriesToDist(options.distSpecifier)],
    // The suite registers its cases by importing case files for their side effects; package.json's
    // `sideEffects: false` describes the published package, not the tests.
    ignoreAnnotations: true,
    logLevel: "warning",
  });
}
