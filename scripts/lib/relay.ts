/**
 * The host side of `serve` in the browser page (`test/behaviour/serve-browser.ts` is the page side).
 *
 * A page cannot accept connections, so the Node host that serves it stands in for the server's socket
 * and the page stands in for the server's handler:
 *
 *   case:  fetch(`${url}/items?x=1`)  ──►  host holds  GET /__relay/7/items?x=1        (page origin)
 *   pump:  GET  /next                 ◄──  host hands over [{ relay: "7", id: "42", … }] (control)
 *   page:  handler(new Request(`${origin}/items?x=1`, …)) → Response
 *   page:  POST /respond/42 { status, headers, body }  ──►  host answers the held request
 *
 * Two origins, for a reason: Chromium opens at most 6 HTTP/1.1 connections per host and port. Held
 * requests, a parked poll and reply posts sharing one origin could take all six with requests that
 * wait for a reply which then cannot get a connection: a deadlock. So the control traffic (open,
 * next, respond, close) has its own port — one parked poll serves every open server, the rest are
 * short posts — and the case's requests go to the page's own origin, where no CORS rule hides a
 * status, a header or a body. (At most 6 of them are in flight at once, as with any real server.)
 *
 * State: `channels` are the open servers (relay ids); a received request sits in `queue` until a poll
 * takes it, then in `held` until the page answers it or its client goes away — never in both, and
 * `queue` holds anything only while no poll is parked. Closing a server destroys its requests'
 * sockets, and later requests to its url are destroyed on arrival: elsewhere a closed server means a
 * network error, so the page's `fetch` rejects with a TypeError here too rather than seeing a status.
 *
 * @module
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { RelayedRequest, RelayedResponse } from "../../test/behaviour/serve-browser.ts";

/** `/__relay/<id>` then the path and query the handler sees. */
const DATA_PATH = /^\/__relay\/(\d+)(\/[^?]*)?(\?.*)?$/;

interface Pending {
  readonly relayed: RelayedRequest;
  /** The held request's response, answered when the page replies. */
  readonly res: ServerResponse;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" });
  res.end(JSON.stringify(value));
}

/**
 * Relays requests for `/__relay/<id>/…` on the page's server to handlers running in the page.
 *
 * @example
 * const relay = new Relay();
 * const server = createServer((req, res) => relay.forward(req, res) || servePage(req, res));
 * // … listen, then: const control = await relay.listen(pageOrigin); open `${pageOrigin}/?relay=${control}`
 * // … when the page is done: relay.leftovers() is [] if it closed everything; await relay.close();
 */
export class Relay {
  /** Ids for servers and requests alike: unique for the host's lifetime, so a stale one never matches. */
  #nextId = 1;
  readonly #channels = new Set<string>();
  #queue: Pending[] = [];
  readonly #held = new Map<string, Pending>();
  #parked: ServerResponse | undefined;
  #control: Server | undefined;
  #pageOrigin = "";

