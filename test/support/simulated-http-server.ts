/**
 * A node:http adapter for the simulated servers of `sluice/testing`, for real-time tests (a real
 * socket, a real client such as undici or ky). Node-only, so it lives here rather than in the
 * web-standard `sluice/testing` entry. Time is `performance.now()`; a reply's `delayMs` is held
 * with a real timer. `close()` destroys every socket and cancels held replies.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ServerStats, type SimulatedServer } from "../../src/testing.ts";

export interface SimulatedHttpServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly stats: ServerStats;
  close(): Promise<void>;
}

/** Serves `simulated` on 127.0.0.1 with an ephemeral port. */
export async function startSimulatedHttpServer(simulated: SimulatedServer): Promise<SimulatedHttpServer> {
  const stats = new ServerStats();
  const held = new Set<ReturnType<typeof setTimeout>>();
  let queue: Promise<unknown> = Promise.resolve();
  const server: Server = createServer((req, res) => {
    const now = performance.now();
    const inFlight = stats.arrive();
    let departed = false;
    const depart = () => {
      if (!departed) stats.depart();
      departed = true;
    };
    res.on("close", depart);
    const handled = queue.then(async () => simulated.handle(await toRequest(req, server), { now, inFlight }));
    queue = handled.catch(() => undefined);
    handled.then(
      (reply) => {
        stats.record({ at: now, method: req.method ?? "", path: req.url ?? "", status: reply.status });
        const send = () => {
          res.writeHead(reply.status, reply.headers ?? {});
          res.end(reply.body ?? "");
          reply.onDelivered?.(performance.now());
        };
        if (!(reply.delayMs! > 0)) return send();
        const timer = setTimeout(() => {
          held.delete(timer);
          send();
        }, reply.delayMs);
        held.add(timer);
      },
      () => {
        res.writeHead(500).end();
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stats,
    close: () => {
      for (const timer of held) clearTimeout(timer);
      held.clear();
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function toRequest(req: IncomingMessage, server: Server): Promise<Request> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const { port } = server.address() as AddressInfo;
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  return new Request(`http://127.0.0.1:${port}${req.url ?? "/"}`, {
    method: req.method ?? "GET",
    headers,
    ...(hasBody ? { body: Buffer.concat(chunks) } : {}),
  });
}
