/**
 * Argument checks with one message pattern: the option's name and the value it got, e.g.
 * ``RangeError: `limit` must be a positive integer, got -3``. A value of the wrong type is a
 * `TypeError`; a number out of range is a `RangeError`.
 *
 * @module
 */

/** Renders a bad value for a message: numbers as written, strings quoted, objects by type. */
export function describeValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") return String(value);
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (typeof value === "function") return "a function";
  if (Array.isArray(value)) return "an array";
  return `an object (${Object.prototype.toString.call(value).slice(8, -1)})`;
}

function expectNumber(name: string, value: unknown): asserts value is number {
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
  if (typeof value !== "object") throw new TypeError(`\`${name}\` must be an object, got ${describeValue(value)}`);
  return value;
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
