/**
 * The counts `npm test` reports come from each runner's JUnit report. These are the report shapes of
 * the four runners we use (trimmed from real output), so a change in how one counts cannot hide a
 * failure from the totals.
 */
import { describe, expect, test } from "vitest";
import { junitCaseNames, parseJunit } from "../../scripts/lib/results.ts";

describe("parseJunit", () => {
  test("vitest: passed, failed and skipped cases", () => {
    const xml = `<?xml version="1.0" encoding="UTF-8" ?>
<testsuites name="vitest tests" tests="3" failures="1" errors="0" time="0.1">
  <testsuite name="test/a.test.ts" tests="3" failures="1" errors="0" skipped="1">
    <testcase classname="test/a.test.ts" name="A › works" time="0.01"></testcase>
    <testcase classname="test/a.test.ts" name="A › breaks" time="0.01">
      <failure message="expected 1 to be 2" type="AssertionError">AssertionError: expected 1 to be 2</failure>
    </testcase>
    <testcase classname="test/a.test.ts" name="A › later" time="0"><skipped/></testcase>
  </testsuite>
</testsuites>`;
    expect(parseJunit(xml)).toEqual({ passed: 1, failed: 1, skipped: 1, failures: ["A › breaks: expected 1 to be 2"] });
  });

  test("node:test: self-closing passes and a failure attribute", () => {
    const xml = `<?xml version="1.0" encoding="utf-8"?>
<testsuites>
	<testcase name="a" time="0.000980" classname="test"/>
	<testcase name="b" time="0.000227" classname="test" failure="x">
		<failure type="testCodeFailure" message="x">[Error [ERR_TEST_FAILURE]: x]</failure>
	</testcase>
	<!-- tests 2 -->
</testsuites>`;
    expect(parseJunit(xml)).toEqual({ passed: 1, failed: 1, skipped: 0, failures: ["b: x"] });
  });

  test("Deno and Bun: names with escaped characters", () => {
    const deno = `<testsuites name="deno test" tests="2" failures="1" errors="0">
    <testsuite name="./t.ts" tests="2" disabled="0" errors="0" failures="1">
        <testcase name="abort gives the caller&apos;s slot back" classname="./t.ts" time="0.000" line="1" col="6">
        </testcase>
        <testcase name="b &amp; c" classname="./t.ts" time="0.002" line="2" col="6">
            <failure message="Uncaught Error: boom">Error: boom</failure>
        </testcase>
    </testsuite>
</testsuites>`;
    expect(parseJunit(deno)).toEqual({ passed: 1, failed: 1, skipped: 0, failures: ["b & c: Uncaught Error: boom"] });
    expect(junitCaseNames(deno)).toEqual(["abort gives the caller's slot back", "b & c"]);
    const bun = `<testsuites name="bun test" tests="2" assertions="1" failures="0" skipped="1">
  <testsuite name="x.mjs" file="x.mjs" tests="2" assertions="1" failures="0" skipped="1">
    <testcase name="a" classname="" time="0.0001" file="x.mjs" line="2" assertions="1" />
    <testcase name="b" classname="" time="0" file="x.mjs" line="3" assertions="0">
      <skipped />
    </testcase>
  </testsuite>
</testsuites>`;
    expect(parseJunit(bun)).toEqual({ passed: 1, failed: 0, skipped: 1, failures: [] });
  });

  test("an error outside any test case (a file that would not load) counts as a failure", () => {
    const xml = `<testsuites><testsuite name="broken.ts" tests="0"><error message="SyntaxError: Unexpected token"/></testsuite></testsuites>`;
    expect(parseJunit(xml)).toEqual({
      passed: 0,
      failed: 1,
      skipped: 0,
      failures: ["(outside any test) SyntaxError: Unexpected token"],
    });
  });
});
