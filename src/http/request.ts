/**
 * One call's request, as the loop needs it: a `Request` that describes it to hooks, the caller's
 * signal, and the arguments of each attempt.
 *
 * Each attempt calls the underlying fetch with the caller's own `input` and a copy of their `init`
 * made when the call was made (`callInit`: fetch reads init at call time), overriding only `signal` (ours, linked to theirs), `body` (the replayable snapshot) and `headers`
 * (only to add an idempotency key). So whatever the caller passed — a `Request` from another realm,
 * non-standard options such as undici's `dispatcher` — reaches fetch unchanged, as with plain fetch.
 * When nothing needs overriding (no signal of ours, no body read from a `Request`, no key), that
 * copy itself is passed.
 *
 * @module
 */
import type { FetchInput } from "./options.ts";
import { type BodyPlan, isReplayableBody, isRequest, snapshotBody } from "./body.ts";

/** The members of `RequestInit` read by name when `init` is not a plain object (e.g. a `Request`). */
const INIT_KEYS = [
  "method", "headers", "body", "referrer", "referrerPolicy", "mode", "credentials", "cache", "redirect",
  "integrity", "keepalive", "signal", "duplex", "priority", "window",
] as const;

/** A plain copy of `init`, keeping members that are getters (fetch accepts any object as init). */
function copyInit(init: RequestInit | undefined): Record<string, unknown> {
  if (init === undefined || init === null) return {};
  const copy: Record<string, unknown> = { ...init };
  for (const key of INIT_KEYS) {
    if (!(key in copy) && key in init) copy[key] = (init as Record<string, unknown>)[key];
  }
  return copy;
}

/**
 * `init` as fetch would read it at call time: fetch builds its `Request` synchronously, so a caller
 * may reuse and change one init object (a page cursor header, a body per item) for the next call
 * while this one waits in the queue. The copy holds the headers (a record's values, a `Headers`'
 * or a `Request`'s entries, an iterable's pairs — consumed once, here), the replayable body's
 * snapshot (bytes, form entries; a string or Blob as is) and every other member. Validation is left
 * to `prepareCall`, so its TypeError is fetch's and scrubbed. No init and a non-`Request` input:
 * nothing to copy, nothing made (the common call).
 *
 * @example
 * ```ts
 * const init = { headers: { "x-page": "1" } };
 * const call = callInit("https://api.example.com/items", init);
 * init.headers["x-page"] = "2"; // call.headers is still { "x-page": "1" }
 * ```
 */
export function callInit(input: FetchInput, init: RequestInit | undefined): RequestInit | undefined {
  const request = isRequest(input);
  if ((init === undefined || init === null) && !request) return init;
  const copy = copyInit(init);
  const headers = copy.headers;
  if (headers !== undefined && headers !== null) copy.headers = copyHeaders(headers);
  else if (request) copy.headers = new Headers((input as Request).headers); // a Request's headers are mutable too
  const body = copy.body;
  if (body !== undefined && body !== null && typeof body !== "string" && isReplayableBody(body)) copy.body = snapshotBody(body as BodyInit);
  return copy as RequestInit;
}

/** Headers as given, copied: `Headers`, any iterable of pairs, or a record (values as fetch converts them). */
function copyHeaders(headers: unknown): HeadersInit {
  if (typeof headers !== "object" || headers === null) return headers as HeadersInit; // invalid: the Request built later says so
  if (headers instanceof Headers) return new Headers(headers);
  if (Symbol.iterator in headers) {
    // An array, a Map, a generator (read once, here): the pairs kept as given.
    const pairOf = (pair: unknown) => typeof pair === "object" && pair !== null && Symbol.iterator in pair ? Array.from(pair as Iterable<string>) : pair;
    return Array.from(headers as Iterable<unknown>, pairOf) as HeadersInit;
  }
  const record: Record<string, string> = {};
  for (const name of Object.keys(headers)) {
    const value = (headers as Record<string, unknown>)[name];
    // A template, not String(): a Symbol throws fetch's TypeError rather than being sent as "Symbol(…)".
    record[name] = typeof value === "string" ? value : `${value as string}`;
  }
  // fetch reads a record's own enumerable keys, symbols too, and refuses those.
  for (const key of Object.getOwnPropertySymbols(headers)) {
    if (Object.prototype.propertyIsEnumerable.call(headers, key)) throw new TypeError(`Headers: a header name must be a string, got ${String(key)}`);
  }
  return record;
}

