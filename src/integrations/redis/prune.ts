/**
 * Builds, from the one shared prelude (`lua.ts`) and an operation's body, the script that operation
 * sends: only the helpers the body can reach, and a policy kind's helpers only when the call's
 * policies include that kind.
 *
 * Why: a script's top-level `local function`s are closures built again on EVERY call (Redis runs the
 * whole chunk each time; a script cannot keep globals between calls), and building the prelude's ~30
 * helpers costs a few µs — a large share of one lone decision. No reserve calls the settle helpers,
 * and a smooth-only call never calls a window helper. Still ONE script per operation, whatever the
 * policies: calls pipelined on one connection keep their order even when the server has just lost
 * its script cache (each NOSCRIPT resend goes out behind the calls already sent, and several scripts
 * per operation would let a loaded variant overtake a resent one). The Lua stays in one place; the
 * script is derived from it at module load, so nothing can drift apart.
 *
 * The prelude is split into top-level units: a `local function NAME` with the indented lines and the
 * `end` that follow it (and the comment lines just before it), or any other top-level statement
 * (always kept). A unit is kept when the body, or a kept unit, names it. The kept helpers of a kind
 * (`s_…` smooth, `w_…` window) are declared as locals up front and built inside
 * `if <the policies include that kind> then … end`; a helper of an absent kind stays nil, so a call
 * reaching one by mistake fails loudly ("attempt to call a nil value") instead of reading a global.
 *
 * @module
 */

/** One top-level piece of the prelude. @internal */
export interface Unit {
  /** The helper's name, or null for a statement that is always kept. */
  readonly name: string | null;
  readonly text: string;
  /** Identifiers the unit's code (comments stripped) mentions. */
  readonly refs: ReadonlySet<string>;
}

/** Splits `prelude` into its top-level units, in order; joined back they give `prelude` exactly. @internal */
export function splitPrelude(prelude: string): Unit[] {
  const lines = prelude.split("\n");
  const units: { name: string | null; lines: string[] }[] = [];
  let pending: string[] = [];
  let current: { name: string | null; lines: string[] } | null = null;
  for (const line of lines) {
    const fn = /^local function (\w+)/.exec(line);
    if (fn) {
      current = { name: fn[1]!, lines: [...pending, line] };
      pending = [];
      units.push(current);
    } else if (current?.name != null && (/^\s/.test(line) || line === "end")) {
      current.lines.push(line);
    } else if (line.startsWith("--") || line === "") {
      pending.push(line);
      current = null;
    } else {
      current = { name: null, lines: [...pending, line] };
      pending = [];
      units.push(current);
    }
  }
  if (pending.length > 0) units.push({ name: null, lines: pending });
  return units.map((u) => ({ name: u.name, text: u.lines.join("\n"), refs: identifiers(u.lines.join("\n")) }));
}

/** The identifiers `code` mentions outside its `--` comments. */
function identifiers(code: string): Set<string> {
  const stripped = code.replace(/--.*$/gm, "");
  return new Set(stripped.match(/[A-Za-z_]\w*/g) ?? []);
}

/**
 * The prelude for `body`: the reachable helpers in their original order, a kind's helpers built only
 * when ARGV[5] (the policies, `kind limit interval burst initial` each) names that kind. @internal
 *
 * @example
 * ```ts
 * const source = specialisePrelude(PRELUDE, BODY) + BODY;
 * ```
 */
export function specialisePrelude(prelude: string, body: string): string {
  const units = splitPrelude(prelude);
  const byName = new Map(units.filter((u) => u.name !== null).map((u) => [u.name!, u]));
  const kept = new Set<string>();
  const visit = (refs: ReadonlySet<string>): void => {
    for (const ref of refs) {
      const unit = byName.get(ref);
      if (unit === undefined || kept.has(ref)) continue;
      kept.add(ref);
      visit(unit.refs);
    }
  };
  visit(identifiers(body));
  for (const unit of units) if (unit.name === null) visit(unit.refs);
  const kindOf = (u: Unit): string | null => (u.name !== null && /^[sw]_/.test(u.name) ? u.name[0]! : null);
  const declared = [...kept].filter((name) => /^[sw]_/.test(name));
  // The policies' kinds: the first field, or a letter field after a space (every other field is a number).
  const parts = [
    "",
    // (one plain search per kind in ' ' .. ARGV[5] rather than an anchored pattern and a search)
    "local KINDS = ' ' .. ARGV[5]",
    "local HAS_S = string.find(KINDS, ' s ', 1, true) ~= nil",
    "local HAS_W = string.find(KINDS, ' w ', 1, true) ~= nil",
  ];
  if (declared.length > 0) parts.push(`local ${declared.join(", ")}`);
  let open: string | null = null;
  for (const unit of units) {
    if (unit.name !== null && !kept.has(unit.name)) continue;
    const kind = kindOf(unit);
    if (kind !== open) {
      if (open !== null) parts.push(`end -- HAS_${open.toUpperCase()}`);
      if (kind !== null) parts.push(`if HAS_${kind.toUpperCase()} then`);
      open = kind;
    }
    // Inside the block the helper is assigned to its local declared above, not a new local of the block.
    parts.push(kind === null ? unit.text : unit.text.replace(/^local function /m, "function "));
  }
  if (open !== null) parts.push(`end -- HAS_${open.toUpperCase()}`);
  return parts.join("\n");
}
