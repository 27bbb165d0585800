/**
 * The behavioural suite on Node 24, through vitest, against the TypeScript source.
 * (The same cases run on Node 20, Deno, Bun and Chromium: see `scripts/run-behaviour.ts`.)
 */
import { test } from "vitest";
import { cases, fullName, runCase } from "../index.ts";
import type { Platform } from "../harness.ts";
import { serveNode } from "../serve-node.ts";

const platform: Platform = { name: "node", serve: serveNode };

for (const c of cases()) {
  test(fullName(c), () => runCase(c, platform), (c.options.timeout ?? 10_000) + 1000);
}