/**
 * The caller's signal, with fetch's precedence: `init.signal` when given (`null` = none), else the
 * `Request`'s own signal.
 */
export function callerSignalOf(input: FetchInput, init: RequestInit | undefined): AbortSignal | undefined {
  const own = init?.signal;
  if (own !== undefined) return own ?? undefined;
  return isRequest(input) ? input.signal : undefined;
}

/** One call, ready for its attempts. */
export interface PreparedCall {
  /** The method as fetch normalises it (`"post"` → `"POST"`; other methods keep their case). */
  readonly method: string;
  /** The URL as given (for error messages, redacted by the caller). */
  readonly url: string;
  /**
   * Describes the call to hooks, `permits` and `key`: URL, method, headers, replayable body. Built
   * on first read: a call that no hook, function option or key needs never pays for a `Request`.
   */
  readonly request: Request;
  /** Headers every attempt sends instead of the caller's (set only when a key was added). */
  readonly headers: Headers | undefined;
  /** The request carries the idempotency key header. */
  readonly hasIdempotencyKey: boolean;
}

/** The methods fetch upper-cases (any other method keeps its case). */
const NORMALISED = new Set(["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"]);

/** `method` as fetch normalises it. */
function normaliseMethod(method: string): string {
  const upper = method.toUpperCase();
  return NORMALISED.has(upper) ? upper : method;
}

/** A header name (RFC 9110 token) and a value `Headers` accepts (a byte string without NUL, CR, LF). */
const TOKEN = /^[!#$%&'*+.^_`|~\w-]+$/;
const VALUE = /^[^\0\r\n\u0100-\uffff]*$/;

const plain = (value: object): boolean => Object.getPrototypeOf(value) === Object.prototype;

/** The last URL {@link leanValid} parsed and accepted. */
let lastLeanUrl: string | undefined;

/**
 * True when `new Request(url, init)` certainly succeeds, decided without building one: an absolute
 * http(s) URL without user info, a method of the common set, headers as a plain record of valid
 * strings, no body on GET/HEAD, no other members. False means "not sure": the caller builds the
 * `Request`, which throws fetch's own TypeError when the call is invalid.
 */
function leanValid(url: string, method: string, init: RequestInit | undefined, plan: BodyPlan): boolean {
  if (url !== lastLeanUrl) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return false; // maybe relative (a browser resolves it against the page): let Request decide
    }
    if (parsed.username !== "" || parsed.password !== "") return false;
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return false;
    lastLeanUrl = url; // calls to one URL in a row (polling, paging by header) parse it once
  }
  if (!NORMALISED.has(method) && method !== "PATCH") return false;
  if (plan.kind !== "none" && (method === "GET" || method === "HEAD")) return false;
  if (init === undefined || init === null) return true;
  if (!plain(init)) return false;
  // Only members whose validity is checked here (any other, e.g. `mode`, may be invalid).
  for (const key in init) if (!/^(method|headers|body|signal)$/.test(key)) return false;
  const headers = init.headers as Record<string, unknown> | undefined | null;
  if (headers === undefined || headers === null) return true;
  if (!plain(headers)) return false;
  for (const name in headers) {
    const value = headers[name];
    if (typeof value !== "string" || !TOKEN.test(name) || !VALUE.test(value)) return false;
  }
  return true;
}

/**
 * A call on the lean path: its `Request` view is built on first read. A class (the getter on its
 * prototype), not a literal with a getter, which is slower to make on every call.
 */
class LeanCall implements PreparedCall {
  readonly headers = undefined;
  readonly hasIdempotencyKey = false;
  readonly method: string;
  readonly url: string;
  readonly #init: RequestInit | undefined;
  readonly #body: BodyInit | undefined;
  #request: Request | undefined;

  constructor(method: string, url: string, init: RequestInit | undefined, body: BodyInit | undefined) {
    this.method = method;
    this.url = url;
    this.#init = init;
    this.#body = body;
  }

  get request(): Request {
    return this.#request ??= new Request(this.url, { method: this.method, headers: this.#init?.headers ?? undefined, body: this.#body ?? null });
  }
}

