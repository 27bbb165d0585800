/**
 * How much prompt a request body holds, counted the way the vendors' up-front estimates are: by
 * characters. OpenAI counts a request against TPM up front from "the estimated number of tokens
 * based on the character count of your request" (its rate-limits guide, quoted in notes/vendors.md
 * §4.1), so a character estimate mirrors the server's own count; the settle from `usage` then
 * charges the exact figure.
 *
 * Binary payloads (base64 images, audio, files) are not prompt text: vendors bill them by size or
 * tiles, not characters, so their strings are skipped here and left to the settle.
 *
 * @module
 */

/** Keys whose string values are binary payloads or links to them, not text. */
const BINARY_KEYS = new Set(["data", "file_data", "image_url", "url", "image", "audio"]);

/** Keys whose values frame the text rather than being it (the per-message overhead covers them). */
const FRAMING_KEYS = new Set(["type", "role", "media_type", "detail"]);

/** Nesting deeper than this is not walked (a hostile body must not cost unbounded work or stack). */
const MAX_DEPTH = 64;

/**
 * Characters of text in a JSON value: the lengths of its strings (UTF-16 code units, as
 * `String.length` counts), skipping binary payloads (strings under `data`, `file_data`,
 * `image_url`, `url`, `image`, `audio`, and any `data:` URL) and framing (`type`, `role`,
 * `media_type`, `detail`).
 *
 * @example
 * ```ts
 * textChars([{ role: "user", content: "Hello" }]);                           // 5
 * textChars({ type: "image_url", image_url: { url: "https://…/cat.png" } }); // 0
 * ```
 */
export function textChars(value: unknown): number {
  let chars = 0;
  const stack: [unknown, number, boolean][] = [[value, 0, false]];
  while (stack.length > 0) {
    const [item, depth, binary] = stack.pop()!;
    if (typeof item === "string") {
      if (!binary && !item.startsWith("data:")) chars += item.length;
    } else if (typeof item === "object" && item !== null && depth < MAX_DEPTH) {
      if (Array.isArray(item)) for (const child of item) stack.push([child, depth + 1, binary]);
      else for (const [key, child] of Object.entries(item)) stack.push([child, depth + 1, binary || BINARY_KEYS.has(key) || FRAMING_KEYS.has(key)]);
    }
  }
  return chars;
}

/**
 * Tokens given directly as token ids: a prompt of integers (`[1, 2, 3]`) or a batch of them
 * (`[[1, 2], [3]]`), as OpenAI's completions and embeddings accept. `undefined` when `value` is
 * not such an array (text is counted by {@link textChars} instead).
 *
 * @example
 * ```ts
 * tokenIds([[1, 2], [3]]); // 3
 * tokenIds(["text"]);      // undefined
 * ```
 */
export function tokenIds(value: unknown): number | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  if (value.every(Number.isInteger)) return value.length;
  let count = 0;
  for (const prompt of value) {
    if (!Array.isArray(prompt) || !prompt.every(Number.isInteger)) return undefined;
    count += prompt.length;
  }
  return count;
}

/**
 * Characters of a value as the vendor sees it serialised — tool and schema definitions reach the
 * model as JSON, keys included. 0 for an absent value.
 *
 * @example
 * ```ts
 * jsonChars({ name: "f" }); // 12
 * jsonChars(undefined);     // 0
 * ```
 */
export function jsonChars(value: unknown): number {
  if (value === undefined || value === null) return 0;
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return 0;
  }
}

/**
 * A body field that is a non-negative safe integer (`max_tokens`, `n`), else `undefined`.
 *
 * @example
 * ```ts
 * integerField({ max_tokens: 256 }, "max_tokens"); // 256
 * integerField({ max_tokens: "256" }, "max_tokens"); // undefined
 * ```
 */
export function integerField(body: Record<string, unknown>, key: string): number | undefined {
  const value = body[key];
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/**
 * The `model` field when it is a non-empty string (the key of a per-model budget).
 *
 * @example
 * ```ts
 * modelOf({ model: "gpt-4o-mini" }); // "gpt-4o-mini"
 * ```
 */
export function modelOf(body: Record<string, unknown>): string | undefined {
  return typeof body.model === "string" && body.model !== "" ? body.model : undefined;
}
