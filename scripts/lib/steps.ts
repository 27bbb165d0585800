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
  /**
   * What the step counts, kept apart in the summary: `tests` (test cases, from the runner's report),
   * `checks` (named checks of a `CheckList`), or `command` (one check decided by the exit code: tsc,
   * tsup). A `tests` or `checks` step that leaves no result failed, whatever its exit code.
   */
  readonly kind: "tests" | "checks" | "command";
  /** A JUnit report the step's runner writes, converted to counts afterwards (vitest). */
  readonly junit?: string;
}

export const STEPS: readonly Step[] = [
  { id: "typecheck", kind: "command", script: "typecheck", label: "tsc --noEmit (src, tests, scripts, examples)" },
  { id: "build", kind: "command", script: "build", label: "tsup: ESM + CJS + .d.ts/.d.cts" },
  { id: "node24", kind: "tests", script: "test:node", label: "Node 24 · vitest (unit + behavioural)", junit: ".tmp/results/node24.xml" },
  { id: "node20", kind: "tests", script: "test:node20", label: "Node 20 · node:test · behavioural, built package" },
  { id: "undici", kind: "tests", script: "test:undici", label: "sluice/undici · node:test · Node 20 × undici 7, Node 24 × undici 7 and 8 (lowest + latest), built package" },
  { id: "deno", kind: "tests", script: "test:deno", label: "Deno 2 · Deno.test · behavioural, source (JSR)" },
  { id: "bun", kind: "tests", script: "test:bun", label: "Bun 1 · bun:test · behavioural, built package" },
  { id: "browser", kind: "tests", script: "test:browser", label: "Chromium · behavioural + fetch, ESM build" },
  { id: "package", kind: "checks", script: "check:package", label: "npm pack smoke, publint, attw" },
  { id: "size", kind: "checks", script: "check:size", label: "min+gzip size budgets" },
  { id: "jsr", kind: "checks", script: "check:jsr", label: "deno.json, publish --dry-run, doc --lint" },
  { id: "docs", kind: "checks", script: "check:docs", label: "README facts: compatibility table, sizes" },
  { id: "examples", kind: "checks", script: "test:examples", label: "examples/deno.ts, examples/bun.ts" },
];
