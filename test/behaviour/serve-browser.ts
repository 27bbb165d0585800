/**
 * `Serve` for a browser page, which cannot listen: the Node host that serves the page relays HTTP
 * to it. The host side, with the design note and the wire protocol, is `scripts/lib/relay.ts`; this
 * is the page side:
 *
 *   serve(handler)  POST {control}/open        → { id, url }; url = {page origin}/__relay/{id}
 *   one pump        GET  {control}/next        → the requests the host holds, as RelayedRequest[]
 *   per request     handler(Request) → POST {control}/respond/{requestId} with a RelayedResponse
 *   close()         POST {control}/close/{id}  → the host refuses that url from then on
 *
 * One pump serves every open server and runs only while one is open, so a page with no open server
 * has no request outstanding. Handler errors are answered with a 500 carrying the message, as
 * `serve-node.ts` does (the harness answers them first; this catches what remains, e.g. a body that
 * cannot be read).
 *
 * @module
 */
import type { Handler, Serve, TestServer } from "./harness.ts";

/** A request the host holds, as the page receives it. Bodies travel as base64. */
export interface RelayedRequest {
  /** The server (relay) it was sent to. */
  readonly relay: string;
  /** Names the held request in the reply. */
  readonly id: string;
  readonly method: string;
  /** Path and query after the relay's prefix, e.g. `/items?page=2`. */
  readonly path: string;
  /** As received, in order, repeated names repeated. */
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string;
}

/** The handler's answer, as the page posts it back. */
export interface RelayedResponse {
  readonly status: number;
  readonly statusText: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string;
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/** The request the handler sees: same method, headers and body, at `{origin}{path}`. */
function toRequest(relayed: RelayedRequest, origin: string): Request {
  const headers = new Headers();
  for (const [name, value] of relayed.headers) headers.append(name, value);
  const hasBody = relayed.method !== "GET" && relayed.method !== "HEAD";
  // Forbidden request headers (host, origin, content-length, sec-*) are dropped here, as in any page.
  return new Request(origin + relayed.path, {
    method: relayed.method,
    headers,
    body: hasBody ? fromBase64(relayed.body) : null,
  });
}

/** Runs the handler on the relayed request; never rejects (a failure is a 500 with its message). */
async function answer(handler: Handler, relayed: RelayedRequest, origin: string): Promise<RelayedResponse> {
  try {
    const response = await handler(toRequest(relayed, origin));
    const headers: [string, string][] = [];
    response.headers.forEach((value, name) => headers.push([name, value]));
    const body = toBase64(new Uint8Array(await response.arrayBuffer()));
    return { status: response.status, statusText: response.statusText, headers, body };
  } catch (error) {
    return { status: 500, statusText: "", headers: [], body: toBase64(new TextEncoder().encode(String(error))) };
  }
}

interface OpenServer {
  readonly handler: Handler;
  /** The origin of the server's url: the page's own. */
  readonly origin: string;
  /** Replies being posted; close() waits for them, never for a handler still running. */
  readonly replies: Set<Promise<void>>;
}

/**
 * A `Serve` that relays through the host's control endpoint at `control` (an origin, e.g.
 * `http://127.0.0.1:43118`).
 *
 * @example
 * const serve = relayServe(new URLSearchParams(location.search).get("relay")!);
 * const server = await serve(() => new Response("slow down", { status: 429, headers: { "retry-after": "7" } }));
 * (await fetch(`${server.url}/items`)).status; // 429
 * await server.close();
 */
export function relayServe(control: string): Serve {
  const open = new Map<string, OpenServer>();
  let pumping = false;
  let pumped: Promise<void> = Promise.resolve();
  /** Why the relay broke (the host went away, a protocol error); thrown by the next close(). */
  let broken: { error: unknown } | undefined;

  /** One control call; its response body is read whole, so no stream is left open. */
  async function call(method: "GET" | "POST", path: string, body?: unknown): Promise<string> {
    // A string body makes a text/plain "simple" cross-origin request: no preflight round trip.
    const response = await fetch(control + path, { method, body: body === undefined ? null : JSON.stringify(body) });
    const text = await response.text();
    if (!response.ok) {
      throw new Error(`relay: ${method} ${path} answered ${response.status} ${text}`);
    }
    return text;
  }

  function dispatch(relayed: RelayedRequest): void {
    const server = open.get(relayed.relay);
    if (server === undefined) return; // closed meanwhile; the host has refused the request itself
    void answer(server.handler, relayed, server.origin).then((response) => {
      if (open.get(relayed.relay) !== server) return; // closed while the handler ran: nobody to answer
      // The host says { delivered: false } when the client went away (an aborted fetch): nothing to do.
      const reply: Promise<void> = call("POST", `/respond/${relayed.id}`, response)
        .then(() => {}, (error: unknown) => void (broken ??= { error }))
        .finally(() => server.replies.delete(reply));
      server.replies.add(reply);
    });
  }

  async function pump(): Promise<void> {
    try {
      // The last check and `pumping = false` run in one synchronous step, so an open() that races
      // the last close() always finds the pump either running or stopped, never stopping.
      while (open.size > 0) {
        for (const relayed of JSON.parse(await call("GET", "/next")) as RelayedRequest[]) dispatch(relayed);
      }
    } catch (error) {
      broken ??= { error };
    }
    pumping = false;
  }

  return async (handler: Handler): Promise<TestServer> => {
    const { id, url } = JSON.parse(await call("POST", "/open")) as { id: string; url: string };
    const server: OpenServer = { handler, origin: new URL(url).origin, replies: new Set() };
    open.set(id, server);
    if (!pumping) {
      pumping = true;
      pumped = pump();
    }
    return {
      url,
      async close() {
        if (open.get(id) !== server) return;
        open.delete(id);
        const { remaining } = JSON.parse(await call("POST", `/close/${id}`)) as { remaining: number };
        // With no server left, the host has answered the parked poll with [], so the pump stops now
        // (unless a server opened meanwhile, which keeps it and this wait going until it closes).
        await Promise.all([...server.replies, ...(remaining === 0 && open.size === 0 ? [pumped] : [])]);
        if (broken !== undefined) {
          const { error } = broken;
          broken = undefined;
          throw error;
        }
      },
    };
  };
}
