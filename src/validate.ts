/**
 * Argument checks with one message pattern: the option's name and the value it got, e.g.
 * ``RangeError: `limit` must be a positive integer, got -3``. A value of the wrong type is a
 * `TypeError`; a number out of range is a `RangeError`.
 *
 * @module
 */

/** How many keys of an object, or items of an array, a message shows. */
const SHOWN = 6;

/**
 * Renders a bad value for a message: numbers as written, strings quoted (and cut at 40 characters),
 * arrays by their first items, objects by their keys — never their values, which may hold secrets
 * (a headers object, a token) — and instances by their class.
 */
export function describeValue(value: unknown): string {
  if (Array.isArray(value)) {
    const items = value.slice(0, SHOWN).map(describeShallow);
    if (value.length > SHOWN) items.push("…");
    return `an array [${items.join(", ")}]${value.length > SHOWN ? ` (${value.length} items)` : ""}`;
  }
  if (typeof value === "object" && value !== null) {
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== null && proto !== Object.prototype) {
      const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
      return typeof name === "string" && name !== "" ? `${/^[AEIOU]/.test(name) ? "an" : "a"} ${name}` : "an object";
    }
    const keys = Object.keys(value);
    const shown = keys.slice(0, SHOWN);
    if (keys.length > SHOWN) shown.push("…");
    return `an object {${shown.join(", ")}}`;
  }
  return describeShallow(value);
}

/** A primitive as written; an array or object only by its kind (inside an array). */
function describeShallow(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === "number") return Object.is(value, -0) ? "-0" : String(value);
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "function") return "a function";
  if (typeof value === "object" && value !== null) return Array.isArray(value) ? "an array" : "an object";
  return String(value); // a boolean, symbol, null or undefined
}

/** A number, else a TypeError naming the option and the value. */
export function expectNumber(name: string, value: unknown): asserts value is number {
  if (typeof value !== "number") throw new TypeError(`\`${name}\` must be a number, got ${describeValue(value)}`);
}

/** A safe integer > 0. */
export function positiveInteger(name: string, value: unknown): number {
  expectNumber(name, value);
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`\`${name}\` must be a positive integer, got ${describeValue(value)}`);
  }
  return value;
}

/** A safe integer ≥ 0. */
export function nonNegativeInteger(name: string, value: unknown): number {
  expectNumber(name, value);
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`\`${name}\` must be a non-negative integer, got ${describeValue(value)}`);
  }
  return value;
}

/** A finite number > 0. */
export function positiveFinite(name: string, value: unknown): number {
  expectNumber(name, value);
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(`\`${name}\` must be a positive finite number, got ${describeValue(value)}`);
  }
  return value;
}

/** A finite number ≥ 0. */
export function nonNegativeFinite(name: string, value: unknown): number {
  expectNumber(name, value);
  if (!Number.isFinite(value) || value < 0) {
    throw new RangeError(`\`${name}\` must be a non-negative finite number, got ${describeValue(value)}`);
  }
  return value;
}

/**
 * The shortest interval a limiter accepts, in ms: 1 µs. Limiters compute grant times by adding
 * intervals to clock times, and that must move time forward exactly: at 1 µs and above, `t +
 * interval > t` and window indices `t / interval` stay exact integers for every clock time within
 * ±{@link MAX_EXACT_TIME}. (A shorter one, such as 1e-300, vanishes in the addition: every window
 * would start at the same instant and grant without bound.)
 */
export const MIN_INTERVAL = 0.001;

/** The largest clock time, in ms, at which 1 µs steps stay exact: 2⁵³ µs, about 285 years. */
export const MAX_EXACT_TIME = Number.MAX_SAFE_INTEGER / 1000;

/** A time span of at least {@link MIN_INTERVAL} ms, finite. */
export function timeInterval(name: string, value: unknown): number {
  expectNumber(name, value);
  if (!Number.isFinite(value) || !(value >= MIN_INTERVAL)) {
    throw new RangeError(`\`${name}\` must be a finite number of ms, at least ${MIN_INTERVAL} (1 µs), got ${describeValue(value)}`);
  }
  return value;
}

/** A clock time: a finite number within ±{@link MAX_EXACT_TIME}. */
export function clockTime(name: string, value: unknown): number {
  expectNumber(name, value);
  if (!(Math.abs(value) <= MAX_EXACT_TIME)) {
    throw new RangeError(
      `\`${name}\` must be a finite number of ms within ±2^53 µs (about ±9.007e12 ms), got ${describeValue(value)}`,
    );
  }
  return value;
}

/** A safe integer ≥ 0, or `Infinity` for "no limit". */
export function nonNegativeIntegerOrInfinity(name: string, value: unknown): number {
  expectNumber(name, value);
  if (value !== Infinity && (!Number.isSafeInteger(value) || value < 0)) {
    throw new RangeError(`\`${name}\` must be a non-negative integer or Infinity, got ${describeValue(value)}`);
  }
  return value;
}

