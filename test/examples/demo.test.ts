/**
 * `npm start` runs as a new user sees it: a small workload, real requests to the local API it starts.
 * It must exit 0, show plain fetch drawing 429s and sluice none (counting each slot from its
 * response makes that hold whatever the latency), write its SVG, and leave nothing running.
 */
import { execFile } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, test } from "vitest";

const run = promisify(execFile);

test("the demo compares plain fetch with sluice, reports zero 429s for sluice and writes its timeline", async () => {
  const out = join(tmpdir(), `sluice-demo-${process.pid}.svg`);
  rmSync(out, { force: true });
  const { stdout } = await run(
    process.execPath,
    ["examples/demo.ts", "--rate", "20", "--requests", "60", "--concurrency", "20", "--out", out],
    { timeout: 30_000 },
  );
  const refused = stdout.match(/429s received\s+(\d+)\s+(\d+)/);
  expect(refused, stdout).not.toBeNull();
  expect(Number(refused![1])).toBeGreaterThan(0); // 20 callers at once against 20/s: plain fetch is refused
  expect(Number(refused![2])).toBe(0);
  const sent = stdout.match(/requests sent\s+(\d+)\s+(\d+)/);
  expect(Number(sent![2])).toBe(60); // sluice sends each request exactly once
  const busiest = stdout.match(/busiest rolling second\s+(\d+)\s+(\d+)/);
  expect(Number(busiest![2])).toBeLessThanOrEqual(20);
  const svg = readFileSync(out, "utf8");
  expect(svg.startsWith("<svg")).toBe(true);
  expect(svg).toContain("sluice: 0 × 429");
  rmSync(out);
  expect(existsSync(out)).toBe(false);
}, 40_000);

test("the demo explains its options and rejects bad ones", async () => {
  const { stdout } = await run(process.execPath, ["examples/demo.ts", "--help"]);
  expect(stdout).toMatch(/--rate N[\s\S]*--requests N[\s\S]*--concurrency N[\s\S]*--algorithm A/);
  await expect(run(process.execPath, ["examples/demo.ts", "--rate", "0"])).rejects.toMatchObject({
    code: 2,
    stderr: expect.stringContaining("--rate must be a positive integer, got \"0\""),
  });
});

test("npm start -- --adaptive: a client told 2× the limit cuts its rate below what it was told and never exceeds it", async () => {
  // 40 callers told 40/s against 20/s: even at 500 ms per answer they offer 80/s, so the server
  // must refuse within the first second — the cut follows from the server's rule, not from timing.
  const { stdout } = await run(
    process.execPath,
    ["examples/demo.ts", "--adaptive", "--rate", "20", "--told", "40", "--seconds", "6", "--concurrency", "40"],
    { timeout: 30_000 },
  );
  expect(stdout).toContain("The client is told 40 per second");
  const learned = stdout.match(/learned rate\s+([\d.]+)\/s/);
  expect(learned, stdout).not.toBeNull();
  expect(Number(learned![1])).toBeLessThan(40);
  expect(stdout).toMatch(/rate changes\s+\d+ \([^)]*throttled/);
  for (const m of stdout.matchAll(/rate\s+([\d.]+)\/s/g)) expect(Number(m[1])).toBeLessThanOrEqual(40);
}, 40_000);

test("the adaptive scene explains its options and rejects bad ones", async () => {
  const { stdout } = await run(process.execPath, ["examples/demo.ts", "--adaptive", "--help"]);
  expect(stdout).toMatch(/--rate N[\s\S]*--told N[\s\S]*--seconds N/);
  await expect(run(process.execPath, ["examples/demo.ts", "--adaptive", "--told", "1.5"])).rejects.toMatchObject({
    code: 2,
    stderr: expect.stringContaining("--told must be an integer of at least 0, got \"1.5\""),
  });
});
