/**
 * How requests appear in error messages: method, origin and path only. User info (`user:pass@`),
 * the query (API keys often travel there) and the fragment are dropped, and headers never appear,
 * so a logged error cannot leak a credential.
 *
 * @module
 */

/**
 * `"GET https://api.example.com/v1/items"` for a request to
 * `https://user:secret@api.example.com/v1/items?api_key=…`.
 *
 * @example
 * ```ts
 * describeRequest("POST", "https://u:p@example.com/a?token=x"); // "POST https://example.com/a"
 * ```
 */
export function describeRequest(method: string, url: string): string {
  return `${method} ${redactUrl(url)}`;
}

/** The URL without user info, query or fragment; an unparsable URL is replaced by a placeholder. */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "(invalid URL)";
  }
  // Opaque origins (data:, blob:) would print "null"; their path may hold the payload, so drop it.
  if (parsed.origin === "null") return `${parsed.protocol}…`;
  return parsed.origin + parsed.pathname;
}

/**
 * An error message with every URL's user info removed (`//user:pass@host` → `//host`): fetch's own
 * messages may quote the URL, e.g. "Request cannot be constructed from a URL that includes credentials".
 */
export function redactMessage(message: string): string {
  return message.replace(/\/\/[^/?#@\s]*@/g, "//");
}
