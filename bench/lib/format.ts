/**
 * Number formatting and markdown tables for RESULTS.md and the console.
 *
 * @module
 */

/** A markdown table; every row must have one cell per header. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[], align?: readonly ("l" | "r")[]): string {
  const sep = headers.map((_, i) => (align?.[i] === "r" ? "---:" : "---"));
  const line = (cells: readonly string[]): string => `| ${cells.map((c) => c.replaceAll("|", "\\|")).join(" | ")} |`;
  return [line(headers), `| ${sep.join(" | ")} |`, ...rows.map(line)].join("\n");
}

/** 3 significant digits, with thousands separators for large values: 1,234 · 12.3 · 0.123. */
export function num(value: number, digits = 3): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (abs >= 10 ** digits) return Math.round(value).toLocaleString("en-US");
  return Number(value.toPrecision(digits)).toLocaleString("en-US", { maximumFractionDigits: 6 });
}

/** Nanoseconds, switching to µs/ms when large: 212 ns · 3.4 µs · 1.2 ms. */
export function ns(value: number): string {
  if (value >= 1e6) return `${num(value / 1e6)} ms`;
  if (value >= 1e4) return `${num(value / 1e3)} µs`;
  return `${num(value)} ns`;
}

/** Milliseconds with a unit. */
export function ms(value: number): string {
  if (Math.abs(value) >= 10_000) return `${num(value / 1000)} s`;
  return `${num(value)} ms`;
}

/** Operations per second from ns per operation: 4.9 M/s · 410 /s. */
export function perSecond(nsPerOp: number): string {
  const rate = 1e9 / nsPerOp;
  if (rate >= 1e6) return `${num(rate / 1e6)} M/s`;
  if (rate >= 1e4) return `${num(rate / 1e3)} k/s`;
  return `${num(rate)} /s`;
}

/** A ratio such as "3.2×". */
export function ratio(value: number): string {
  return `${num(value, 2)}×`;
}

/** Bytes with a unit. */
export function bytes(value: number): string {
  if (Math.abs(value) >= 1024 * 1024) return `${num(value / 1024 / 1024)} MiB`;
  return `${num(value)} B`;
}

/** A percentage from a fraction: 0.9934 → "99.3%". */
export function percent(fraction: number): string {
  return `${num(fraction * 100, 3)}%`;
}