/** The members of `init` whose values the `Request` constructor checks, besides method, headers and body. */
const CHECKED_MEMBERS = ["mode", "credentials", "cache", "redirect", "referrer", "referrerPolicy", "integrity", "keepalive", "priority", "window"] as const;

function checkedMembers(init: RequestInit | undefined): RequestInit | undefined {
  if (init === undefined || init === null) return undefined;
  let members: Record<string, unknown> | undefined;
  for (const key of CHECKED_MEMBERS) {
    const value = (init as Record<string, unknown>)[key];
    if (value !== undefined) (members ??= {})[key] = value;
  }
  return members;
}

/**
 * Prepares one call: its method, URL and `Request` view, and, when `idempotencyKey` is set and the
 * method is not idempotent, a key (unless the caller set one). Throws the `TypeError` fetch would
 * for an invalid URL, method, header or other member of `init` (`mode: "navigate"`, an unknown
 * `cache`…), or for a GET with a body — before any permit is taken.
 *
 * `eager` builds the `Request` now (the full path; needed anyway when a function option or the key
 * reads it). Otherwise a string or `URL` call that {@link leanValid} vouches for builds nothing
 * until something reads `request`.
 */
export function prepareCall(
  input: FetchInput,
  init: RequestInit | undefined,
  plan: BodyPlan,
  idempotencyKey: { readonly header: string; readonly generate: () => string } | undefined,
  idempotentMethods: ReadonlySet<string>,
  eager = true,
): PreparedCall {
  const base = isRequest(input) ? input : undefined;
  const url = base !== undefined ? base.url : input instanceof URL ? input.href : String(input);
  const given = init?.method ?? base?.method ?? "GET";
  const body = plan.kind === "replayable" ? plan.view : undefined;
  if (!eager && idempotencyKey === undefined && base === undefined && typeof given === "string") {
    const method = normaliseMethod(given);
    if (leanValid(url, method, init, plan)) return new LeanCall(method, url, init, body);
  }
  const headers = new Headers(init?.headers !== undefined && init.headers !== null ? init.headers : base?.headers);
  // Built before the key is added only to normalise the method ("post" → "POST") and validate — the
  // other members too: an invalid `mode`, `cache`, `credentials`… throws fetch's TypeError here,
  // before any permit is taken, rather than on every attempt.
  const members = checkedMembers(init);
  let request = new Request(url, { ...members, method: given, headers, body: body ?? null });
  let override: Headers | undefined;
  let hasIdempotencyKey = false;
  if (idempotencyKey !== undefined) {
    hasIdempotencyKey = headers.has(idempotencyKey.header);
    if (!hasIdempotencyKey && !idempotentMethods.has(request.method)) {
      const key = idempotencyKey.generate();
      if (typeof key !== "string" || key === "") {
        throw new TypeError(`\`idempotencyKey.generate\` must return a non-empty string, got ${String(key)}`);
      }
      headers.set(idempotencyKey.header, key);
      override = headers;
      hasIdempotencyKey = true;
      request = new Request(url, { ...members, method: given, headers, body: body ?? null });
    }
  }
  return { method: request.method, url: request.url, request, headers: override, hasIdempotencyKey };
}

/**
 * The `init` of one attempt: the caller's, with our `signal`, the body snapshot and the key
 * headers. `signal: null` when we have none, so a `Request` input's own signal is not resurrected.
 */
export function attemptInit(
  init: RequestInit | undefined,
  plan: BodyPlan,
  headers: Headers | undefined,
  signal: AbortSignal | undefined,
  lean = false,
): RequestInit | undefined {
  // Nothing to override (no signal of ours, the caller's body, their headers): their init, as is —
  // which is what fetch itself would get. `signal: null` is already the caller's (or absent).
  if (lean && signal === undefined && (plan.kind !== "replayable" || plan.value === undefined) && headers === undefined &&
    (init === undefined || init === null || init.signal === undefined || init.signal === null)) return init;
  const next = copyInit(init);
  next.signal = signal ?? null;
  if (plan.kind === "replayable" && plan.value !== undefined) next.body = plan.value;
  if (headers !== undefined) next.headers = headers;
  return next as RequestInit;
}
