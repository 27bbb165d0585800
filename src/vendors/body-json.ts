/**
 * The JSON of a request body that is already at hand, read without touching any stream.
 *
 * @module
 */

/**
 * Parses a request body as a JSON object. The body must be a value whose content is at hand — a
 * string, `ArrayBuffer` or typed array/`DataView` (UTF-8) — so reading it consumes nothing; a stream,
 * `Blob` or `FormData` is not read (read a `Blob` with `await blob.text()` first).
 *
 * @returns the object, or `undefined` when the body is absent, of another kind, not valid JSON, or
 *   JSON that is not an object (an array, a string, `null`).
 * @example
 * ```ts
 * parseJsonBody('{"model":"gpt-4o"}');                                 // { model: "gpt-4o" }
 * parseJsonBody(new TextEncoder().encode('{"model":"gpt-4o"}'));       // { model: "gpt-4o" }
 * parseJsonBody("not json");                                           // undefined
 * ```
 */
export function parseJsonBody(body: unknown): Record<string, unknown> | undefined {
  let text: string;
  if (typeof body === "string") text = body;
  else if (Object.prototype.toString.call(body) === "[object ArrayBuffer]") text = new TextDecoder().decode(body as ArrayBuffer);
  else if (ArrayBuffer.isView(body)) text = new TextDecoder().decode(new Uint8Array(body.buffer, body.byteOffset, body.byteLength));
  else return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
