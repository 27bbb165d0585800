/**
 * Real HTTP servers for integration tests, on 127.0.0.1 with an ephemeral port. Each logs every
 * arrival with `performance.now()` — the same clock the client's limiter uses — so client and
 * server times are directly comparable. `close()` destroys every socket, so nothing stays open.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Arrival {
  /** performance.now() when the request arrived. */
  at: number;
  method: string;
  path: string;
  status: number;
  /** performance.now() when the response was sent (headers and body). */
  sentAt: number;
  body: string;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: string, arrival: Arrival) => void | Promise<void>;

export interface TestServer {
  readonly url: string;
  /** The node:http server, e.g. to count its connections. */
  readonly server: Server;
  readonly arrivals: Arrival[];
  close(): Promise<void>;
}

/** Starts a server whose requests are answered by `handler` once their body has been read. */
export async function startServer(handler: Handler): Promise<TestServer> {
  const arrivals: Arrival[] = [];
  const server: Server = createServer((req, res) => {
    const arrival: Arrival = { at: performance.now(), method: req.method ?? "", path: req.url ?? "", status: 0, sentAt: NaN, body: "" };
    arrivals.push(arrival);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", () => {});
    req.on("end", () => {
      arrival.body = Buffer.concat(chunks).toString();
      res.on("finish", () => {
        arrival.status = res.statusCode;
        arrival.sentAt = performance.now();
      });
      void handler(req, res, arrival.body, arrival);
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    arrivals,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** Sends a response after `latency` ms (0 = at once). */
export function respond(res: ServerResponse, status: number, headers: Record<string, string> = {}, body = "", latency = 0): void {
  const send = () => {
    if (res.destroyed) return;
    res.writeHead(status, { "content-type": "text/plain", ...headers });
    res.end(body);
  };
  if (latency > 0) setTimeout(send, latency);
  else send();
}

export interface StrictWindowOptions {
  /** Requests accepted in any window of `window` ms. */
  limit: number;
  window: number;
  /** Latency added to every response, ms: a function to vary it. */
  latency?: () => number;
  /** How the 429 says when to come back. */
  retryAfter?: "seconds" | "ms";
}

/**
 * A strict rolling window server: a request is accepted when fewer than `limit` ACCEPTED requests
 * arrived in the last `window` ms (strictly: arrivals a with t − a < window); otherwise 429 with
 * Retry-After. `force429(n, ms)` makes the next n requests 429 whatever the window.
 */
export class StrictWindowHandler {
  readonly #o: StrictWindowOptions;
  readonly #accepted: number[] = [];
  #forced: Array<number> = [];
  rejected = 0;

  constructor(options: StrictWindowOptions) {
    this.#o = options;
  }

  force429(count: number, retryAfterMs: number): void {
    for (let i = 0; i < count; i++) this.#forced.push(retryAfterMs);
  }

  readonly handle: Handler = (_req, res, _body, arrival) => {
    const t = arrival.at;
    const latency = this.#o.latency?.() ?? 0;
    const forced = this.#forced.shift();
    if (forced !== undefined) {
      this.rejected++;
      respond(res, 429, { "retry-after-ms": String(forced) }, "forced", latency);
      return;
    }
    while (this.#accepted.length > 0 && t - this.#accepted[0]! >= this.#o.window) this.#accepted.shift();
    if (this.#accepted.length >= this.#o.limit) {
      this.rejected++;
      const wait = this.#accepted[0]! + this.#o.window - t;
      const header: Record<string, string> = this.#o.retryAfter === "seconds"
        ? { "retry-after": String(Math.ceil(wait / 1000)) }
        : { "retry-after-ms": String(Math.ceil(wait)) };
      respond(res, 429, header, "too many", latency);
      return;
    }
    this.#accepted.push(t);
    respond(res, 200, {}, "ok", latency);
  };
}

/** The most arrivals (of any status) inside any half-open window of `window` ms. */
export function maxInWindow(times: readonly number[], window: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let start = 0;
  for (let end = 0; end < sorted.length; end++) {
    while (sorted[end]! - sorted[start]! >= window) start++;
    best = Math.max(best, end - start + 1);
  }
  return best;
}

/**
 * nginx `limit_req zone rate=R burst=B nodelay`, computed as ngx_http_limit_req_module does: on a
 * whole-ms clock, in thousandths of a request, `excess = max(0, excess − R·ms + 1000)`; a request
 * that would make `excess > B·1000` is rejected (503, nginx's default `limit_req_status`) and leaves
 * the state unchanged. With B = 0 a request 49 ms after the last one at 20 r/s is rejected.
 */
export class LeakyBucketHandler {
  readonly #rate: number;
  readonly #burst: number;
  #excess = 0;
  #last: number | undefined;
  rejected = 0;

  constructor(ratePerSecond: number, burst: number) {
    this.#rate = ratePerSecond; // thousandths of a request drained per ms
    this.#burst = burst * 1000;
  }

  readonly handle: Handler = (_req, res, _body, arrival) => {
    const now = Math.floor(arrival.at);
    if (this.#last !== undefined) {
      const excess = Math.max(0, this.#excess - this.#rate * (now - this.#last) + 1000);
      if (excess > this.#burst) {
        this.rejected++;
        respond(res, 503, {}, "limit_req");
        return;
      }
      this.#excess = excess;
    }
    this.#last = now;
    respond(res, 200, {}, "ok");
  };
}
