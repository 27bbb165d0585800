/**
 * What an installed package's type declarations say an entry point exports as VALUES (classes,
 * functions, constants), read with the TypeScript compiler API — to compare with what the entry
 * point exports at run time. A declaration bundler may turn `export type { SomeClass }` into a plain
 * export, which type-checks `new SomeClass()` and `instanceof` that then fail at run time.
 *
 * @module
 */
import { createRequire } from "node:module";
import { join } from "node:path";
import { ROOT } from "./paths.ts";

type TypeScript = typeof import("typescript");
const ts = createRequire(import.meta.url)(join(ROOT, "node_modules", "typescript")) as TypeScript;

/**
 * The value names the declaration file `file` exports, sorted.
 *
 * @example
 * ```ts
 * declaredValues("/tmp/x/node_modules/sluice/dist/redis.d.ts"); // ["RedisStore", …]
 * ```
 */
export function declaredValues(file: string): string[] {
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  const module = source === undefined ? undefined : checker.getSymbolAtLocation(source);
  if (module === undefined) throw new Error(`no module symbol for ${file}`);
  return checker.getExportsOfModule(module)
    .filter((symbol) => {
      const target = (symbol.flags & ts.SymbolFlags.Alias) !== 0 ? checker.getAliasedSymbol(symbol) : symbol;
      return (target.flags & ts.SymbolFlags.Value) !== 0;
    })
    .map((symbol) => symbol.name)
    .sort();
}
