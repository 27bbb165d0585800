/**
 * The parts of undici's dispatcher API the interceptor touches, typed structurally: sluice never
 * imports undici (not even its types), so one build serves undici 7 and 8 — and whichever copy a
 * program uses — and `sluice/undici` loads without undici installed.
 *
 * The handler API is undici's current one (`onRequestStart`, `onResponseStart`, `onResponseData`,
 * `onResponseEnd`, `onResponseError`, `onRequestUpgrade`), introduced in undici 7 and the only one in
 * undici 8.
 *
 * @module
 */

/**
 * What the interceptor reads of a dispatch — the first argument of undici's `dispatch(options,
 * handler)` (`Dispatcher.DispatchOptions`). The functions given as `key` and `permits` receive
 * undici's whole options object; these are the fields sluice relies on.
 *
 * @example
 * ```ts
 * const key = (request: DispatchRequest) => `${String(request.origin)} ${request.method}`;
 * ```
 */
export interface DispatchRequest {
  /** The server, e.g. `"https://api.example.com"` (undici's agents always set it). */
  readonly origin?: string | URL | null | undefined;
  /** The path and query, e.g. `"/v1/items?page=2"`. */
  readonly path: string;
  /** The method, e.g. `"GET"`. */
  readonly method: string;
  /** The request headers, in any of undici's forms (object, flat array, iterable). */
  readonly headers?: unknown;
}

/** undici's `DispatchController`: what a handler uses to abort, pause and resume its request. @internal */
export interface DispatchController {
  abort(reason?: unknown): void;
  pause(): void;
  resume(): void;
  readonly aborted: boolean;
  readonly paused: boolean;
  readonly reason: unknown;
  readonly rawHeaders?: unknown;
  readonly rawTrailers?: unknown;
}

/** undici's `DispatchHandler` (the API of undici 7 and 8). @internal */
export interface DispatchHandler {
  onRequestStart?(controller: DispatchController, context: unknown): void;
  onRequestUpgrade?(controller: DispatchController, statusCode: number, headers: unknown, socket: unknown): void;
  onResponseStart?(controller: DispatchController, statusCode: number, headers: unknown, statusMessage?: string): void;
  onResponseData?(controller: DispatchController, chunk: unknown): void;
  onResponseEnd?(controller: DispatchController, trailers: unknown): void;
  onResponseError?(controller: DispatchController | null, error: unknown): void;
  /** Called by undici when the first byte of the response arrives (timing only). */
  onResponseStarted?(): void;
  onRequestSent?(): void;
  onBodySent?(chunk: unknown): void;
  /** The legacy API (undici ≤ 6), recognised only to explain that it is not served. */
  onConnect?: unknown;
  onError?: unknown;
}

/** undici's `dispatch` function. @internal */
export type Dispatch = (options: DispatchRequest, handler: DispatchHandler) => boolean;

/**
 * An undici interceptor, for `agent.compose(...)` / `Dispatcher.compose(...)`: it takes the
 * `dispatch` it wraps and returns one of the same type. Generic, so it fits the `Dispatcher` types
 * of undici 7 and 8 alike without sluice importing either.
 *
 * @example
 * ```ts
 * import { Agent } from "undici";
 * const interceptor: UndiciInterceptor = throttle({ limiter });
 * const agent = new Agent().compose(interceptor);
 * ```
 */
export type UndiciInterceptor = <D extends (options: never, handler: never) => boolean>(dispatch: D) => D;
