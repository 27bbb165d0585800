/**
 * One call's request, as the loop needs it: a `Request` that describes it to hooks, the caller's
 * signal, and the arguments of each attempt.
 *
 * Each attempt calls the underlying fetch with the caller's own `input` and a copy of their `init`,
 * overriding only `signal` (ours, linked to theirs), `body` (the replayable snapshot) and `headers`
 * (only to add an idempotency key). So whatever the caller passed — a `Request` from another realm,
 * non-standard options such as undici's `dispatcher` — reaches fetch unchanged, as with plain fetch.
 *
 * @module
 */
import type { FetchInput } from "./options.ts";
import { type BodyPlan, isRequest } from "./body.ts";

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
  /** Describes the call to hooks, `permits` and `key`: URL, method, headers, replayable body. */
  readonly request: Request;
  /** Headers every attempt sends instead of the caller's (set only when a key was added). */
  readonly headers: Headers | undefined;
  /** The request carries the idempotency key header. */
  readonly hasIdempotencyKey: boolean;
}

/**
 * Builds the request view and, when `idempotencyKey` is set and the method is not idempotent, adds
 * a key (unless the caller set one). Throws the `TypeError` fetch would for an invalid URL, method
 * or header, or for a GET with a body.
 */
export function prepareCall(
  input: FetchInput,
  init: RequestInit | undefined,
  plan: BodyPlan,
  idempotencyKey: { readonly header: string; readonly generate: () => string } | undefined,
  idempotentMethods: ReadonlySet<string>,
): PreparedCall {
  const base = isRequest(input) ? input : undefined;
  const url = base !== undefined ? base.url : input instanceof URL ? input.href : String(input);
  const method = init?.method ?? base?.method ?? "GET";
  const headers = new Headers(init?.headers !== undefined && init.headers !== null ? init.headers : base?.headers);
  const body = plan.kind === "replayable" ? plan.view : undefined;
  // Built before the key is added only to normalise the method ("post" → "POST") and validate.
  let request = new Request(url, { method, headers, body: body ?? null });
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
      request = new Request(url, { method, headers, body: body ?? null });
    }
  }
  return { request, headers: override, hasIdempotencyKey };
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
): RequestInit {
  const next = copyInit(init);
  next.signal = signal ?? null;
  if (plan.kind === "replayable" && plan.value !== undefined) next.body = plan.value;
  if (headers !== undefined) next.headers = headers;
  return next as RequestInit;
}
