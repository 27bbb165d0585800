/**
 * The behavioural suite through `node:test`, for Node versions that cannot run vitest (Node 20).
 * Bundled by `scripts/run-behaviour.ts` against the built package in `dist/`.
 */
import { test } from "node:test";
import { cases, fullName, runCase } from "../index.ts";
import type { Platform } from "../harness.ts";
import { serveNode } from "../serve-node.ts";

const platform: Platform = { name: "node", serve: serveNode };

for (const c of cases()) {
  test(fullName(c), () => runCase(c, platform));
}
