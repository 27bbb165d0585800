/**
 * The behavioural suite through `Deno.test`, against the TypeScript source (what JSR publishes).
 * Deno's sanitizers also fail a case that leaks a timer, a pending operation or an open resource.
 *
 *   deno test --allow-net=127.0.0.1 test/behaviour/run/deno.ts
 */
import { cases, fullName, runCase } from "../index.ts";
import type { Platform } from "../harness.ts";
import { serveDeno } from "../serve-deno.ts";

/** The part of the `Deno` namespace this file uses (so Node's type check needs no Deno types). */
interface DenoTest {
  test(definition: { name: string; fn: () => Promise<void> }): void;
}
const Deno = (globalThis as unknown as { Deno: DenoTest }).Deno;

const platform: Platform = { name: "deno", serve: serveDeno };

for (const c of cases()) {
  Deno.test({ name: fullName(c), fn: () => runCase(c, platform) });
}
