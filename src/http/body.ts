/**
 * Request bodies across attempts: which can be sent again intact, and how.
 *
 * A body is *replayable* when its whole content is at hand: a string, `ArrayBuffer`, typed array or
 * `DataView`, `Blob`/`File`, `FormData` or `URLSearchParams`. When the call is made such a body is
 * snapshotted once (bytes copied, form entries copied) so that every attempt sends exactly what the
 * caller passed when calling, even if the caller mutates their array or form afterwards — as fetch,
 * which copies it when called (a call that is never retried gets the snapshot too). A `Request`'s body
 * is always a stream (the original value is not observable), so it is read into an `ArrayBuffer`
 * once — only when a retry is possible at all — and sent with its `Content-Length` on every attempt.
 * That read runs under the call's signal (the caller's abort and the total timeout): an abort
 * rejects at once and cancels the stream.
 *
 * Any other body (a `ReadableStream`, an async iterable, an unknown object) is *streamed*: it is sent
 * once, as given, and the request is never retried — re-sending it would send it empty or partly,
 * the bug behind got#1382 and fetch-retry#99. Streaming without buffering is the caller's choice, so
 * it is kept; to make such a request retryable, pass the content as one of the types above.
 *
 * @module
 */
import { abortReason } from "../limiters/gate.ts";
import type { FetchInput } from "./options.ts";

/** What the attempts of one call send as their body. */
export type BodyPlan =
  /** No body: GET and friends, or a body-less POST. */
  | { readonly kind: "none" }
  /**
   * Sent intact on every attempt. `value` replaces the body in each attempt's init (a `Request`'s
   * body read into bytes); `undefined` when the call's init (its call-time copy) already holds it.
   */
  | { readonly kind: "replayable"; readonly value: BodyInit | undefined; readonly view: BodyInit }
  /** A stream: sent once as given; never retried. */
  | { readonly kind: "streamed" };

/** The `[object Tag]` names of replayable body types, checked by tag so other realms' objects pass. */
const REPLAYABLE_TAGS = new Set(["Blob", "File", "FormData", "URLSearchParams", "ArrayBuffer", "SharedArrayBuffer"]);

function tagOf(value: object): string {
  return Object.prototype.toString.call(value).slice(8, -1);
}

/**
 * True for body values whose whole content is at hand, so they can be sent again intact.
 *
 * @example
 * ```ts
 * isReplayableBody("text");                      // true
 * isReplayableBody(new Uint8Array([1, 2]));      // true
 * isReplayableBody(new ReadableStream());        // false: a stream can be read once
 * ```
 */
export function isReplayableBody(body: unknown): boolean {
  if (typeof body === "string") return true;
  if (typeof body !== "object" || body === null) return false;
  return ArrayBuffer.isView(body) || REPLAYABLE_TAGS.has(tagOf(body));
}

/**
 * A copy of a replayable body that later changes to the caller's object cannot affect: bytes are
 * copied, form entries and search params re-added. Strings and Blobs are immutable and kept.
 */
export function snapshotBody(body: BodyInit): BodyInit {
  if (typeof body === "string") return body;
  if (ArrayBuffer.isView(body)) {
    return new Uint8Array(body.buffer, body.byteOffset, body.byteLength).slice();
  }
  switch (tagOf(body)) {
    case "ArrayBuffer":
      return (body as ArrayBuffer).slice(0);
    case "SharedArrayBuffer":
      return new Uint8Array(body as unknown as SharedArrayBuffer).slice();
    case "FormData": {
      const copy = new FormData();
      for (const [name, value] of body as FormData) copy.append(name, value);
      return copy;
    }
    case "URLSearchParams":
      return new URLSearchParams(body as URLSearchParams);
    default:
      return body; // Blob, File: immutable
  }
}

/** The plans without a value, shared rather than made per call. */
const NONE: BodyPlan = Object.freeze({ kind: "none" });
const STREAMED: BodyPlan = Object.freeze({ kind: "streamed" });

/**
 * Decides how the attempts of one `fetch(input, init)` call send its body.
 *
 * @param init the call's own copy of the caller's init (`callInit`: a replayable body already snapshotted).
 * @param replay whether a retry is possible at all; when false a `Request`'s body is not buffered.
 * @param signal aborts the read of a `Request`'s body (rejecting with its reason, cancelling the stream).
 * @returns the plan — a promise only when a `Request`'s body must be read (no await hop otherwise);
 *   it rejects (like `fetch` would) when that body was already used.
 * @example
 * ```ts
 * const plan = await planBody("https://example.com", { method: "POST", body: "hi" }, true);
 * plan.kind; // "replayable"
 * ```
 */
export function planBody(
  input: FetchInput,
  init: RequestInit | undefined,
  replay: boolean,
  signal?: AbortSignal,
): BodyPlan | Promise<BodyPlan> {
  const own = init?.body;
  if (own !== undefined && own !== null) {
    if (!isReplayableBody(own)) return STREAMED;
    // `init` is the call's own copy (`callInit`), its body already snapshotted at call time: every
    // attempt sends it as is.
    return { kind: "replayable", value: undefined, view: own };
  }
  if (!isRequest(input) || input.body === null) return NONE;
  if (!replay) return STREAMED;
  // Read once; later attempts pass the bytes as init.body, which takes precedence over the used body.
  return readAll(input, signal).then((bytes) => ({ kind: "replayable", value: bytes, view: bytes }));
}

/**
 * A `Request`'s whole body, read under `signal`: the body may be a stream that takes minutes or never
 * ends, so an abort (the caller's, or the total timeout) rejects at once with its reason and
 * cancels the stream, instead of waiting for the last byte.
 */
async function readAll(request: Request, signal: AbortSignal | undefined): Promise<ArrayBuffer> {
  if (signal === undefined) return await request.arrayBuffer();
  if (signal.aborted) throw abortReason(signal);
  if (request.bodyUsed || request.body === null) return await request.arrayBuffer(); // fetch's own TypeError
  const reader = request.body.getReader();
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => {
      const reason = abortReason(signal);
      reader.cancel(reason).catch(() => {});
      reject(reason);
    };
  });
  aborted.catch(() => {}); // raced below; the loop rethrows it
  signal.addEventListener("abort", onAbort, { once: true });
  const chunks: Uint8Array[] = [];
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), aborted]);
      if (done) break;
      chunks.push(value);
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
  return await new Blob(chunks as BlobPart[]).arrayBuffer();
}

/** True for a `Request` object from any realm (checked by shape, not `instanceof`). */
export function isRequest(input: unknown): input is Request {
  return typeof input === "object" && input !== null && !(input instanceof URL) &&
    typeof (input as Request).url === "string" && typeof (input as Request).method === "string" &&
    typeof (input as Request).headers === "object" && typeof (input as Request).arrayBuffer === "function";
}

/**
 * True for a `Response` from any realm or fetch implementation (checked by shape, not `instanceof`).
 *
 * @example
 * ```ts
 * isResponse(new Response("x")); // true
 * ```
 */
export function isResponse(value: unknown): value is Response {
  const r = value as Response;
  return typeof r === "object" && r !== null && typeof r.status === "number" &&
    typeof r.headers === "object" && r.headers !== null && typeof r.headers.get === "function";
}
