/**
 * A stand-in for a rate-limited API, for the examples: a local node:http server on 127.0.0.1 that
 * enforces a strict "limit requests per window" on arrival and answers 429 + Retry-After beyond it.
 * It counts what it accepted and refused, so an example can show "zero 429s".
 *
 * (Examples only. Your code talks to the real API.)
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface LocalApi {
  /** Base URL, e.g. "http://127.0.0.1:53121". */
  readonly url: string;
  /** Requests answered 200. */
  readonly accepted: number;
  /** Requests answered 429. */
  readonly refused: number;
  /** Arrival times (performance.now()) of every request. */
  readonly arrivals: readonly number[];
  /** Every request: its arrival time (performance.now()) and whether it was accepted. */
  readonly log: ReadonlyArray<{ readonly at: number; readonly ok: boolean }>;
  /** `count` requests, after the next `skip`, get 429 with `retry-after-ms`, whatever the window. */
  refuseNext(count: number, retryAfterMs: number, skip?: number): void;
  close(): Promise<void>;
}

export interface LocalApiOptions {
  /** Requests accepted in any window of `window` ms (arrival-based, strict). */
  limit: number;
  window: number;
  /** Extra latency per response, in ms (random up to this). @default 10 */
  jitter?: number;
}

export async function startLocalApi(options: LocalApiOptions): Promise<LocalApi> {
  const { limit, window, jitter = 10 } = options;
  const accepted: number[] = [];
  const arrivals: number[] = [];
  const log: Array<{ at: number; ok: boolean }> = [];
  const forced: Array<number | undefined> = [];
  let ok = 0;
  let refused = 0;
  const server = createServer((req, res) => {
    const now = performance.now();
    arrivals.push(now);
    req.resume();
    req.on("end", () => {
      let status = 200;
      let headers: Record<string, string> = { "content-type": "application/json" };
      const force = forced.shift();
      while (accepted.length > 0 && now - accepted[0]! >= window) accepted.shift();
      if (force !== undefined) {
        status = 429;
        headers = { ...headers, "retry-after-ms": String(force) };
      } else if (accepted.length >= limit) {
        status = 429;
        headers = { ...headers, "retry-after": String(Math.ceil((accepted[0]! + window - now) / 1000)) };
      } else {
        accepted.push(now);
      }
      if (status === 200) ok++;
      else refused++;
      log.push({ at: now, ok: status === 200 });
      setTimeout(() => {
        res.writeHead(status, headers);
        res.end(JSON.stringify({ path: req.url, status }));
      }, Math.random() * jitter);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get accepted() {
      return ok;
    },
    get refused() {
      return refused;
    },
    arrivals,
    log,
    refuseNext(count, retryAfterMs, skip = 0) {
      for (let i = 0; i < skip; i++) forced.push(undefined);
      for (let i = 0; i < count; i++) forced.push(retryAfterMs);
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
