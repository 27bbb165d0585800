/**
 * Formats and helpers the vendor simulators share: Go durations (OpenAI), RFC 3339 (Anthropic),
 * HTTP-dates, a character-based token estimate, JSON replies.
 *
 * @module
 */
import { describeValue } from "../validate.ts";
import type { SimulatedReply } from "./server.ts";

/**
 * The default wall-clock time of virtual `now = 0`: 2026-01-01T00:00:00Z, so headers are the same on every run.
 *
 * @example
 * ```ts
 * new Date(DEFAULT_EPOCH_MS).toISOString(); // "2026-01-01T00:00:00.000Z"
 * ```
 */
export const DEFAULT_EPOCH_MS: number = Date.UTC(2026, 0, 1);

/**
 * A duration as Go's `time.Duration.String()` prints it, which OpenAI's `x-ratelimit-reset-*` use:
 * `"0s"`, `"12ms"`, `"1s"`, `"1.5s"`, `"6m0s"`, `"1h0m0s"`. Rounded up to whole ms, never early.
 *
 * @example
 * ```ts
 * import { goDuration } from "sluice/testing";
 * goDuration(360_000); // "6m0s"
 * goDuration(11.2);    // "12ms"
 * ```
 */
export function goDuration(ms: number): string {
  let rest = Math.max(0, Math.ceil(ms - 1e-9));
  if (rest === 0) return "0s";
  if (rest < 1000) return `${rest}ms`;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = `${Math.floor(rest / 1000)}${rest % 1000 === 0 ? "" : `.${String(rest % 1000).padStart(3, "0").replace(/0+$/, "")}`}s`;
  if (hours > 0) return `${hours}h${minutes}m${seconds}`;
  if (minutes > 0) return `${minutes}m${seconds}`;
  return seconds;
}

/** An RFC 3339 UTC timestamp to the second, rounded up (`2026-01-01T00:01:00Z`), as Anthropic sends. @internal */
export function rfc3339(epochMs: number): string {
  return new Date(Math.ceil(epochMs / 1000 - 1e-9) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** An IMF-fixdate for the `Date` header. @internal */
export function httpDate(epochMs: number): string {
  return new Date(Math.floor(epochMs / 1000) * 1000).toUTCString();
}

/**
 * The simulators' tokenizer: one token per 4 characters, rounded up — OpenAI's own rule of thumb
 * ("one token ≈ 4 characters of English"); real tokenizers differ, which is the point of settling.
 *
 * @example
 * ```ts
 * import { estimateTokens } from "sluice/testing";
 * estimateTokens("Hello, world"); // 3
 * ```
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** The text of a chat message's `content`: a string, or an array of parts with `text`. @internal */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p?.text === "string" ? p.text : "")).join("");
  return "";
}

/** A JSON reply. @internal */
export function json(status: number, body: unknown, headers: Record<string, string>): SimulatedReply {
  return { status, headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(body) };
}

/** Reads a JSON request body, or undefined when it is not a JSON object. @internal */
export async function readJson(request: Request): Promise<Record<string, unknown> | undefined> {
  try {
    const body: unknown = JSON.parse(await request.text());
    return typeof body === "object" && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A non-negative integer field of a request body, or undefined. @internal */
export function intField(body: Record<string, unknown>, name: string): number | undefined {
  const v = body[name];
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : undefined;
}

/** Checks a per-minute figure of a vendor's limits. @internal */
export function perMinute(name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`\`${name}\` must be a positive integer, got ${describeValue(value)}`);
  }
  return value;
}

/** A completion-length function's result, checked. @internal */
export function tokenCount(name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`\`${name}\` must return a non-negative integer, got ${describeValue(value)}`);
  }
  return value;
}
