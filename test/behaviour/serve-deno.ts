/**
 * `Serve` for Deno: `Deno.serve` on 127.0.0.1, an ephemeral port.
 *
 * @module
 */
import type { Handler, TestServer } from "./harness.ts";

/** The part of the `Deno` namespace this file uses (typed here so Node's type check needs no Deno types). */
interface DenoServe {
  serve(
    options: { hostname: string; port: number; onListen?: (addr: { port: number }) => void },
    handler: Handler,
  ): { readonly addr: { port: number }; shutdown(): Promise<void>; readonly finished: Promise<void> };
}

export async function serveDeno(handler: Handler): Promise<TestServer> {
  const deno = (globalThis as unknown as { Deno: DenoServe }).Deno;
  const server = deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    close: async () => {
      await server.shutdown();
      await server.finished;
    },
  };
}
