/**
 * A `fetch` that answers from a simulated server in virtual time: give it to
 * `createThrottledFetch({ fetch })`, or to your own code, and a virtual hour of traffic runs in
 * well under a second, the same on every run.
 *
 * A request reaches the server after an optional `requestLatency`, is decided at that moment (in
 * arrival order, even when bodies take different times to read), and is answered after the
 * server's delay plus a `latency`; both are drawn from a seeded generator and waited through the
 * clock's timers — so `clock.advance()` / `clock.runAll()` deliver it. An abort rejects with the
 * signal's reason at any point and cancels the timer.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { describeValue, keysOf, onlyKnown, optionsObject } from "../validate.ts";
import { SeededRandom } from "./random.ts";
import type { SimulatedServer } from "./server.ts";
import { ServerStats } from "./stats.ts";

/**
 * Options of {@link createSimulatedFetch}.
 *
 * @example
 * ```ts
 * createSimulatedFetch({ server, clock, latency: { min: 20, max: 200 }, seed: 42 });
 * ```
 */
export interface SimulatedFetchOptions {
  /** The server that answers. */
  server: SimulatedServer;
  /** The clock that times the latency — the same `ManualClock` as the code under test. */
  clock: Clock;
  /** Ms from the server's answer to the response's arrival: a fixed number, or drawn uniformly from [min, max]. @default 0 */
  latency?: number | { min: number; max: number };
  /**
   * Ms from the call to the request's arrival at the server, likewise. With a range, requests can
   * arrive closer together than they were sent — the network jitter that makes a client counting
   * windows from the send time overrun a strict server. @default 0
   */
  requestLatency?: number | { min: number; max: number };
  /** The latency generator's seed. @default 1 */
  seed?: number;
}

/**
 * A simulated `fetch`, with the server's counters.
 *
 * @example
 * ```ts
 * const fetch = createSimulatedFetch({ server, clock });
 * await fetch("https://api.example.com/");
 * fetch.stats.requests; // 1
 * ```
 */
export interface SimulatedFetch {
  (input: string | URL | Request, init?: RequestInit): Promise<Response>;
  /** What the server saw. */
  readonly stats: ServerStats;
}

const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** The reason phrases a Node HTTP/1.1 server sends for the statuses simulated servers answer. */
const STATUS_TEXT: Record<number, string> = {
  200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 400: "Bad Request", 401: "Unauthorized",
  403: "Forbidden", 404: "Not Found", 409: "Conflict", 413: "Payload Too Large", 422: "Unprocessable Entity",
  429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
};

/** Headers that refuse changes, as a fetched response's do (a test must not pass by mutating them). */
class ImmutableHeaders extends Headers {
  override set(): void {
    throw new TypeError("Headers of a fetched response are immutable");
  }
  override append(): void {
    throw new TypeError("Headers of a fetched response are immutable");
  }
  override delete(): void {
    throw new TypeError("Headers of a fetched response are immutable");
  }
}

/**
 * `response` as `fetch` would give it: its `url` the request's, `type` "basic", and headers that
 * refuse changes (on clones too). Code that reads `new URL(response.url)` or mutates the headers
 * then fails here as it would in production.
 */
function asFetched(response: Response, url: string): Response {
  const headers = new ImmutableHeaders(response.headers);
  const clone = response.clone.bind(response);
  Object.defineProperties(response, {
    url: { value: url, enumerable: true },
    type: { value: "basic", enumerable: true },
    headers: { value: headers, enumerable: true },
    clone: { value: () => asFetched(clone(), url) },
  });
  return response;
}

function latencyRange(name: string, value: SimulatedFetchOptions["latency"]): [number, number] {
  const range = typeof value === "object" && value !== null;
  const [min, max] = range ? [value.min, value.max] : [value ?? 0, value ?? 0];
  for (const [part, v] of [[".min", min], [".max", max]] as const) {
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) {
      throw new RangeError(`\`${name}${range ? part : ""}\` must be a non-negative integer, got ${describeValue(v)}`);
    }
  }
  if (max < min) throw new RangeError(`\`${name}.max\` must be at least \`${name}.min\` (${min}), got ${max}`);
  return [min, max];
}

