/**
 * examples/undici-global.ts runs as written: it starts its own local API, checks its own claims (zero
 * 429s from three clients on one limiter; one forced 429 pauses everyone and is retried), exits 0 and
 * leaves nothing running.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { expect, test } from "vitest";

const run = promisify(execFile);

test("examples/undici-global.ts", async () => {
  const { stdout } = await run(process.execPath, ["examples/undici-global.ts"], { timeout: 20_000 });
  expect(stdout).toMatch(/18 requests from fetch, undici.request and ky in .*: 18 ok\nserver: 18 accepted, 0 refused/);
  expect(stdout).toMatch(/everyone waits 800 ms\n6 more: 6 ok .*\nserver: 24 accepted, 1 refused/);
}, 30_000);
