/**
 * The npm build: ESM (`.js`) + CommonJS (`.cjs`) + declarations (`.d.ts` / `.d.cts`) for every entry
 * point listed in `scripts/entries.ts`. One build for all entries, with code splitting in both
 * formats, so entries share one copy of the core (a `ManualClock` from `sluice/testing` is the very
 * class `sluice` exports, and adapters extend the same `GatedLimiter`).
 */
import { defineConfig } from "tsup";
import { distName, ENTRIES } from "./scripts/entries.ts";

export default defineConfig({
  entry: Object.fromEntries(ENTRIES.map((e) => [distName(e), e.source])),
  format: ["esm", "cjs"],
  dts: true,
  splitting: true,
  clean: true,
  // Runtime-neutral: the core uses only web-standard APIs; Node-only adapters import `node:` modules,
  // which stay imports (never bundled, never polyfilled).
  platform: "neutral",
  external: [/^node:/],
  target: "es2022",
  treeshake: true,
  sourcemap: false,
  minify: false,
});
