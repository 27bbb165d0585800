/**
 * How test steps report their counts to `scripts/test-all.ts`: each step leaves
 * `.tmp/results/<step>.json`. Test runners' own reports (JUnit XML, which vitest, node:test, Deno and
 * Bun all write) are converted here, so the totals are the runners' own counts, never re-derived.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RESULTS } from "./paths.ts";

export interface StepResult {
  readonly passed: number;
  readonly failed: number;
  readonly skipped: number;
  /** Names (and first lines of the reasons) of what failed. */
  readonly failures: readonly string[];
}

export function resultPath(step: string): string {
  return join(RESULTS, `${step}.json`);
}

export function clearResult(step: string): void {
  rmSync(resultPath(step), { force: true });
}

export function writeResult(step: string, result: StepResult): void {
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(resultPath(step), `${JSON.stringify(result, null, 2)}\n`);
}

export function readResult(step: string): StepResult | undefined {
  try {
    return JSON.parse(readFileSync(resultPath(step), "utf8")) as StepResult;
  } catch {
    return undefined;
  }
}

function unescapeXml(text: string): string {
  return text
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&quot;", '"')
    .replaceAll("&apos;", "'")
    .replaceAll("&#10;", "\n")
    .replaceAll("&amp;", "&");
}

/** The names of the `<testcase>` elements of a JUnit report. */
export function junitCaseNames(xml: string): string[] {
  return [...xml.matchAll(/<testcase\b[^>]*?\bname="([^"]*)"/g)].map((m) => unescapeXml(m[1]!));
}

/**
 * Counts the `<testcase>` elements of a JUnit report: failed when it holds `<failure>` or `<error>`,
 * skipped when it holds `<skipped>`, passed otherwise. Suite-level `<error>`s outside any test case
 * (a file that failed to load) count as failures too.
 */
export function parseJunit(xml: string): StepResult {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  const failures: string[] = [];
  const caseRe = /<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g;
  for (const match of xml.matchAll(caseRe)) {
    const attrs = match[1] ?? "";
    const body = match[3] ?? "";
    const name = unescapeXml(/\bname="([^"]*)"/.exec(attrs)?.[1] ?? "(unnamed)");
    if (/<(failure|error)\b/.test(body)) {
      failed++;
      const message = /<(?:failure|error)\b[^>]*\bmessage="([^"]*)"/.exec(body)?.[1];
      failures.push(message === undefined ? name : `${name}: ${unescapeXml(message).split("\n")[0]}`);
    } else if (/<skipped\b/.test(body)) skipped++;
    else passed++;
  }
  const outside = xml.replace(caseRe, "");
  for (const match of outside.matchAll(/<error\b([^>]*)>/g)) {
    failed++;
    const message = /\bmessage="([^"]*)"/.exec(match[1] ?? "")?.[1];
    failures.push(`(outside any test) ${unescapeXml(message ?? "error")}`);
  }
  return { passed, failed, skipped, failures };
}

/**
 * A list of named checks for a check script (package, size, JSR…): each runs, prints ✓ or ✗ with the
 * reason, and the script ends with its counts written for the summary and a non-zero exit on failure.
 */
export class CheckList {
  readonly #step: string;
  #passed = 0;
  #failed = 0;
  readonly #failures: string[] = [];

  constructor(step: string) {
    this.#step = step;
    clearResult(step);
  }

  /** Runs one check: it passes unless it throws. A string it returns is printed under its name. */
  async check(name: string, fn: () => void | string | Promise<void | string>): Promise<boolean> {
    const start = performance.now();
    try {
      const detail = await fn();
      this.#passed++;
      console.log(`  ✓ ${name} (${Math.round(performance.now() - start)} ms)`);
      if (typeof detail === "string") console.log(indent(detail));
      return true;
    } catch (error) {
      this.#failed++;
      const reason = error instanceof Error ? error.message : String(error);
      this.#failures.push(`${name}: ${reason.split("\n")[0]}`);
      console.log(`  ✗ ${name}\n${indent(reason)}`);
      return false;
    }
  }

  /** Writes the counts and sets the exit code; call once at the end. */
  finish(): StepResult {
    const result = { passed: this.#passed, failed: this.#failed, skipped: 0, failures: this.#failures };
    writeResult(this.#step, result);
    console.log(`${this.#step}: ${this.#passed} passed, ${this.#failed} failed`);
    if (this.#failed > 0) process.exitCode = 1;
    return result;
  }
}

function indent(text: string): string {
  return text.split("\n").map((line) => `      ${line}`).join("\n");
}
