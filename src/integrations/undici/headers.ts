/**
 * A `HeadersLike` view of the headers undici hands a handler, so the interceptor reads them with the
 * very parsers the throttled fetch uses (`readServerSignals`), not a copy of their logic.
 *
 * undici gives `onResponseStart` an object with lower-case names whose values are strings, or
 * arrays of strings for repeated fields; other handlers and older paths use the raw form, a flat
 * `[name, value, name, value, …]` array of strings or byte buffers. Both become one lower-cased map,
 * and a repeated field reads as its values joined with ", " — exactly what `Headers.get` returns for
 * the same response, so a doubled `Retry-After` is rejected here as it is by the throttled fetch.
 *
 * @module
 */
import type { HeadersLike } from "../../http/headers.ts";

/** One header value as undici may give it. */
type RawValue = string | number | readonly (string | Uint8Array)[] | Uint8Array | null | undefined;

/** Latin-1, as HTTP field bytes are read (undici decodes raw header buffers the same way). */
function text(value: string | number | Uint8Array): string {
  if (typeof value === "string") return value;
  if (typeof value === "number") return String(value);
  let out = "";
  for (let i = 0; i < value.length; i += 1024) out += String.fromCharCode(...value.subarray(i, i + 1024));
  return out;
}

function add(map: Map<string, string>, name: string | Uint8Array, value: RawValue): void {
  if (value === null || value === undefined) return;
  const key = text(name).toLowerCase();
  const joined = Array.isArray(value) ? value.map(text).join(", ") : text(value as string | number | Uint8Array);
  const before = map.get(key);
  map.set(key, before === undefined ? joined : `${before}, ${joined}`);
}

/**
 * Reads undici's response headers (an object or a raw name/value array) like `Headers.get` would.
 *
 * @example
 * ```ts
 * headersView({ "retry-after": "2" }).get("Retry-After"); // "2"
 * headersView(["X-RateLimit-Remaining", "0"]).get("x-ratelimit-remaining"); // "0"
 * ```
 */
export function headersView(headers: unknown): HeadersLike & { keys(): Iterable<string> } {
  let map: Map<string, string> | undefined;
  // Built on the first lookup: most responses carry no rate headers, and `keys()` tells so first.
  const build = (): Map<string, string> => {
    map = new Map<string, string>();
    if (Array.isArray(headers)) {
      for (let i = 0; i + 1 < headers.length; i += 2) add(map, headers[i] as string | Uint8Array, headers[i + 1] as RawValue);
    } else if (typeof headers === "object" && headers !== null) {
      for (const [name, value] of Object.entries(headers)) add(map, name, value as RawValue);
    }
    return map;
  };
  return {
    get: (name) => (map ?? build()).get(name.toLowerCase()) ?? null,
    keys: () =>
      Array.isArray(headers)
        ? headers.filter((_, i) => i % 2 === 0).map((name) => text(name as string | Uint8Array))
        : typeof headers === "object" && headers !== null ? Object.keys(headers) : [],
  };
}

/**
 * False when undici's response headers certainly hold none of the fields `readServerSignals` reads
 * (Retry-After, retry-after-ms, RateLimit, RateLimit-Policy, RateLimit-Remaining/-Limit/-Reset,
 * X-RateLimit-*, X-Rate-Limit-*); true when they may. Reads the names in
 * place, without the view's map.
 *
 * @example
 * ```ts
 * mayCarrySignals({ "content-type": "text/plain" }); // false
 * mayCarrySignals(["RateLimit-Policy", "100;w=60"]); // true
 * ```
 */
export function mayCarrySignals(headers: unknown): boolean {
  if (Array.isArray(headers)) {
    for (let i = 0; i < headers.length; i += 2) if (signalName(text(headers[i] as string | Uint8Array))) return true;
    return false;
  }
  if (typeof headers !== "object" || headers === null) return false;
  for (const name in headers) if (signalName(name)) return true;
  return false;
}

/** Every name `readServerSignals` reads starts so (RateLimit*, Retry-After*, X-RateLimit-*, X-Rate-Limit-*). */
const SIGNAL_NAME = /^(?:ratelimit|retry-after|x-ratelimit-|x-rate-limit-)/i;

function signalName(name: string): boolean {
  // Most names (content-type, date, …) start with neither "r" nor "x": no pattern to run.
  const first = name.charCodeAt(0) | 0x20;
  return (first === 0x72 || first === 0x78) && SIGNAL_NAME.test(name);
}
