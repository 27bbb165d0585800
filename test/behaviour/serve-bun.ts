/**
 * `Serve` for Bun: `Bun.serve` on 127.0.0.1, an ephemeral port.
 *
 * @module
 */
import type { Handler, TestServer } from "./harness.ts";

/** The part of the `Bun` namespace this file uses (typed here so Node's type check needs no Bun types). */
interface BunServe {
  serve(options: { hostname: string; port: number; fetch: Handler }): { readonly port: number; stop(force?: boolean): Promise<void> | void };
}

export async function serveBun(handler: Handler): Promise<TestServer> {
  const bun = (globalThis as unknown as { Bun: BunServe }).Bun;
  const server = bun.serve({ hostname: "127.0.0.1", port: 0, fetch: handler });
  return {
    url: `http://127.0.0.1:${server.port}`,
    close: async () => {
      await server.stop(true);
    },
  };
}
