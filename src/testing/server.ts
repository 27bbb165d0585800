/**
 * The shape every simulated server has for the adapters (fetch, node:http, msw): a request in, a
 * reply out, with the arrival time and concurrency handed in so the server itself stays pure.
 *
 * @module
 */
import { describeValue, keysOf, onlyKnown, optionsObject, requireFunction } from "../validate.ts";
import type { Decision, ServerModel } from "./decision.ts";

/**
 * What the adapter tells a server about the moment a request arrives.
 *
 * @example
 * ```ts
 * const busy: SimulatedServer = { handle: (_request, { inFlight }) => ({ status: inFlight > 10 ? 503 : 200 }) };
 * ```
 */
export interface ServerContext {
  /** The arrival time, ms on the adapter's clock. */
  readonly now: number;
  /** Requests in flight at the server, this one included. */
  readonly inFlight: number;
}

/**
 * A simulated server's answer.
 *
 * @example
 * ```ts
 * const reply: SimulatedReply = { status: 429, headers: { "retry-after": "2" }, body: "slow down" };
 * ```
 */
export interface SimulatedReply {
  /** The HTTP status the simulated server answers with. */
  readonly status: number;
  /** Response headers (rate-limit headers, `retry-after`, …). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The body text. @default "" */
  readonly body?: string;
  /** How long the server holds the request before answering (nginx's delay), ms; latency comes on top. */
  readonly delayMs?: number;
  /** Called when the response is delivered, with the time: the moment a metered server learns actual usage. */
  readonly onDelivered?: (now: number) => void;
}

/**
 * A simulated HTTP server: the vendor simulators implement it, and {@link serveModel} makes one of
 * any {@link ServerModel}.
 *
 * @example
 * ```ts
 * import type { SimulatedServer } from "sluice/testing";
 * const teapot: SimulatedServer = { handle: () => ({ status: 418, body: "short and stout" }) };
 * ```
 */
export interface SimulatedServer {
  /** Answers `request`, which arrived at `context.now`; may be async (to read the body). */
  handle(request: Request, context: ServerContext): SimulatedReply | Promise<SimulatedReply>;
}

/**
 * Options of {@link serveModel}.
 *
 * @example
 * ```ts
 * serveModel(new TokenBucketServer({ limit: 1000 }), { cost: (request) => Number(request.headers.get("x-cost") ?? 1) });
 * ```
 */
export interface ServeModelOptions {
  /** The cost of a request in the model's units. @default 1 */
  cost?: (request: Request) => number;
  /** The body of a response. @default "ok", or "Too Many Requests" (the status text) when refused */
  body?: (request: Request, decision: Decision) => string;
}

/**
 * Serves a {@link ServerModel} over HTTP: each request is decided at its arrival, answered with the
 * decision's status and headers, and held for the decision's `delayMs`.
 *
 * @example
 * ```ts
 * import { createSimulatedFetch, ManualClock, serveModel, SlidingLogServer } from "sluice/testing";
 * const clock = new ManualClock();
 * const fetch = createSimulatedFetch({ server: serveModel(new SlidingLogServer({ limit: 10 })), clock });
 * ```
 */
export function serveModel(model: ServerModel, options: ServeModelOptions = {}): SimulatedServer {
  if (typeof (model as Partial<ServerModel> | null)?.decide !== "function") {
    throw new TypeError(`\`model\` must be a server model (with a decide method), got ${describeValue(model)}`);
  }
  const o = optionsObject("options", options);
  onlyKnown("serveModel()", o, keysOf<ServeModelOptions>()("cost", "body"));
  const cost = o.cost === undefined ? undefined : requireFunction("cost", o.cost);
  const body = o.body === undefined ? undefined : requireFunction("body", o.body);
  return {
    handle(request, { now }) {
      const d = model.decide(now, cost?.(request) ?? 1);
      return {
        status: d.status,
        headers: d.headers,
        body: body?.(request, d) ?? (d.allowed ? "ok" : d.status === 503 ? "Service Temporarily Unavailable" : "Too Many Requests"),
        delayMs: d.delayMs,
      };
    },
  };
}
