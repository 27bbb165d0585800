/**
 * A response the loop decided to retry, kept until the retry is actually sent.
 *
 * Two promises meet here. The caller must get the last response, body intact, when its retry is
 * refused by the limiter (`MaxWaitExceededError`, `QueueFullError`) — so the body cannot simply be
 * cancelled when the retry is decided. And a retried response must not cost a connection or
 * unbounded memory while the retry waits.
 *
 * So a retried body is *drained*, up to {@link RETRY_BODY_DRAIN} (`bytes` and `ms`): a small error
 * page (the usual 429/503 body) is read to its end, which returns the socket to the pool for the
 * retry, and is kept in memory — at most `bytes` — to rebuild the response if the retry is refused.
 * A larger body (by `Content-Length`, or once `bytes` were read) or one that does not arrive within
 * `ms` is not read further: it stays in the socket, unread, backpressured (the runtime buffers only
 * its stream's high-water mark), and is cancelled once the retry is sent (closing that connection,
 * which is cheaper than downloading a large page nobody reads) or returned whole if it is refused.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { startTimer } from "./timers.ts";
import { rebuiltResponse } from "./rebuilt-response.ts";

/**
 * The drain bound for a retried response's body: read to its end when it is at most `bytes` long
 * and arrives within `ms`, so its connection is reused; otherwise left unread and cancelled when
 * the retry is sent (its connection is closed). Measured against node:http with Node's fetch
 * (test/http/drain-connections.test.ts): 100 retried 429s cost 2 connections with bodies of 10 B
 * to 64 KiB, and 102 with bodies of 128 KiB or more; before draining, 64 KiB bodies cost 103.
 *
 * @example
 * ```ts
 * RETRY_BODY_DRAIN.bytes; // 65536
 * ```
 */
export const RETRY_BODY_DRAIN: { readonly bytes: number; readonly ms: number } = Object.freeze({
  bytes: 64 * 1024,
  ms: 100,
});

/** A retried response, kept until its retry is sent or refused. */
export interface HeldResponse {
  /** The response to give the caller if the retry is refused: status, headers and body intact. */
  readonly response: Response;
  /** Frees whatever is held (cancels an unread rest of the body); idempotent. */
  discard(): void;
}

/** Cancels a body, ignoring a body that is locked or already used (a hook may have read it). */
export function cancelBody(response: Response): void {
  try {
    response.body?.cancel().catch(() => {});
  } catch {
    // A locked stream throws synchronously in some runtimes.
  }
}

/** Statuses `new Response()` accepts with a body: a rebuilt response must be constructible. */
function rebuildable(response: Response): boolean {
  return response.status >= 200 && response.status <= 599 && ![204, 205, 304].includes(response.status);
}

/**
 * Drains `response`'s body within {@link RETRY_BODY_DRAIN} (or until `signal` aborts) and returns
 * what to keep while the retry waits. Never rejects.
 *
 * @example
 * ```ts
 * const held = await holdForRetry(response, systemClock);
 * // … the retry is sent: held.discard(); or refused: return held.response;
 * ```
 */
export async function holdForRetry(response: Response, clock: Clock, signal?: AbortSignal): Promise<HeldResponse> {
  const body = response.body;
  const keepAsIs: HeldResponse = { response, discard: () => cancelBody(response) };
  if (body === null || response.bodyUsed || body.locked || !rebuildable(response)) return keepAsIs;
  const length = Number(response.headers.get("content-length") ?? NaN);
  if (length > RETRY_BODY_DRAIN.bytes) return keepAsIs;

  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let pending: Promise<ReadableStreamReadResult<Uint8Array>> | undefined;
  let stop: (() => void) | undefined;
  const stopped = new Promise<"stop">((resolve) => {
    stop = () => resolve("stop");
  });
  const timer = startTimer(clock, RETRY_BODY_DRAIN.ms, stop!);
  const onAbort = (): void => stop!();
  signal?.addEventListener("abort", onAbort, { once: true });
  let complete = false;
  try {
    if (signal?.aborted) stop!();
    while (size <= RETRY_BODY_DRAIN.bytes) {
      pending = reader.read();
      // A body that fails (connection reset) stops the drain; the caller reads the same error.
      const result = await Promise.race([pending, stopped]).catch(() => "stop" as const);
      if (result === "stop") break;
      pending = undefined;
      if (result.done) {
        complete = true;
        break;
      }
      chunks.push(result.value);
      size += result.value.byteLength;
    }
  } finally {
    timer.cancel();
    signal?.removeEventListener("abort", onAbort);
  }
  if (complete) return { response: rebuiltResponse(response, new Blob(chunks as BlobPart[])), discard: () => {} };
  // Not all here: keep what was read and the unread rest, in order.
  let discarded = false;
  return {
    response: rebuiltResponse(response, resumedStream(chunks, pending, reader)),
    discard() {
      if (discarded) return;
      discarded = true;
      pending?.catch(() => {});
      reader.cancel().catch(() => {});
    },
  };
}

/** The chunks already read, then a read in flight (if any), then the rest of `reader`. */
function resumedStream(
  chunks: Uint8Array[],
  pending: Promise<ReadableStreamReadResult<Uint8Array>> | undefined,
  reader: ReadableStreamDefaultReader<Uint8Array>,
): ReadableStream<Uint8Array> {
  let inFlight = pending;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const chunk = chunks.shift();
      if (chunk !== undefined) return controller.enqueue(chunk);
      const result = await (inFlight ?? reader.read());
      inFlight = undefined;
      if (result.done) controller.close();
      else controller.enqueue(result.value);
    },
    cancel(reason) {
      inFlight?.catch(() => {});
      return reader.cancel(reason);
    },
  });
}
