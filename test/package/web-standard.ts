/**
 * Finds uses of anything but web-standard APIs in TypeScript files, with the type checker rather than
 * by searching text (so comments, strings and look-alike property names never count):
 *
 * - an import or re-export of anything but a relative module (`node:*` modules, npm packages),
 *   including dynamic `import()`;
 * - a reference to a global that only Node declares (`process`, `Buffer`, `require`, `setImmediate`,
 *   `NodeJS.*`…): every declaration of its symbol comes from `@types/node`;
 * - a reference to a browser-only global (`window`, `document`…), which Node, Deno and Bun lack.
 *
 * Feature detection that goes through its own types, e.g.
 * `(globalThis as { setImmediate?: … }).setImmediate`, is not a use of Node's declaration and passes.
 */
import { dirname, relative } from "node:path";
import ts from "typescript";

/** Globals that TypeScript's DOM library declares but that only browsers have. */
const BROWSER_ONLY = new Set([
  "window",
  "document",
  "navigator",
  "location",
  "localStorage",
  "sessionStorage",
  "XMLHttpRequest",
  "alert",
  "HTMLElement",
]);

export interface Violation {
  readonly file: string;
  readonly line: number;
  readonly what: string;
}

/** Compiler options of the project's tsconfig, for the given root files. */
export function projectProgram(tsconfigPath: string, files: readonly string[]): ts.Program {
  const config = ts.readConfigFile(tsconfigPath, (p) => ts.sys.readFile(p));
  if (config.error) throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, "\n"));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, dirname(tsconfigPath));
  return ts.createProgram({ rootNames: [...files], options: { ...parsed.options, noEmit: true } });
}

const isFromNodeTypes = (decl: ts.Declaration) => /[\\/]node_modules[\\/]@types[\\/]node[\\/]/.test(decl.getSourceFile().fileName);
const isFromTsLib = (decl: ts.Declaration) => /[\\/]typescript[\\/]lib[\\/]lib\./.test(decl.getSourceFile().fileName);

/** `x.y` where `x` is not `globalThis`: `y` was reached through `x`, which is judged on its own. */
function isMemberOfNonGlobal(node: ts.Identifier): boolean {
  const parent = node.parent;
  if (!ts.isPropertyAccessExpression(parent) || parent.name !== node) return false;
  return !(ts.isIdentifier(parent.expression) && parent.expression.text === "globalThis");
}

/** Violations in `files` (which must be root files or reachable from them in `program`). */
export function findViolations(program: ts.Program, files: readonly string[], root: string): Violation[] {
  const checker = program.getTypeChecker();
  const violations: Violation[] = [];
  for (const fileName of files) {
    const source = program.getSourceFile(fileName);
    if (source === undefined) throw new Error(`${fileName} is not part of the program`);
    const at = (node: ts.Node, what: string) =>
      violations.push({
        file: relative(root, fileName),
        line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1,
        what,
      });
    const checkSpecifier = (node: ts.Node, specifier: ts.Expression | undefined) => {
      if (specifier === undefined) return;
      if (!ts.isStringLiteralLike(specifier)) return at(node, "a dynamic import of a computed specifier");
      if (!specifier.text.startsWith(".")) at(node, `imports "${specifier.text}" (only relative modules of our own)`);
    };
    const visit = (node: ts.Node): void => {
      if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) checkSpecifier(node, node.moduleSpecifier);
      else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
        checkSpecifier(node, node.moduleReference.expression);
      } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
        checkSpecifier(node, node.arguments[0]);
      } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
        checkSpecifier(node, node.argument.literal as ts.Expression);
      } else if (ts.isIdentifier(node) && !isMemberOfNonGlobal(node)) {
        const symbol = checker.getSymbolAtLocation(node);
        const decls = symbol?.declarations ?? [];
        if (decls.length > 0 && decls.every(isFromNodeTypes)) at(node, `uses \`${node.text}\`, which only Node declares`);
        else if (BROWSER_ONLY.has(node.text) && decls.length > 0 && decls.every(isFromTsLib)) {
          at(node, `uses \`${node.text}\`, which only browsers have`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return violations;
}
