/**
 * How requests appear in error messages: method, origin and path only. User info (`user:pass@`),
 * the query (API keys often travel there) and the fragment are dropped, and headers never appear,
 * so a logged error cannot leak a credential.
 *
 * Errors sluice did not write — fetch's TypeErrors, a custom fetch's, undici's — are scrubbed with
 * {@link scrubError}: every URL in their text is cut to origin and path, and every secret of the
 * request ({@link secretsOf}: user info, query, fragment, query values, header values; raw,
 * decoded and encoded) is replaced by `…`, down the `cause` chain.
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

/** Where a URL starts in free text: a scheme followed by `//`. */
const URL_IN_TEXT = /[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^\s"'<>`]*/g;

/**
 * The `…` a replaced secret left in a path, as the URL parser encodes it: shown as `…` again. (A URL
 * is not cut at a `…`: one may be part of its path, and what follows must still be redacted.)
 */
const ENCODED_ELLIPSIS = /%E2%80%A6/gi;

/** A URL found in text, cut to origin and path; one that does not parse loses everything from `?`/`#` and its user info. */
function redactUrlText(text: string): string {
  try {
    const parsed = new URL(text);
    if (parsed.origin !== "null") return parsed.origin + parsed.pathname.replace(ENCODED_ELLIPSIS, "…");
  } catch {
    // Not a URL the runtime accepts (that is often why it is in the message): cut it by hand.
  }
  const cut = text.split(/[?#]/, 1)[0]!;
  const at = cut.indexOf("://") + 3;
  const slash = cut.indexOf("/", at);
  const authority = slash === -1 ? cut.slice(at) : cut.slice(at, slash);
  const user = authority.lastIndexOf("@");
  return user === -1 ? cut : cut.slice(0, at) + cut.slice(at + user + 1);
}

/**
 * The strings of one request that must never appear in an error: the URL's user info, query and
 * fragment (raw, as the runtime serialises them, and percent-decoded), and every header value.
 *
 * @example
 * ```ts
 * secretsOf("https://u:p@example.com/a?key=s#f", [["authorization", "Bearer t"]]);
 * // ["u:p@", "u@", ..., "?key=s", "#f", "Bearer t", ...]
 * ```
 */
export function secretsOf(url: string, headerValues: Iterable<string> = []): string[] {
  const found = new Set<string>();
  const add = (value: string | undefined, min = 1): void => {
    if (value === undefined || value.length < min) return;
    found.add(value);
    const encoded = encodeURIComponent(value); // a message may quote the URL encoded as a whole
    found.add(encoded);
    found.add(encoded.replace(/%20/g, "+")); // or form-encoded
    const trimmed = value.trim();
    if (trimmed.length >= min) found.add(trimmed);
    try {
      const decoded = decodeURIComponent(value);
      if (decoded.length >= min) found.add(decoded);
    } catch {
      // Not percent-encoded text: the raw form is enough.
    }
  };
  // Raw parts, whether or not the URL parses: an invalid URL is quoted raw by fetch's errors.
  const hash = url.indexOf("#");
  const beforeHash = hash === -1 ? url : url.slice(0, hash);
  if (hash !== -1) add(url.slice(hash), 2);
  const query = beforeHash.indexOf("?");
  if (query !== -1) add(beforeHash.slice(query), 2);
  // The scheme by its grammar, not the first ':' — in a scheme-relative URL (`//user:pw@host`) that
  // is inside the user info, and the user name was left in messages (red-team, 2026-11-27).
  const scheme = /^[a-zA-Z][a-zA-Z0-9+.-]*:/.exec(beforeHash)?.[0].length ?? 0;
  const authorityStart = beforeHash.startsWith("//", scheme) ? scheme + 2 : scheme;
  const pathStart = beforeHash.slice(authorityStart).search(/[/?\\]/);
  const authority = pathStart === -1 ? beforeHash.slice(authorityStart) : beforeHash.slice(authorityStart, authorityStart + pathStart);
  const at = authority.lastIndexOf("@");
  if (at !== -1) {
    const info = authority.slice(0, at);
    add(`${info}@`, 2);
    const colon = info.indexOf(":");
    add(colon === -1 ? info : info.slice(0, colon), 3);
    if (colon !== -1) add(info.slice(colon + 1), 3);
  }
  try {
    const parsed = new URL(url);
    if (parsed.username !== "") add(`${parsed.username}${parsed.password === "" ? "" : `:${parsed.password}`}@`, 2);
    add(parsed.username, 3);
    add(parsed.password, 3);
    add(parsed.search, 2);
    add(parsed.hash, 2);
    add(parsed.hash.slice(1), 4);
    // Each parameter's value on its own (an API key quoted without its name).
    for (const [, value] of parsed.searchParams) add(value, 4);
    if (parsed.origin === "null") add(parsed.pathname, 3);
  } catch {
    // Unparsable, often because a password holds a "/", "?" or "#" (the parser then reads it as a
    // port or a path): everything between "//" and the last "@" may be user info.
    const lastAt = url.lastIndexOf("@");
    if (lastAt > authorityStart) add(url.slice(authorityStart, lastAt + 1), 2);
    // An "@" after a "?" or "#" leaves no telling user info, query and fragment apart: the whole
    // URL is a secret (the message keeps its own words, e.g. "Failed to parse URL from …").
    if (lastAt > url.search(/[?#]/) && url.search(/[?#]/) !== -1) add(url, 2);
  }
  for (const value of headerValues) add(String(value), 3);
  // Longest first, so a secret is replaced whole before any part of it.
  return [...found].sort((a, b) => b.length - a.length);
}

/**
 * `text` with every URL cut to origin and path, and every one of `secrets` replaced by `…`.
 *
 * @example
 * ```ts
 * scrubText("Failed to parse URL from https://h/a?key=s", []); // "Failed to parse URL from https://h/a"
 * ```
 */
export function scrubText(text: string, secrets: readonly string[]): string {
  // Known secrets first, while they are whole; then whatever else looks like a URL.
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join("…");
  return out.replace(URL_IN_TEXT, redactUrlText);
}

/**
 * Removes `secrets` (and URLs' query, fragment and user info) from an error and its `cause` chain,
 * in place so its identity, class and fields are kept: `message`, `stack`, own string fields (Node's
 * `input`), `cause`, and an `AggregateError`'s `errors`. A string (what a custom `fetch` may reject
 * with) is returned scrubbed; other non-objects and frozen errors as they are. Returns `error`.
 *
 * @example
 * ```ts
 * try { await fetch(url); } catch (e) { throw scrubError(e, secretsOf(url)); }
 * ```
 */
export function scrubError<T>(error: T, secrets: readonly string[], seen = new Set<unknown>()): T {
  if (typeof error === "string") return scrubText(error, secrets) as T;
  if (typeof error !== "object" || error === null || seen.has(error)) return error;
  seen.add(error);
  const target = error as Record<string, unknown>;
  // `cause` and an AggregateError's `errors` are own but not enumerable: named, so one guarded
  // read (a getter may throw) covers them too.
  for (const key of new Set(["message", "stack", "cause", "errors", ...Object.keys(target)])) {
    let value: unknown;
    try {
      value = target[key];
    } catch {
      continue;
    }
    if (typeof value === "string") {
      const clean = scrubText(value, secrets);
      if (clean !== value) {
        try {
          Object.defineProperty(target, key, { value: clean, writable: true, configurable: true, enumerable: Object.keys(target).includes(key) });
        } catch {
          // A frozen or exotic error: nothing we can change.
        }
      }
    } else if (key === "cause" || key === "errors" || value instanceof Error) {
      for (const item of Array.isArray(value) ? value : [value]) scrubError(item, secrets, seen);
    }
  }
  return error;
}

/** Headers whose values carry credentials: their parts are secrets too (see {@link credentialParts}). */
const CREDENTIAL_HEADER = /^(?:proxy-)?authorization$|^cookie$|key|token|secret|session|signature|pass|pwd|credential|auth|jwt|bearer/i;

/**
 * The parts of a credential header's value a message may quote without the rest ("Incorrect API key
 * provided: sk-…"): each word of 8 characters or more (a token without its `Bearer`), a
 * `name=value`'s value (a cookie's), and a `Basic` pair decoded ("user:password", and the password).
 * Only for credential headers: the words of any header would also hide an error's URL path wherever
 * a path segment matched one (review, 2026-11-27: `/v1/chat/…` for a header that said "completions").
 */
function credentialParts(value: string): string[] {
  const parts: string[] = [];
  for (const word of value.split(/[\s,;]+/)) {
    if (word.length >= 8) parts.push(word);
    const eq = word.indexOf("=");
    const part = eq > 0 ? word.slice(eq + 1).replace(/^"|"$/g, "") : "";
    if (part.length >= 8) parts.push(part);
  }
  const basic = /^\s*basic\s+([A-Za-z0-9+/]+=*)\s*$/i.exec(value);
  if (basic !== null) {
    try {
      const pair = atob(basic[1]!);
      parts.push(pair);
      const password = pair.slice(pair.indexOf(":") + 1);
      if (password.length >= 4) parts.push(password);
    } catch {
      // Not base64: the word itself is already a secret.
    }
  }
  return parts;
}

/**
 * Every header value in any form fetch or undici takes — a `Headers`, a record, `[name, value]`
 * pairs, undici's flat `[name, value, …]` array, values as strings, numbers, bytes or arrays — valid
 * or not: an invalid value is exactly what a `Headers` error quotes.
 *
 * @example
 * ```ts
 * headerValues({ authorization: "Bearer t" }); // ["Bearer t"]
 * headerValues(["x-key", "k1", "x-key", "k2"]); // ["k1", "k2"]
 * ```
 */
export function headerValues(headers: unknown): string[] {
  const values: string[] = [];
  const push = (value: unknown, name: unknown): void => {
    if (Array.isArray(value)) for (const v of value) push(v, name);
    else if (value instanceof Uint8Array) add(new TextDecoder("latin1").decode(value), name);
    else if (value !== null && value !== undefined) add(String(value), name);
  };
  const add = (value: string, name: unknown): void => {
    values.push(value);
    if (typeof name === "string" && CREDENTIAL_HEADER.test(name)) values.push(...credentialParts(value));
  };
  try {
    if (typeof headers !== "object" || headers === null) return values;
    if (typeof (headers as Headers).forEach === "function" && !Array.isArray(headers)) {
      (headers as Headers).forEach((value, name) => add(value, name));
    } else if (Symbol.iterator in headers) {
      const entries = [...(headers as Iterable<unknown>)];
      // undici's flat array alternates names and values; fetch's form is a list of pairs.
      const flat = !Array.isArray(entries[0]);
      const nameOf = (name: unknown): unknown => (name instanceof Uint8Array ? new TextDecoder("latin1").decode(name) : name);
      entries.forEach((entry, i) => {
        if (flat) {
          if (i % 2 === 1) push(entry, nameOf(entries[i - 1]));
        } else push((entry as unknown[]).slice(1), nameOf((entry as unknown[])[0]));
      });
    } else {
      for (const [name, value] of Object.entries(headers)) push(value, name);
    }
  } catch {
    // A hostile headers object: what was collected is still scrubbed.
  }
  return values;
}