  /** Starts the control endpoint for the page at `pageOrigin`; resolves to the control origin. */
  async listen(pageOrigin: string): Promise<string> {
    this.#pageOrigin = pageOrigin;
    const control = createServer((req, res) => {
      this.#onControl(req, res).catch((error: unknown) => {
        if (!res.headersSent) json(res, 500, String(error));
        else res.destroy();
      });
    });
    this.#control = control;
    await new Promise<void>((resolve) => control.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(control.address() as AddressInfo).port}`;
  }

  /** Takes a request to a relay url on the page's server; false for any other path. */
  forward(req: IncomingMessage, res: ServerResponse): boolean {
    const match = DATA_PATH.exec(req.url ?? "");
    if (match === null) return false;
    const [, relay = "", path = "/", query = ""] = match;
    if (!this.#channels.has(relay)) {
      req.socket.destroy(); // a closed (or never opened) server: refused, as a closed port would be
      return true;
    }
    readBody(req).then((body) => {
      if (!this.#channels.has(relay) || res.destroyed) return void res.destroy();
      const headers: [string, string][] = [];
      for (let i = 0; i < req.rawHeaders.length; i += 2) headers.push([req.rawHeaders[i]!, req.rawHeaders[i + 1]!]);
      const id = String(this.#nextId++);
      const pending: Pending = {
        relayed: { relay, id, method: req.method ?? "GET", path: path + query, headers, body: body.toString("base64") },
        res,
      };
      this.#queue.push(pending);
      res.on("close", () => this.#forget(pending)); // answered, destroyed, or the client went away
      this.#deliver();
    }, () => res.destroy());
    return true;
  }

  /** What is still open: nothing once the page has closed every server it opened. */
  leftovers(): string[] {
    const left: string[] = [];
    if (this.#channels.size > 0) left.push(`${this.#channels.size} server(s) never closed`);
    if (this.#queue.length + this.#held.size > 0) left.push(`${this.#queue.length + this.#held.size} request(s) never answered`);
    if (this.#parked !== undefined) left.push("a poll still parked");
    return left;
  }

  /** Refuses everything still pending and stops the control endpoint. */
  async close(): Promise<void> {
    for (const pending of [...this.#queue, ...this.#held.values()]) pending.res.destroy();
    this.#queue = [];
    this.#held.clear();
    this.#channels.clear();
    this.#answerPoll([]);
    const control = this.#control;
    if (control === undefined) return;
    control.closeAllConnections(); // keep-alive sockets would hold the close open
    await new Promise<void>((resolve) => control.close(() => resolve()));
  }

  async #onControl(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // The page is another origin (another port): let it read the answers. Its requests are all
    // "simple" (GET, or POST with a text/plain body), so no preflight to answer.
    res.setHeader("access-control-allow-origin", this.#pageOrigin);
    const route = `${req.method} ${req.url}`;
    let match: RegExpExecArray | null;
    if (route === "POST /open") {
      const id = String(this.#nextId++);
      this.#channels.add(id);
      return json(res, 200, { id, url: `${this.#pageOrigin}/__relay/${id}` });
    }
    if (route === "GET /next") {
      if (this.#channels.size === 0) return json(res, 200, []); // nothing to wait for: the pump stops
      this.#answerPoll([]); // one pump per page: a newer poll replaces an older one
      this.#parked = res;
      res.on("close", () => {
        if (this.#parked === res) this.#parked = undefined;
      });
      return this.#deliver();
    }
    if ((match = /^POST \/respond\/(\d+)$/.exec(route)) !== null) {
      const reply = JSON.parse((await readBody(req)).toString("utf8")) as RelayedResponse;
      const pending = this.#held.get(match[1]!);
      // Its client went away (an aborted fetch) or its server closed: an expected end, not an error.
      if (pending === undefined) return json(res, 200, { delivered: false });
      this.#forget(pending);
      try {
        pending.res.statusCode = reply.status;
        if (reply.statusText !== "") pending.res.statusMessage = reply.statusText;
        for (const [name, value] of reply.headers) pending.res.appendHeader(name, value);
      } catch (error) {
        pending.res.destroy();
        return json(res, 400, `the handler's response cannot be sent: ${String(error)}`);
      }
      pending.res.end(Buffer.from(reply.body, "base64"));
      return json(res, 200, { delivered: true });
    }
    if ((match = /^POST \/close\/(\d+)$/.exec(route)) !== null) {
      const relay = match[1]!;
      this.#channels.delete(relay);
      for (const pending of [...this.#queue, ...this.#held.values()]) {
        if (pending.relayed.relay !== relay) continue;
        this.#forget(pending);
        pending.res.destroy();
      }
      // With no server left the pump has nothing to wait for: answering now lets close() await it.
      if (this.#channels.size === 0) this.#answerPoll([]);
      return json(res, 200, { remaining: this.#channels.size });
    }
    json(res, 404, `no route ${route}`);
  }

  /** Hands the queue to the parked poll, if there is one and anything to hand. */
  #deliver(): void {
    if (this.#parked === undefined || this.#queue.length === 0) return;
    const batch = this.#queue;
    this.#queue = [];
    for (const pending of batch) this.#held.set(pending.relayed.id, pending);
    this.#answerPoll(batch.map((pending) => pending.relayed));
  }

  #answerPoll(batch: RelayedRequest[]): void {
    const parked = this.#parked;
    this.#parked = undefined;
    if (parked !== undefined) json(parked, 200, batch);
  }

  #forget(pending: Pending): void {
    this.#held.delete(pending.relayed.id);
    const at = this.#queue.indexOf(pending);
    if (at >= 0) this.#queue.splice(at, 1);
  }
}
