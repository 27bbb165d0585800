/**
 * `Serve` for Node (and any runtime with `node:http`): a web-standard handler behind `http.createServer`.
 *
 * @module
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Handler, TestServer } from "./harness.ts";

async function toRequest(req: IncomingMessage, base: string): Promise<Request> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else if (value !== undefined) headers.set(name, value);
  }
  const method = req.method ?? "GET";
  let body: Uint8Array | undefined;
  if (method !== "GET" && method !== "HEAD") {
    const chunks: Uint8Array[] = [];
    for await (const chunk of req) chunks.push(chunk as Uint8Array);
    body = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
    let offset = 0;
    for (const c of chunks) {
      body.set(c, offset);
      offset += c.length;
    }
  }
  return new Request(new URL(req.url ?? "/", base), { method, headers, body: body as BodyInit | undefined });
}

async function send(res: ServerResponse, response: Response): Promise<void> {
  res.statusCode = response.status;
  response.headers.forEach((value, name) => res.setHeader(name, value));
  res.end(new Uint8Array(await response.arrayBuffer()));
}

export function serveNode(handler: Handler): Promise<TestServer> {
  return new Promise((resolve, reject) => {
    let base = "";
    const server = createServer((req, res) => {
      toRequest(req, base)
        .then(handler)
        .then((response) => send(res, response))
        .catch((error: unknown) => {
          res.statusCode = 500;
          res.end(String(error));
        });
    });
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      base = `http://127.0.0.1:${port}`;
      resolve({
        url: base,
        close: () =>
          new Promise<void>((done, fail) => {
            server.close((error) => (error ? fail(error) : done()));
            server.closeAllConnections(); // keep-alive sockets would hold the close open
          }),
      });
    });
  });
}
