/**
 * Usage from a streamed (SSE) response, read as the caller reads it: the tap hands the caller a
 * new `Response` whose body is the same bytes, chunk for chunk, as they arrive, and scans them on
 * the way for the event that carries the usage. Nothing is buffered beyond the current line.
 *
 * Why a pull-driven `ReadableStream` rather than a `TransformStream`: each chunk is read from the
 * server only when the caller asks for one (no read-ahead), and its `cancel` hook is where the
 * caller's cancellation reaches the server's stream and settles `usage` — a transformer's `cancel`
 * is too recent to rely on in every runtime.
 *
 * @module
 */

import { positiveInteger } from "../validate.ts";
import { VENDOR_DEFAULTS } from "./defaults.ts";
import { type SseEvent, SseScanner } from "./sse-scanner.ts";
import type { Usage } from "./types.ts";
import { anthropicUsageOf, readOpenAIUsage, usageVendor } from "./usage.ts";

/** Options for {@link tapUsage}. */
export interface TapUsageOptions {
  /**
   * Whose event format to read:
   * - `"openai"`: the chunk with a non-null `usage` (the last one, sent when the request sets
   *   `stream_options: { include_usage: true }`), or the Responses API's `response.completed`.
   * - `"anthropic"`: `message_start`'s `message.usage` (input and cache tokens) updated by
   *   `message_delta`'s `usage` (cumulative output tokens).
   */
  readonly vendor: "openai" | "anthropic";
  /**
   * The longest SSE line (and event data) kept while scanning, in bytes; longer ones pass through to
   * the caller untouched but are not scanned. Usage events are a few hundred bytes.
   * @default 65536
   */
  readonly maxLineBytes?: number;
}

/** What {@link tapUsage} returns. */
export interface TappedResponse {
  /** The response to hand to the caller: same status, headers and body bytes. */
  readonly response: Response;
  /**
   * The usage, once known: OpenAI as soon as its usage chunk arrives; Anthropic at `message_stop`
   * (or at the end of the stream, or a cancel, when `message_delta` was seen). `undefined` when the
   * stream ends, errors or is cancelled without it. Never rejects. Pending while nobody reads the body.
   */
  readonly usage: Promise<Usage | undefined>;
}

/**
 * Taps a streamed response for its usage without buffering it.
 *
 * The returned response's body yields exactly the original chunks, each when the caller reads
 * it; cancelling it cancels the original body (so the connection is released) and settles
 * `usage`. The original response's body is locked by the tap: use only the returned one.
 *
 * @throws {TypeError} when the body was already read or is locked; {@link RangeError} for a bad `maxLineBytes`.
 * @example
 * ```ts
 * const upstream = await fetch("https://api.openai.com/v1/chat/completions", init);
 * const { response, usage } = tapUsage(upstream, { vendor: "openai" });
 * usage.then((u) => u && reservation.settle(u.totalTokens));
 * return response; // the caller streams it as usual
 * ```
 */
export function tapUsage(response: Response, options: TapUsageOptions): TappedResponse {
  const vendor = usageVendor(options.vendor);
  const maxLineBytes = options.maxLineBytes === undefined ? VENDOR_DEFAULTS.maxLineBytes : positiveInteger("maxLineBytes", options.maxLineBytes);
  if (response.body === null) return { response, usage: Promise.resolve(undefined) };
  if (response.bodyUsed || response.body.locked) throw new TypeError("`response` body is already used or locked");

  let resolve!: (usage: Usage | undefined) => void;
  const usage = new Promise<Usage | undefined>((r) => (resolve = r));
  const reader = new UsageReader(vendor, resolve);
  const scanner = new SseScanner((event) => reader.event(event), maxLineBytes);
  const source = response.body.getReader();

  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await source.read();
      } catch (error) {
        reader.finish();
        controller.error(error);
        return;
      }
      if (chunk.done) {
        reader.finish();
        controller.close();
        return;
      }
      // Enqueue first: the caller gets the bytes even if scanning them were to fail.
      controller.enqueue(chunk.value);
      try {
        // A body of non-byte chunks (a hand-made stream) passes through but cannot be scanned.
        if (!(chunk.value instanceof Uint8Array)) reader.finish();
        else if (!reader.done) scanner.push(chunk.value); // once usage is known, the rest needs no scan
      } catch {
        reader.finish(); // a scanner fault must not break the caller's stream
      }
    },
    cancel(reason) {
      reader.finish();
      return source.cancel(reason);
    },
  }, { highWaterMark: 0 });

  const tapped = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  // A constructed Response has an empty url and redirected=false; keep the original's.
  Object.defineProperty(tapped, "url", { value: response.url, enumerable: true, configurable: true });
  Object.defineProperty(tapped, "redirected", { value: response.redirected, enumerable: true, configurable: true });
  return { response: tapped, usage };
}

/** Folds a vendor's events into its usage and resolves the promise once (at the latest at `finish`). */
class UsageReader {
  readonly #vendor: "openai" | "anthropic";
  readonly #resolve: (usage: Usage | undefined) => void;
  #done = false;
  #usage: Usage | undefined;
  /** Anthropic: a `message_delta` was seen, so `#usage` holds the final output count. */
  #complete = false;

  constructor(vendor: "openai" | "anthropic", resolve: (usage: Usage | undefined) => void) {
    this.#vendor = vendor;
    this.#resolve = resolve;
  }

  /** The usage promise is resolved: nothing more to read. */
  get done(): boolean {
    return this.#done;
  }

  event({ data }: SseEvent): void {
    if (this.#done || !data.includes("usage") && !data.includes("message_stop")) return;
    let json: unknown;
    try {
      json = JSON.parse(data);
    } catch {
      return;
    }
    if (this.#vendor === "openai") {
      const usage = readOpenAIUsage(json);
      if (usage !== undefined) this.#settle(usage);
      return;
    }
    const type = (json as { type?: unknown } | null)?.type;
    if (type === "message_start") {
      this.#usage = anthropicUsageOf(usageOf((json as { message?: unknown }).message), undefined);
    } else if (type === "message_delta") {
      const next = anthropicUsageOf(usageOf(json), this.#usage);
      if (next !== undefined) {
        this.#usage = next;
        this.#complete = true;
      }
    } else if (type === "message_stop") {
      this.finish();
    }
  }

  /** The stream ended, errored or was cancelled: resolve with what is complete, else `undefined`. */
  finish(): void {
    this.#settle(this.#complete ? this.#usage : undefined);
  }

  #settle(usage: Usage | undefined): void {
    if (this.#done) return;
    this.#done = true;
    this.#resolve(usage);
  }
}

function usageOf(value: unknown): Record<string, unknown> | undefined {
  const usage = typeof value === "object" && value !== null ? (value as { usage?: unknown }).usage : undefined;
  return typeof usage === "object" && usage !== null ? (usage as Record<string, unknown>) : undefined;
}
