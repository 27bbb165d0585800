/**
 * The behavioural suite through `bun:test`. Bundled by `scripts/run-behaviour.ts` against the built
 * package in `dist/` (what `bun add sluice` installs).
 */
import { test } from "bun:test";
import { cases, fullName, runCase } from "../index.ts";
import type { Platform } from "../harness.ts";
import { serveBun } from "../serve-bun.ts";

const platform: Platform = { name: "bun", serve: serveBun };

for (const c of cases()) {
  test(fullName(c), () => runCase(c, platform), (c.options.timeout ?? 10_000) + 1000);
}
