/**
 * The throttled fetch examples run as written: each starts its own local server, checks its own
 * claim (zero 429s, pauses scoped to one host, …), exits 0 and leaves nothing running.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { expect, test } from "vitest";

const run = promisify(execFile);

test.each([
  ["throttled-fetch-shared.ts", /20 requests from 2 clients .*: 20 ok\nserver: 20 accepted, 0 refused/],
  ["throttled-fetch-ky.ts", /12 items through ky .*\nserver: 12 accepted, 1 refused/],
  ["throttled-fetch-per-origin.ts", /429s: slow 1 \(forced\), fast 0; limiters: 2/],
  ["throttled-fetch-endpoints.ts", /server: 12 accepted, 0 refused/],
])("examples/%s", async (file, expected) => {
  const { stdout } = await run(process.execPath, [`examples/${file}`], { timeout: 20_000 });
  expect(stdout).toMatch(expected);
}, 30_000);
