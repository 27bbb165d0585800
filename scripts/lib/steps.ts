/**
 * The steps of `npm test`, in order. Each is an npm script that also runs on its own
 * (`npm run test:deno`); `scripts/test-all.ts` runs them all and `scripts/summary.ts` totals them.
 */
export interface Step {
  /** Where its counts are kept: `.tmp/results/<id>.json`. */
  readonly id: string;
  /** The npm script. */
  readonly script: string;
  /** What the step proves, for the summary table. */
  readonly label: string;
  /** A JUnit report the step's runner writes, converted to counts afterwards (vitest). */
  readonly junit?: string;
}

export const STEPS: readonly Step[] = [
  { id: "typecheck", script: "typecheck", label: "tsc --noEmit (src, tests, scripts, examples)" },
  { id: "build", script: "build", label: "tsup: ESM + CJS + .d.ts/.d.cts" },
  { id: "node24", script: "test:node", label: "Node 24 · vitest (unit + behavioural)", junit: ".tmp/results/node24.xml" },
  { id: "node20", script: "test:node20", label: "Node 20 · node:test · behavioural, built package" },
  { id: "undici", script: "test:undici", label: "sluice/undici · node:test · Node 20 × undici 7, Node 24 × undici 7 and 8 (lowest + latest), built package" },
  { id: "deno", script: "test:deno", label: "Deno 2 · Deno.test · behavioural, source (JSR)" },
  { id: "bun", script: "test:bun", label: "Bun 1 · bun:test · behavioural, built package" },
  { id: "browser", script: "test:browser", label: "Chromium · behavioural + fetch, ESM build" },
  { id: "package", script: "check:package", label: "npm pack smoke, publint, attw" },
  { id: "size", script: "check:size", label: "min+gzip size budgets" },
  { id: "jsr", script: "check:jsr", label: "deno.json, publish --dry-run, doc --lint" },
  { id: "docs", script: "check:docs", label: "README facts: compatibility table, sizes" },
  { id: "examples", script: "test:examples", label: "examples/deno.ts, examples/bun.ts" },
];
