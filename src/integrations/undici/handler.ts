/**
 * The handler the interceptor gives undici for one sent attempt. It forwards every callback to the
 * caller's handler — calling the caller's own methods on the caller's own object, so prototype
 * methods, private fields and `this` keep working (spreading a class instance into an object
 * literal would lose them) — and does three things on the way:
 *
 * - `onRequestStart` does not reach the caller again: the caller was started when the request was
 *   queued, with the stable {@link QueuedController}, which is now attached to undici's controller.
 *   Every later callback hands the caller that same controller. (So a `context` added by an
 *   interceptor composed *inside* the throttle, such as a redirect history, does not reach the
 *   caller: compose the throttle first.)
 * - The response headers (status ≥ 200) are shown to `observe`, which pauses the shared limiter on
 *   a 429/503 with a delay or an exhausted quota, BEFORE the caller (or a retry interceptor) sees
 *   them — so a retry dispatched in reaction already finds the limiter paused.
 * - The attempt's limiter task ends (`release`) when the response headers arrive, the request fails
 *   or is upgraded: that is when a window counted from completion starts counting the slot.
 *
 * @module
 */
import type { QueuedController } from "./controller.ts";
import type { InFlight } from "../../http/in-flight.ts";
import type { DispatchController, DispatchHandler } from "./types.ts";

/**
 * What a slot-holding attempt hears of its response body (`maxConcurrent`): each chunk delivered,
 * and its end — complete, failed or upgraded. @internal
 */
export interface AttemptBody {
  /** The response headers came: from now on, a stall in the body (no data) counts. */
  headers(): void;
  data(): void;
  end(): void;
}

/** The request an attempt belongs to (the interceptor's per-request state). @internal */
export interface AttemptOwner {
  /** Reads the response headers of `attempt` (`inFlight`: the key's other requests in flight). */
  observe(statusCode: number, headers: unknown, attempt: number, inFlight: number): void;
  /** The attempt ended without an answer the learned rate can read (error, upgrade) — or with one. */
  abandon(): void;
  /** Removes the request's secrets from an error. */
  scrub(error: unknown): unknown;
}

/** Forwards one attempt's callbacks to the caller's handler. @internal */
export class AttemptHandler implements DispatchHandler {
  readonly #caller: DispatchHandler;
  readonly #controller: QueuedController;
  readonly #owner: AttemptOwner;
  readonly #attempt: number;
  /** The attempt's place in the in-flight count, ended at its headers (or error). */
  #flight: InFlight | undefined;
  /** Ends the attempt's limiter task; undefined when the body ends it (`maxConcurrent`). */
  #release: (() => void) | undefined;
  #failed = false;
  /** With `maxConcurrent`: told of body data, and of the end of the response (once). */
  readonly #body: AttemptBody | undefined;

  constructor(
    caller: DispatchHandler,
    controller: QueuedController,
    owner: AttemptOwner,
    attempt: number,
    flight: InFlight,
    release: (() => void) | undefined,
    body?: AttemptBody,
  ) {
    this.#caller = caller;
    this.#controller = controller;
    this.#owner = owner;
    this.#attempt = attempt;
    this.#flight = flight;
    this.#release = release;
    this.#body = body;
  }

  /** True once an error was forwarded (so a dispatcher that also throws it is not reported twice). */
  get failed(): boolean {
    return this.#failed;
  }

  /** Once: the attempt leaves the in-flight count and the learned rate's, and its task ends. */
  #done(): void {
    const flight = this.#flight;
    if (flight === undefined) return;
    this.#flight = undefined;
    flight.end();
    this.#owner.abandon();
    const release = this.#release;
    this.#release = undefined;
    release?.();
  }

  onRequestStart(controller: DispatchController, _context: unknown): void {
    this.#controller.attach(controller);
  }

  onRequestUpgrade(_controller: DispatchController, statusCode: number, headers: unknown, socket: unknown): void {
    this.#done();
    this.#body?.end();
    this.#caller.onRequestUpgrade?.(this.#controller, statusCode, headers, socket);
  }

  onResponseStart(_controller: DispatchController, statusCode: number, headers: unknown, statusMessage?: string): void {
    if (statusCode >= 200) {
      this.#body?.headers();
      try {
        const flight = this.#flight;
        if (flight !== undefined) this.#owner.observe(statusCode, headers, this.#attempt, flight.others());
      } finally {
        this.#done();
      }
    }
    this.#caller.onResponseStart?.(this.#controller, statusCode, headers, statusMessage);
  }

  onResponseData(_controller: DispatchController, chunk: unknown): void {
    this.#body?.data();
    this.#caller.onResponseData?.(this.#controller, chunk);
  }

  onResponseEnd(_controller: DispatchController, trailers: unknown): void {
    // No guard against a later onResponseError: undici reports an error thrown by onResponseEnd
    // through it, and undici's retry interceptor relies on that (its `throwOnError` path).
    this.#done();
    this.#body?.end();
    this.#caller.onResponseEnd?.(this.#controller, trailers);
  }

  onResponseError(_controller: DispatchController | null, error: unknown): void {
    this.#done();
    this.#body?.end();
    this.#failed = true;
    // The next dispatcher's error may quote the URL or a header: the caller gets it scrubbed.
    this.#caller.onResponseError?.(this.#controller, this.#owner.scrub(error));
  }

  onResponseStarted(): void {
    this.#caller.onResponseStarted?.();
  }

  onRequestSent(): void {
    this.#caller.onRequestSent?.();
  }

  onBodySent(chunk: unknown): void {
    this.#caller.onBodySent?.(chunk);
  }
}
