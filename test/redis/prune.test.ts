/**
 * The scripts' preludes are derived from the one shared prelude (`prune.ts`): only the helpers an
 * operation reaches, a policy kind's helpers built only when the call has that kind. The scripts'
 * behaviour is covered by the other Redis suites (the differential test against the reference model
 * runs every kind mix through them); this suite pins the derivation itself.
 */
import type { Redis } from "ioredis";
import { expect, test } from "vitest";
import { PRELUDE } from "../../src/integrations/redis/lua.ts";
import { specialisePrelude, splitPrelude } from "../../src/integrations/redis/prune.ts";
import { SCRIPTS } from "../../src/integrations/redis/scripts.ts";
import { describeRedis, useRedis } from "./server.ts";

/** The helpers a script source builds (`local function x` or, inside a kind's block, `function x`). */
function built(source: string): string[] {
  return [...source.matchAll(/^(?:local )?function (\w+)/gm)].map((m) => m[1]!);
}

test("the prelude splits into units that join back to it exactly, one per helper", () => {
  const units = splitPrelude(PRELUDE);
  expect(units.map((u) => u.text).join("\n")).toBe(PRELUDE);
  const names = units.flatMap((u) => (u.name === null ? [] : [u.name]));
  expect(names).toEqual(built(PRELUDE));
  expect(names.length).toBeGreaterThan(25);
});

test("each operation builds only what it reaches; a kind's helpers sit inside that kind's block", () => {
  const reserve = built(SCRIPTS.reserve.source);
  for (const settleOnly of ["s_adjust", "s_restore", "s_load", "w_ttl"]) expect(reserve).not.toContain(settleOnly);
  for (const needed of ["s_take", "s_save", "w_earliest", "w_trim", "rec_parse"]) expect(reserve).toContain(needed);
  // The counts bench/redis.ts states: 9 shared + 8 smooth (17), 9 + 5 window (14), 22 for both, of 27.
  const blocks = (kind: string): number => built(new RegExp(`^if HAS_${kind} then\\n([\\s\\S]*?)^end -- HAS_${kind}$`, "m").exec(SCRIPTS.reserve.source)![1]!).length;
  expect([reserve.length - blocks("S") - blocks("W"), blocks("S"), blocks("W"), built(PRELUDE).length]).toEqual([9, 8, 5, 27]);
  const pause = built(SCRIPTS.pause.source);
  expect(pause).toContain("s_pause");
  expect(pause).not.toContain("w_trim");
  for (const [op, { source }] of Object.entries(SCRIPTS)) {
    const found = [...source.matchAll(/^if HAS_([SW]) then\n([\s\S]*?)^end -- HAS_\1$/gm)];
    // a window's pause writes its key directly: no window helper
    expect(found.map((b) => b[1])).toEqual(op === "pause" ? ["S"] : ["S", "W"]);
    for (const block of found) {
      const inside = built(block[2]!);
      expect(inside.length).toBeGreaterThan(0);
      for (const name of inside) expect(name.startsWith(`${block[1]!.toLowerCase()}_`)).toBe(true);
    }
    // No prelude helper of a kind is built outside its block (it would be built on every call); the
    // prelude ends where every body starts, with the call's time.
    const prelude = source.slice(0, source.indexOf("\nlocal now = now_us()"));
    expect(prelude.length).toBeGreaterThan(1000);
    expect(prelude).not.toMatch(/^local function [sw]_/m);
  }
});

describeRedis("specialised preludes on Redis", () => {
  let redis!: Redis;
  useRedis((_, r) => (redis = r));

  test("a call builds the helpers of its policies' kinds only; an absent kind's helper is nil, not a global", async () => {
    const body = "return { s_next ~= nil and 1 or 0, w_parse ~= nil and 1 or 0 }";
    const source = specialisePrelude(PRELUDE, body) + body;
    const run = (policies: string): Promise<unknown> => redis.eval(source, 0, "", "0", "", "0 0 0 0 0", policies);
    expect(await run("s 10 1000000 0 0")).toEqual([1, 0]);
    expect(await run("w 10 1000000 0 0")).toEqual([0, 1]);
    expect(await run("w 10 1000000 0 0 s 5 1000000 1 1")).toEqual([1, 1]);
    // A call reaching a helper of a kind it lacks fails loudly instead of reading a global.
    const wrong = "return s_next({})";
    await expect(redis.eval(specialisePrelude(PRELUDE, wrong) + wrong, 0, "", "0", "", "0 0 0 0 0", "w 10 1000000 0 0"))
      .rejects.toThrow(/nil value/);
  });
});
