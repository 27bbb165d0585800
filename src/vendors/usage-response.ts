/**
 * Usage from a whole (non-streamed) JSON response, read from a clone so the caller's body stays
 * unread.
 *
 * @module
 */

import { positiveInteger } from "../validate.ts";
import { VENDOR_DEFAULTS } from "./defaults.ts";
import type { Usage } from "./types.ts";
import { readAnthropicUsage, readOpenAIUsage, usageVendor } from "./usage.ts";

/** Options for {@link readJsonUsage}. */
export interface JsonUsageOptions {
  /** Whose `usage` shape to read. */
  readonly vendor: "openai" | "anthropic";
  /**
   * A body longer than this many bytes is not read (the clone is cancelled) and gives `undefined`,
   * so a huge response is never held twice.
   * @default 8388608 (8 MiB)
   */
  readonly maxBytes?: number;
}

/**
 * Reads the `usage` of a JSON response from a clone of it: the caller's body stays unread and
 * whole. The clone is read to its end (up to `maxBytes`) and parsed.
 *
 * @returns the usage, or `undefined` when the body is absent, used, over `maxBytes`, not JSON, or
 *   has no usage. Never rejects for the body's sake (a read error gives `undefined`).
 * @throws {RangeError} when `maxBytes` is not a positive integer; {@link TypeError} for an unknown
 *   `vendor` (both as rejections).
 * @example
 * ```ts
 * const response = await fetch("https://api.anthropic.com/v1/messages", init);
 * const usage = await readJsonUsage(response, { vendor: "anthropic" });
 * const message = await response.json(); // still readable
 * ```
 */
export async function readJsonUsage(response: Response, options: JsonUsageOptions): Promise<Usage | undefined> {
  const maxBytes = options.maxBytes === undefined ? VENDOR_DEFAULTS.maxJsonBytes : positiveInteger("maxBytes", options.maxBytes);
  const read = usageVendor(options.vendor) === "anthropic" ? readAnthropicUsage : readOpenAIUsage;
  let copy: Response;
  try {
    if (response.body === null) return undefined;
    copy = response.clone();
  } catch {
    return undefined;
  }
  const reader = copy.body!.getReader();
  const parts: Uint8Array[] = [];
  let length = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      length += value.byteLength;
      if (length > maxBytes) {
        reader.cancel().catch(() => {});
        return undefined;
      }
      parts.push(value);
    }
  } catch {
    return undefined;
  }
  const bytes = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.byteLength;
  }
  try {
    return read(JSON.parse(new TextDecoder().decode(bytes)));
  } catch {
    return undefined;
  }
}
