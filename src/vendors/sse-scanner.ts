/**
 * An incremental Server-Sent Events parser over raw bytes, with bounded memory: it keeps only the
 * current partial line and the current event's `data`, together capped (line bytes plus data
 * characters ≤ `maxLineBytes`), and hands every complete event to a callback. Lines end at LF, CR or CRLF (the SSE grammar), also when a CRLF or a
 * multi-byte UTF-8 character is split between chunks: bytes are cut into lines first and only
 * whole lines are decoded.
 *
 * A line or an event's data past the cap is dropped whole (the rest of it is skipped unread), and
 * that event is not dispatched: usage events are small, and a partial one cannot be trusted.
 *
 * @module
 */

import { positiveInteger } from "../validate.ts";

const LF = 0x0a;
const CR = 0x0d;

/** One dispatched event. */
export interface SseEvent {
  /** The `event:` field, `"message"` when absent. */
  readonly event: string;
  /** The `data:` lines joined by "\n". */
  readonly data: string;
}

/**
 * Scans an SSE byte stream chunk by chunk.
 *
 * @example
 * ```ts
 * const events: SseEvent[] = [];
 * const scanner = new SseScanner((e) => events.push(e), 65_536);
 * scanner.push(new TextEncoder().encode("event: ping\r\ndata: {\"a\""));
 * scanner.push(new TextEncoder().encode(":1}\r\n\r\n"));
 * events; // [{ event: "ping", data: '{"a":1}' }]
 * ```
 */
export class SseScanner {
  readonly #onEvent: (event: SseEvent) => void;
  readonly #max: number;
  readonly #decoder = new TextDecoder();
  /** Pieces of the current line (copies, so no chunk is kept alive), and their total length. */
  #pieces: Uint8Array[] = [];
  #length = 0;
  /** The current line is over the cap: skip to its end. */
  #skipping = false;
  /** The last byte seen was a CR: an LF right after it ends nothing. */
  #afterCr = false;
  #firstLine = true;
  #eventType = "";
  #data = "";
  #hasData = false;
  /** The current event's data went over the cap: do not dispatch it. */
  #dataOverflow = false;

  /**
   * Makes a scanner that calls `onEvent` for each event of the bytes pushed into it.
   * @param onEvent called with each complete event (at its blank line).
   * @param maxLineBytes the cap on the partial line's bytes plus the current event's data.
   * @throws {RangeError} when `maxLineBytes` is not a positive integer.
   */
  constructor(onEvent: (event: SseEvent) => void, maxLineBytes: number) {
    this.#onEvent = onEvent;
    this.#max = positiveInteger("maxLineBytes", maxLineBytes);
  }

  /** What is held now: the partial line's bytes plus the event data's characters; never above the cap. */
  get bufferedBytes(): number {
    return this.#length + this.#data.length;
  }

  /** Feeds the next chunk of the stream. */
  push(chunk: Uint8Array): void {
    let start = 0;
    if (this.#afterCr && chunk.length > 0) {
      this.#afterCr = false;
      if (chunk[0] === LF) start = 1;
    }
    while (start < chunk.length) {
      const end = nextTerminator(chunk, start);
      if (end === -1) {
        this.#append(chunk, start, chunk.length);
        return;
      }
      this.#append(chunk, start, end);
      this.#endLine();
      if (chunk[end] === CR && end + 1 === chunk.length) {
        this.#afterCr = true; // its LF, if any, opens the next chunk
        return;
      }
      start = chunk[end] === CR && chunk[end + 1] === LF ? end + 2 : end + 1;
    }
  }

  #append(chunk: Uint8Array, start: number, end: number): void {
    if (this.#skipping || start === end) return;
    // One cap for both buffers: the line being read and the event's data gathered so far.
    if (this.#length + this.#data.length + (end - start) > this.#max) {
      this.#skipping = true;
      this.#pieces = [];
      this.#length = 0;
      return;
    }
    this.#pieces.push(chunk.slice(start, end));
    this.#length += end - start;
  }

  #endLine(): void {
    if (this.#skipping) {
      this.#skipping = false;
      // An over-long line is lost; if it was data, the event is incomplete.
      this.#dataOverflow = true;
      this.#firstLine = false;
      return;
    }
    let line = this.#decoder.decode(concat(this.#pieces, this.#length));
    this.#pieces = [];
    this.#length = 0;
    if (this.#firstLine) {
      this.#firstLine = false;
      if (line.charCodeAt(0) === 0xfeff) line = line.slice(1);
    }
    this.#line(line);
  }

  #line(line: string): void {
    if (line === "") {
      if (this.#hasData && !this.#dataOverflow) this.#onEvent({ event: this.#eventType || "message", data: this.#data });
      this.#eventType = "";
      this.#data = "";
      this.#hasData = false;
      this.#dataOverflow = false;
      return;
    }
    if (line.charCodeAt(0) === 0x3a) return; // a ":" comment
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    if (field === "event") this.#eventType = value;
    else if (field === "data") {
      if (this.#dataOverflow) return;
      const next = this.#hasData ? `${this.#data}\n${value}` : value;
      if (next.length > this.#max) {
        this.#dataOverflow = true;
        this.#data = "";
      } else {
        this.#data = next;
      }
      this.#hasData = true;
    }
  }
}

function nextTerminator(chunk: Uint8Array, from: number): number {
  const lf = chunk.indexOf(LF, from);
  const cr = chunk.indexOf(CR, from);
  if (lf === -1) return cr;
  if (cr === -1) return lf;
  return Math.min(lf, cr);
}

function concat(pieces: Uint8Array[], length: number): Uint8Array {
  if (pieces.length === 1) return pieces[0]!;
  const out = new Uint8Array(length);
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.length;
  }
  return out;
}
