/**
 * `examples/openai-batch.ts` and `examples/github-sync.ts` run as their users would, against the
 * simulators in virtual time: they must finish and print what they promise.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, test } from "vitest";

const run = promisify(execFile);

describe("vendor examples", () => {
  test("openai-batch: no 429s, and the TPM used to ≥ 90 % only when settled", async () => {
    const { stdout } = await run(process.execPath, ["examples/openai-batch.ts"], { timeout: 60_000 });
    expect(stdout).toContain("done: openai-batch");
    const rows = [...stdout.matchAll(/(JSON|streamed)\s+(settled from usage|reserved only)\s+ok (\d+)\/500\s+429s (\d+).*TPM used ([\d.]+) %/g)];
    expect(rows).toHaveLength(4);
    for (const [, , mode, ok, refused, used] of rows) {
      expect(Number(ok)).toBe(500);
      expect(Number(refused)).toBe(0);
      if (mode === "settled from usage") expect(Number(used)).toBeGreaterThanOrEqual(90);
      else expect(Number(used)).toBeLessThan(75);
    }
  }, 70_000);

  test("github-sync: every call succeeds, nothing is sent to a paused resource", async () => {
    const { stdout } = await run(process.execPath, ["examples/github-sync.ts"], { timeout: 60_000 });
    expect(stdout).toContain("done: github-sync");
    const m = /calls (\d+), ok (\d+), secondary 403s (\d+), sent to a paused resource (\d+)/.exec(stdout);
    expect(m, stdout).not.toBeNull();
    expect(m![2]).toBe(m![1]);
    expect(Number(m![3])).toBeGreaterThan(0);
    expect(Number(m![4])).toBe(0);
  }, 70_000);
});
