/**
 * A stand-in for undici's next dispatcher and for a caller's handler, so the interceptor's contract
 * can be checked step by step in virtual time: the fake records each dispatch and lets the test play
 * undici's side (start the request, answer it, fail it); the recording handler logs every callback it
 * gets, as a class with a private field — so a wrapper that lost `this` or the prototype would break.
 */
import type { DispatchRequest } from "../../../src/undici.ts";

/** undici's controller, reduced to what a handler can observe. */
export class FakeController {
  aborted = false;
  reason: unknown = null;
  paused = false;
  rawHeaders: unknown = null;
  readonly #onAbort: (reason: unknown) => void;
  constructor(onAbort: (reason: unknown) => void) {
    this.#onAbort = onAbort;
  }
  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.#onAbort(reason);
  }
  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
  }
}

/** A handler as undici's dispatchers see it (the interceptor's wrapper). */
interface Handler {
  onRequestStart(controller: unknown, context: unknown): void;
  onResponseStart(controller: unknown, status: number, headers: unknown, message?: string): void;
  onResponseData(controller: unknown, chunk: unknown): void;
  onResponseEnd(controller: unknown, trailers: unknown): void;
  onResponseError(controller: unknown, error: unknown): void;
  onResponseStarted?(): void;
  onRequestUpgrade?(controller: unknown, status: number, headers: unknown, socket: unknown): void;
}

/** One request that reached the fake dispatcher. */
export class SentRequest {
  readonly request: DispatchRequest;
  readonly handler: Handler;
  readonly controller: FakeController;
  constructor(request: DispatchRequest, handler: Handler) {
    this.request = request;
    this.handler = handler;
    // Like undici: aborting a started request fails it (asynchronously) with the reason.
    this.controller = new FakeController((reason) => queueMicrotask(() => this.handler.onResponseError(this.controller, reason)));
  }
  start(): this {
    this.handler.onRequestStart(this.controller, null);
    return this;
  }
  respond(status: number, headers: Record<string, string | string[]> = {}, body = "ok"): void {
    this.handler.onResponseStarted?.();
    this.handler.onResponseStart(this.controller, status, headers, "");
    this.handler.onResponseData(this.controller, new TextEncoder().encode(body));
    this.handler.onResponseEnd(this.controller, {});
  }
  fail(error: unknown): void {
    this.handler.onResponseError(this.controller, error);
  }
}

/** The next dispatcher: records each dispatch; `autoStart` calls onRequestStart at once, as undici soon does. */
export function fakeDispatcher(autoStart = true) {
  const sent: SentRequest[] = [];
  const dispatch = (request: DispatchRequest, handler: Handler): boolean => {
    const s = new SentRequest(request, handler);
    sent.push(s);
    if (autoStart) s.start();
    return true;
  };
  return { dispatch, sent };
}

/** A caller's handler, as a class with a private field: it works only if called on itself. */
export class RecordingHandler {
  readonly #log: string[] = [];
  controller: { abort(reason?: unknown): void; pause(): void; resume(): void; aborted: boolean; reason: unknown } | undefined;
  status: number | undefined;
  error: unknown;
  body = "";

  get log(): readonly string[] {
    return this.#log;
  }
  onRequestStart(controller: RecordingHandler["controller"], _context: unknown): void {
    this.controller = controller;
    this.#log.push("start");
  }
  onResponseStart(_controller: unknown, status: number): void {
    this.status = status;
    this.#log.push(`headers ${status}`);
  }
  onResponseData(_controller: unknown, chunk: Uint8Array): void {
    this.body += new TextDecoder().decode(chunk);
  }
  onResponseEnd(): void {
    this.#log.push("end");
  }
  onResponseError(_controller: unknown, error: unknown): void {
    this.error = error;
    this.#log.push("error");
  }
}

/** Lets queued promise callbacks and microtasks run. */
export const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A GET to `origin`, as undici's dispatch options. */
export const get = (origin = "https://api.example.com", path = "/"): DispatchRequest => ({ origin, path, method: "GET", headers: {} });
