/**
 * Where sluice's bytes go, per source module: the minified share of each module in what a user who
 * imports only `createThrottledFetch` pays, in the limiter core, and in `sluice/undici`. The size
 * check (`scripts/check-size.ts`) says whether a budget holds; this says what to shrink.
 *
 *   node scripts/size-modules.ts
 */
import { CORE_EXPORTS, moduleBytes } from "./lib/size.ts";

const bundles: Record<string, string> = {
  "only createThrottledFetch": `export { createThrottledFetch } from "./src/index.ts";`,
  "limiter core": `export { ${CORE_EXPORTS.join(", ")} } from "./src/index.ts";`,
  "sluice/undici": `export * from "./src/undici.ts";`,
};
for (const [name, contents] of Object.entries(bundles)) {
  const rows = await moduleBytes(contents);
  const total = rows.reduce((sum, [, bytes]) => sum + bytes, 0);
  console.log(`${name}: ${total} bytes minified`);
  for (const [module, bytes] of rows) console.log(`  ${String(bytes).padStart(6)}  ${(100 * bytes / total).toFixed(1).padStart(5)}%  ${module}`);
}
