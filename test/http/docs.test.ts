/**
 * README.md (its Throttled fetch section) cannot drift from the code: every default in its options table must equal
 * the one in DEFAULTS, and every option the table names must exist in ThrottledFetchOptions.
 */
import { readFileSync } from "node:fs";
import { expect, test } from "vitest";
import { DEFAULTS } from "../../src/defaults.ts";

const doc = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const table = doc.slice(doc.indexOf("## Options"), doc.indexOf("## The retry rule"));
/** [names in the first cell, the default cell] for each option row. */
const rows = [...table.matchAll(/^\| (`[^|]+) \| ([^|]+) \|/gm)]
  .map((m) => [[...m[1]!.matchAll(/`([^`]+)`/g)].map((n) => n[1]!), m[2]!.trim()] as const);

/** Where each documented default lives in DEFAULTS. */
const defaults: Record<string, unknown> = {
  permits: DEFAULTS.permits,
  slotTimeout: DEFAULTS.slotTimeout,
  timeout: DEFAULTS.timeout,
  totalTimeout: DEFAULTS.totalTimeout,
  "retry.limit": DEFAULTS.retry.limit,
  "retry.methods": DEFAULTS.retry.methods,
  "retry.statusCodes": DEFAULTS.retry.statusCodes,
  "retry.maxRetryAfter": DEFAULTS.retry.maxRetryAfter,
  "retry.backoff.base": DEFAULTS.retry.backoff.base,
  "retry.backoff.cap": DEFAULTS.retry.backoff.cap,
  "retry.budget.ratio": DEFAULTS.retry.budget.ratio,
  "retry.budget.reserve": DEFAULTS.retry.budget.reserve,
  lenientRetryAfter: DEFAULTS.lenientRetryAfter,
  rateLimitHeaders: DEFAULTS.rateLimitHeaders,
  idempotencyKey: DEFAULTS.idempotencyKey,
  adaptive: DEFAULTS.adaptive,
  "idempotencyKey.header": DEFAULTS.idempotencyKeyHeader,
};

function literal(cell: string): unknown {
  const code = /^`(.*)`$/.exec(cell)?.[1];
  if (code === undefined) return undefined; // prose ("the request's origin", "—")
  if (code === "Infinity") return Infinity;
  try {
    return JSON.parse(code);
  } catch {
    return undefined; // a name such as `systemClock` or `Date.now`, described in prose
  }
}

test("every literal default in the options table equals DEFAULTS", () => {
  let checked = 0;
  for (const [names, cell] of rows) {
    const documented = literal(cell);
    if (documented === undefined) continue;
    const name = names[0]!;
    expect(Object.keys(defaults), `no DEFAULTS entry for documented option ${name}`).toContain(name);
    expect(documented, name).toEqual(defaults[name]);
    checked++;
  }
  expect(checked).toBe(Object.keys(defaults).length);
});

test("the table documents every option", () => {
  const documented = new Set(rows.flatMap(([names]) => names));
  const source = readFileSync(new URL("../../src/http/options.ts", import.meta.url), "utf8");
  const body = source.slice(source.indexOf("export interface ThrottledFetchOptions"));
  const options = [...body.slice(0, body.indexOf("\n}\n")).matchAll(/^ {2}(\w+)\?:/gm)].map((m) => m[1]!);
  expect(options.length).toBeGreaterThan(15);
  for (const option of options) expect(documented, option).toContain(option);
});
