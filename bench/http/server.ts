/**
 * Local `node:http` servers for the HTTP section, on 127.0.0.1 and a free port:
 * - `open`: answers every request with a small 200 at once (for client overhead);
 * - `strict`: at most `limit` requests accepted in ANY rolling `window` ms (a sliding log of accepted
 *   arrival times); over that it answers 429 with `Retry-After` (whole seconds, rounded up, until the
 *   oldest accepted request leaves the window). A 429 does not count against the limit.
 *
 * @module
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ServerStats {
  /** Arrival times (ms, the server's `performance.now`) of accepted requests. */
  accepted: number[];
  /** How many requests were answered 429. */
  rejected: number;
}

export interface RunningServer {
  url: string;
  stats: ServerStats;
  /** Forgets the counts and the log (between clients). */
  reset(): void;
  close(): Promise<void>;
}

export type ServerMode = { kind: "open" } | { kind: "strict"; limit: number; window: number };

export async function startServer(mode: ServerMode): Promise<RunningServer> {
  const stats: ServerStats = { accepted: [], rejected: 0 };
  let head = 0; // accepted[head..] are inside the window (strict mode)
  const server: Server = createServer((req, res) => {
    const now = performance.now();
    req.resume();
    if (mode.kind === "strict") {
      while (head < stats.accepted.length && stats.accepted[head]! <= now - mode.window) head++;
      if (stats.accepted.length - head >= mode.limit) {
        stats.rejected++;
        const wait = stats.accepted[head]! + mode.window - now;
        res.writeHead(429, { "content-type": "text/plain", "retry-after": String(Math.max(1, Math.ceil(wait / 1000))) });
        res.end("Too Many Requests\n");
        return;
      }
    }
    stats.accepted.push(now);
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"ok":true}\n');
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    stats,
    reset() {
      stats.accepted.length = 0;
      stats.rejected = 0;
      head = 0;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
