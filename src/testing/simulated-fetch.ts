/**
 * A `fetch` that answers from a simulated server in virtual time: give it to
 * `createThrottledFetch({ fetch })`, or to your own code, and a virtual hour of traffic runs in
 * well under a second, the same on every run.
 *
 * A request is decided the moment it is called (in call order, even when bodies take different
 * times to read), then answered after the server's delay plus a latency drawn from a seeded
 * generator, through the clock's timers — so `clock.advance()` / `clock.runAll()` deliver it.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { describeValue, optionsObject } from "../validate.ts";
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

function latencyRange(value: SimulatedFetchOptions["latency"]): [number, number] {
  const [min, max] = typeof value === "object" && value !== null ? [value.min, value.max] : [value ?? 0, value ?? 0];
  for (const [name, v] of [["latency.min", min], ["latency.max", max]] as const) {
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) {
      throw new RangeError(`\`${typeof value === "object" ? name : "latency"}\` must be a non-negative integer, got ${describeValue(v)}`);
    }
  }
  if (max < min) throw new RangeError(`\`latency.max\` must be at least \`latency.min\` (${min}), got ${max}`);
  return [min, max];
}

/**
 * Makes a `fetch` that answers from `server` in the virtual time of `clock`.
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
 * const done = Promise.all(Array.from({ length: 100 }, () => api("https://api.example.com/")));
 * await clock.runAll();
 * await done;
 * server.stats.byStatus[429];   // undefined: no 429 at the documented limit
 * ```
 */
export function createSimulatedFetch(options: SimulatedFetchOptions): SimulatedFetch {
  const o = optionsObject("options", options);
  if (typeof o.server?.handle !== "function") throw new TypeError(`\`server\` must have a handle(request, context) method, got ${describeValue(o.server)}`);
  if (typeof o.clock?.now !== "function" || typeof o.clock.setTimeout !== "function") {
    throw new TypeError(`\`clock\` must be a Clock (now, setTimeout, clearTimeout), got ${describeValue(o.clock)}`);
  }
  const server = o.server;
  const clock = o.clock;
  const [min, max] = latencyRange(o.latency);
  const random = new SeededRandom(o.seed ?? 1);
  const stats = new ServerStats();
  // Handlers run one at a time in call order, so same-instant requests are decided in arrival order.
  let queue: Promise<unknown> = Promise.resolve();

  const simulated = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    let request: Request;
    try {
      request = input instanceof Request && init === undefined ? input : new Request(input, init);
    } catch (error) {
      return Promise.reject(error);
    }
    const signal = request.signal;
    if (signal.aborted) return Promise.reject(signal.reason);
    const now = clock.now();
    const inFlight = stats.arrive();
    const latency = min === max ? min : random.int(min, max);
    const url = new URL(request.url);
    const handled = queue.then(() => server.handle(request, { now, inFlight }));
    queue = handled.catch(() => undefined);
    return handled.then(
      (reply) => {
        stats.record({ at: now, method: request.method, path: url.pathname + url.search, status: reply.status });
        if (signal.aborted) {
          stats.depart();
          throw signal.reason;
        }
        const respond = () => {
          stats.depart();
          reply.onDelivered?.(clock.now());
          return new Response(NULL_BODY.has(reply.status) ? null : reply.body ?? "", { status: reply.status, headers: reply.headers });
        };
        const wait = (reply.delayMs ?? 0) + latency;
        if (wait <= 0) return respond();
        return new Promise<Response>((resolve, reject) => {
          const onAbort = () => {
            clock.clearTimeout(timer);
            stats.depart();
            reject(signal.reason);
          };
          const timer = clock.setTimeout(() => {
            signal.removeEventListener("abort", onAbort);
            try {
              resolve(respond());
            } catch (error) {
              reject(error);
            }
          }, wait);
          signal.addEventListener("abort", onAbort, { once: true });
        });
      },
      (error: unknown) => {
        stats.depart();
        throw error;
      },
    );
  };
  return Object.assign(simulated, { stats });
}