/**
 * Makes a `fetch` that answers from `server` in the virtual time of `clock`. Its responses look
 * fetched: `url` (the request's), `statusText`, `type` "basic", headers that refuse changes, and no
 * body for `HEAD`.
 *
 * @example
 * ```ts
 * import { createThrottledFetch } from "sluice";
 * import { createSimulatedFetch, ManualClock, serveModel, SlidingLogServer } from "sluice/testing";
 *
 * const clock = new ManualClock();
 * const server = createSimulatedFetch({
 *   server: serveModel(new SlidingLogServer({ limit: 10, interval: 1000 })),
 *   clock,
 *   latency: { min: 5, max: 50 },
 * });
 * const api = createThrottledFetch({ limit: 10, interval: 1000, fetch: server, clock });
 * await clock.runUntil(Promise.all(Array.from({ length: 100 }, () => api("https://api.example.com/"))));
 * server.stats.byStatus[429];   // undefined: no 429 at the documented limit
 * ```
 */
export function createSimulatedFetch(options: SimulatedFetchOptions): SimulatedFetch {
  const o = optionsObject("options", options);
  onlyKnown("createSimulatedFetch()", o, keysOf<SimulatedFetchOptions>()("server", "clock", "latency", "requestLatency", "seed"));
  if (typeof o.server?.handle !== "function") throw new TypeError(`\`server\` must have a handle(request, context) method, got ${describeValue(o.server)}`);
  if (typeof o.clock?.now !== "function" || typeof o.clock.setTimeout !== "function") {
    throw new TypeError(`\`clock\` must be a Clock (now, setTimeout, clearTimeout), got ${describeValue(o.clock)}`);
  }
  const server = o.server;
  const clock = o.clock;
  const down = latencyRange("latency", o.latency);
  const up = latencyRange("requestLatency", o.requestLatency);
  const random = new SeededRandom(o.seed ?? 1);
  const draw = ([min, max]: readonly [number, number]) => (min === max ? min : random.int(min, max));
  const stats = new ServerStats();
  // Handlers run one at a time in arrival order, so same-instant requests are decided in that order.
  let queue: Promise<unknown> = Promise.resolve();

  /** Waits `ms` on the clock; an abort rejects with the signal's reason and cancels the timer. */
  const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        clock.clearTimeout(timer);
        reject(signal.reason);
      };
      const timer = clock.setTimeout(() => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      signal.addEventListener("abort", onAbort, { once: true });
    });

  const arrive = async (request: Request, latency: number): Promise<Response> => {
    const signal = request.signal;
    const now = clock.now();
    const inFlight = stats.arrive();
    try {
      const holder = clock as { hold?: (work: Promise<ArrayBuffer>) => Promise<ArrayBuffer> };
      // Reading the request's body takes real event-loop turns (more in a browser): a ManualClock
      // holds its timers meanwhile, so a run is the same on every runtime. Only the read is held,
      // not the handler, which may wait on this clock (review, 2026-11-27: held whole, such a
      // handler cost 0.2 s of real time per request); the handler gets the body from memory.
      const read = typeof holder.hold === "function" && request.body !== null ? holder.hold(queue.then(() => request.clone().arrayBuffer())) : undefined;
      if (read !== undefined) queue = read.catch(() => undefined);
      const handled = queue.then(async () => server.handle(read === undefined ? request : new Request(request, { body: await read }), { now, inFlight }));
      queue = handled.catch(() => undefined);
      const reply = await handled;
      const url = new URL(request.url);
      stats.record({ at: now, method: request.method, path: url.pathname + url.search, status: reply.status });
      signal.throwIfAborted();
      const wait = (reply.delayMs ?? 0) + latency;
      if (wait > 0) await sleep(wait, signal);
      if (!(reply.status >= 200 && reply.status <= 599)) {
        // fetch never resolves with an informational (1xx) answer, and a Response cannot hold one.
        throw new RangeError(`a simulated server must answer a final status (200–599), got ${describeValue(reply.status)}`);
      }
      const nullBody = NULL_BODY.has(reply.status) || request.method === "HEAD";
      const response = asFetched(new Response(nullBody ? null : reply.body ?? "", {
        status: reply.status,
        statusText: STATUS_TEXT[reply.status] ?? "",
        headers: reply.headers,
      }), request.url);
      reply.onDelivered?.(clock.now());
      return response;
    } finally {
      stats.depart();
    }
  };

  const simulated = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    // As fetch: a Request whose body was read cannot be sent (new Request() below checks it too).
    if (input instanceof Request && input.bodyUsed) throw new TypeError("Request body is already used");
    const request = input instanceof Request && init === undefined ? input : new Request(input, init);
    request.signal.throwIfAborted();
    // Both draws happen at the call, in call order, so the sequence never depends on timing.
    const toServer = draw(up);
    const latency = draw(down);
    if (toServer > 0) await sleep(toServer, request.signal);
    return arrive(request, latency);
  };
  return Object.assign(simulated, { stats });
}