/** A number ≥ 0, where `Infinity` means "no limit". */
export function nonNegativeOrInfinity(name: string, value: unknown): number {
  expectNumber(name, value);
  if (Number.isNaN(value) || value < 0) {
    throw new RangeError(`\`${name}\` must be a non-negative number or Infinity, got ${describeValue(value)}`);
  }
  return value;
}

/** An `AbortSignal`-like object (checked by shape so signals from other realms pass). */
export function optionalSignal(name: string, value: unknown): AbortSignal | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "object" || typeof (value as AbortSignal).addEventListener !== "function" ||
    typeof (value as AbortSignal).aborted !== "boolean") {
    throw new TypeError(`\`${name}\` must be an AbortSignal, got ${describeValue(value)}`);
  }
  return value as AbortSignal;
}

/** A function. */
export function requireFunction<T>(name: string, value: T): T {
  if (typeof value !== "function") throw new TypeError(`\`${name}\` must be a function, got ${describeValue(value)}`);
  return value;
}

/** An options object (or undefined). */
export function optionsObject<T extends object>(name: string, value: T | undefined): Partial<T> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value) || isBuiltIn(value)) {
    throw new TypeError(`\`${name}\` must be an object, got ${Array.isArray(value) ? "an array" : describeValue(value)}`);
  }
  return value;
}

/**
 * A Map, Set, Date, Promise… is an object too, but its entries are not options: read as one, it would
 * silently stand for {} and every default would apply (`adaptive: new Map([["limit", 5]])`). A plain
 * object (the usual case) is answered by its prototype alone; a class instance or a module namespace
 * still counts as options (an object naming itself with `Symbol.toStringTag` does not).
 */
function isBuiltIn(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) return false;
  // By the built-in tag, so a Map from another realm (a vm context, an iframe) and platform objects
  // (Headers, URLSearchParams…) are caught too; a module namespace ("Module") is a bag of values.
  const tag = Object.prototype.toString.call(value);
  return tag !== "[object Object]" && tag !== "[object Module]";
}

/**
 * Throws a TypeError naming the first key of `options` that is not in `known`, with the nearest known
 * name when one is close: a misspelt option (`intervall`, `brust`) would otherwise be ignored without
 * a word and its default used. Only for option bags read once (constructors, factories), never on a
 * per-call path.
 *
 * @example
 * ```ts
 * onlyKnown("WindowLimiter", { limit: 5, intervall: 1000 }, ["limit", "interval"]);
 * // TypeError: `intervall` is not an option of WindowLimiter (did you mean `interval`?)
 * ```
 */
export function onlyKnown(owner: string, options: object, known: readonly string[]): void {
  for (const name of Object.keys(options)) {
    if (known.includes(name)) continue;
    let near: string | undefined;
    let best = Infinity;
    for (const k of known) {
      const d = editDistance(k.toLowerCase(), name.toLowerCase());
      if (d < best && d <= (k.length < 5 ? 1 : 2)) [near, best] = [k, d];
    }
    throw new TypeError(`\`${name}\` is not an option of ${owner}${near === undefined ? "" : ` (did you mean \`${near}\`?)`}`);
  }
}

/** Levenshtein distance (insertions, deletions, substitutions), for {@link onlyKnown}'s hint. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length]!;
}

/**
 * Every key of `T`, checked by the compiler: `keysOf<Options>()("a", "b")` fails to compile when
 * `Options` has a key not listed (or a listed one it lacks), so a list for {@link onlyKnown} cannot
 * fall behind its interface.
 *
 * @example
 * ```ts
 * const KNOWN = keysOf<{ limit?: number; interval?: number }>()("limit", "interval");
 * ```
 */
export function keysOf<T>() {
  return <const K extends readonly (keyof T & string)[]>(
    ...keys: K & ([Exclude<keyof T & string, K[number]>] extends [never] ? unknown : { missing: Exclude<keyof T & string, K[number]> })
  ): K => keys;
}

/**
 * A permit count: a safe integer from 1 to `max`, the most a limiter can ever grant (a larger
 * request could only wait forever, so it is refused at once).
 */
export function checkPermits(permits: unknown, max: number): asserts permits is number {
  positiveInteger("permits", permits);
  if ((permits as number) > max) {
    throw new RangeError(`\`permits\` must be at most ${max} for this limiter (it can never grant more), got ${permits}`);
  }
}

/**
 * True for a promise (or any thenable): what an `async` hook returns.
 *
 * @example
 * ```ts
 * isThenable(Promise.resolve(1)); // true
 * isThenable(1);                  // false
 * ```
 */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === "object" || typeof value === "function") && typeof (value as { then?: unknown }).then === "function";
}

/**
 * A hook's answer where a plain value is needed: a promise (an `async` hook) gets a rejection
 * handler, so it is not reported as unhandled once the caller throws the TypeError naming it.
 *
 * @example
 * ```ts
 * if (typeof p !== "number") { quietly(p); throw new TypeError(`\`priority\` must return a finite number, got ${describeValue(p)}`); }
 * ```
 */
export function quietly(value: unknown): void {
  if (isThenable(value)) value.then(undefined, () => {});
}
