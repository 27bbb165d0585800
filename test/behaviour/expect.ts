/**
 * A small `expect` for the behavioural suite: the vitest/Jest matchers the cases use, with the same
 * meaning, and nothing runtime-specific, so one case file runs on Node, Deno, Bun and in a browser.
 *
 * @module
 */

/** Thrown when an expectation fails. */
export class AssertionError extends Error {
  override name = "AssertionError";
}

type ErrorClass = abstract new (...args: never[]) => unknown;
type ErrorMatcher = ErrorClass | RegExp | string;

export interface Matchers {
  /** `Object.is` equality. */
  toBe(expected: unknown): void;
  /** Deep equality of primitives, arrays and plain objects. */
  toEqual(expected: unknown): void;
  toBeInstanceOf(ctor: ErrorClass): void;
  toBeGreaterThan(n: number): void;
  toBeGreaterThanOrEqual(n: number): void;
  toBeLessThan(n: number): void;
  toBeLessThanOrEqual(n: number): void;
  toMatch(pattern: RegExp | string): void;
  /** The value is a function that throws; optionally an error of this class / matching this message. */
  toThrow(...expected: ErrorMatcher[]): void;
  /** The value is an object with these property values (deep equality), others ignored. */
  toMatchObject(expected: Record<string, unknown>): void;
}

export interface Expectation extends Matchers {
  readonly not: Matchers;
  /** The value is a promise that rejects; the matchers apply to its reason. */
  readonly rejects: AsyncMatchers;
  /** The value is a promise that fulfils; the matchers apply to its value. */
  readonly resolves: AsyncMatchers;
}

export type AsyncMatchers = { [K in keyof Matchers]: (...args: Parameters<Matchers[K]>) => Promise<void> };

/** Renders a value for a failure message. */
export function show(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "function") return `[Function ${value.name || "anonymous"}]`;
  if (typeof value === "bigint") return `${value}n`;
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  if (Array.isArray(value)) return `[${value.map(show).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).map(([k, v]) => `${k}: ${show(v)}`);
    const tag = Object.getPrototypeOf(value) === Object.prototype ? "" : `${value.constructor?.name ?? "Object"} `;
    return `${tag}{ ${entries.join(", ")} }`;
  }
  return Object.is(value, -0) ? "-0" : String(value);
}

/** Deep equality: `Object.is` for primitives, element-wise for arrays, key-wise for plain objects. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  return keysA.every((k) => Object.hasOwn(b, k) && deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

function errorMatches(error: unknown, expected: ErrorMatcher): boolean {
  if (typeof expected === "function") return error instanceof expected;
  const message = error instanceof Error ? error.message : String(error);
  return typeof expected === "string" ? message.includes(expected) : expected.test(message);
}

function describeMatcher(expected: ErrorMatcher): string {
  return typeof expected === "function" ? expected.name : show(expected);
}

/** Each matcher as a check: returns whether it passed and how to describe the expectation. */
function checks(actual: unknown): { [K in keyof Matchers]: (...args: Parameters<Matchers[K]>) => [boolean, string] } {
  const number = (op: string, n: number, pass: (x: number) => boolean): [boolean, string] => [
    typeof actual === "number" && pass(actual),
    `expected ${show(actual)} to be ${op} ${show(n)}`,
  ];
  return {
    toBe: (expected) => [Object.is(actual, expected), `expected ${show(actual)} to be ${show(expected)}`],
    toEqual: (expected) => [deepEqual(actual, expected), `expected ${show(actual)} to equal ${show(expected)}`],
    toBeInstanceOf: (ctor) => [actual instanceof ctor, `expected ${show(actual)} to be an instance of ${ctor.name}`],
    toBeGreaterThan: (n) => number(">", n, (x) => x > n),
    toBeGreaterThanOrEqual: (n) => number(">=", n, (x) => x >= n),
    toBeLessThan: (n) => number("<", n, (x) => x < n),
    toBeLessThanOrEqual: (n) => number("<=", n, (x) => x <= n),
    toMatch: (pattern) => [
      typeof actual === "string" && (typeof pattern === "string" ? actual.includes(pattern) : pattern.test(actual)),
      `expected ${show(actual)} to match ${show(pattern)}`,
    ],
    toThrow: (...expected) => {
      if (typeof actual !== "function") return [false, `expected a function, got ${show(actual)}`];
      try {
        (actual as () => unknown)();
      } catch (error) {
        const mismatch = expected.find((e) => !errorMatches(error, e));
        return [
          mismatch === undefined,
          `expected the function to throw ${expected.map(describeMatcher).join(" with ")}, it threw ${show(error)}`,
        ];
      }
      return [false, `expected the function to throw${expected.length ? ` ${expected.map(describeMatcher).join(" with ")}` : ""}, it returned`];
    },
    toMatchObject: (expected) => {
      const ok = actual !== null && typeof actual === "object" &&
        Object.entries(expected).every(([k, v]) => deepEqual((actual as Record<string, unknown>)[k], v));
      return [ok, `expected ${show(actual)} to match ${show(expected)}`];
    },
  };
}

function matchers(actual: unknown, negate: boolean): Matchers {
  const all = checks(actual);
  const out: Record<string, (...args: never[]) => void> = {};
  for (const [name, check] of Object.entries(all)) {
    out[name] = (...args: never[]) => {
      const [pass, message] = (check as (...a: never[]) => [boolean, string])(...args);
      if (pass === negate) throw new AssertionError(negate ? `not: ${message}` : message);
    };
  }
  return out as unknown as Matchers;
}

function settledMatchers(promise: unknown, want: "fulfilled" | "rejected"): AsyncMatchers {
  const out: Record<string, (...args: never[]) => Promise<void>> = {};
  for (const name of Object.keys(checks(undefined))) {
    out[name] = async (...args: never[]) => {
      if (typeof (promise as PromiseLike<unknown>)?.then !== "function") {
        throw new AssertionError(`expected a promise, got ${show(promise)}`);
      }
      let value: unknown;
      let state: "fulfilled" | "rejected";
      try {
        value = await promise;
        state = "fulfilled";
      } catch (error) {
        value = error;
        state = "rejected";
      }
      if (state !== want) {
        throw new AssertionError(`expected the promise to be ${want}, it was ${state} with ${show(value)}`);
      }
      // For `rejects.toThrow(...)`, the reason itself is what must match.
      const subject = name === "toThrow" ? () => { throw value; } : value;
      (matchers(subject, false) as unknown as Record<string, (...a: never[]) => void>)[name]!(...args);
    };
  }
  return out as unknown as AsyncMatchers;
}

/** Starts an expectation about `actual`. */
export function expect(actual: unknown): Expectation {
  return Object.assign(matchers(actual, false), {
    not: matchers(actual, true),
    get rejects() {
      return settledMatchers(actual, "rejected");
    },
    get resolves() {
      return settledMatchers(actual, "fulfilled");
    },
  });
}

/** The settlement state of a promise, observed without awaiting it: `"pending"` until it settles. */
export function track<T>(promise: Promise<T>): { readonly state: "pending" | "fulfilled" | "rejected"; readonly value?: T; readonly reason?: unknown } {
  const tracked: { state: "pending" | "fulfilled" | "rejected"; value?: T; reason?: unknown } = { state: "pending" };
  promise.then(
    (value) => {
      tracked.state = "fulfilled";
      tracked.value = value;
    },
    (reason: unknown) => {
      tracked.state = "rejected";
      tracked.reason = reason;
    },
  );
  return tracked;
}
