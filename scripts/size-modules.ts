/**
 * Where sluice's bytes go, per source module: the minified share of each module in what a user who
 * imports only `createThrottledFetch` pays, in the limiter core, and in `sluice/undici`. The size
 * check (`scripts/check-size.ts`) says whether a budget holds; this says what to shrink.
 *
 *   node scripts/size-modules.ts
 */
import { CORE_EXPORTS, exclusiveBytes, moduleBytes } from "./lib/size.ts";

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

// What the fetch-only bundle carries for each family of options (the modules only that family reaches),
// so that "what would an opt-in design save" has a figure. Minified bytes; gzip shrinks each about alike.
const FETCH_FAMILIES: Record<string, readonly string[]> = {
  "adaptive (the `adaptive` option)": ["src/adaptive/rates.ts"],
  "costs and concurrency (`cost`, `settle`, `maxConcurrent`)": ["src/http/costs.ts", "src/http/slots.ts"],
  "both of the above": ["src/adaptive/rates.ts", "src/http/costs.ts", "src/http/slots.ts"],
  "server signals (the header parsers)": ["src/http/throttle.ts"],
  "redaction (secrets out of errors)": ["src/http/redact.ts"],
  "the limiter `limit`/`interval` builds": ["src/limiters/window.ts"],
};
// From the defining module, not the index: the index imports every module (re-exports), which would
// make every module reachable without the family's roots.
const families = await exclusiveBytes(`export { createThrottledFetch } from "./src/http/throttled-fetch.ts";`, FETCH_FAMILIES);
console.log(`only createThrottledFetch, by family of options (minified bytes only that family reaches, of ${families.total}):`);
for (const name of Object.keys(FETCH_FAMILIES)) {
  const bytes = families[name]!;
  console.log(`  ${String(bytes).padStart(6)}  ${(100 * bytes / families.total!).toFixed(1).padStart(5)}%  ${name}`);
}
