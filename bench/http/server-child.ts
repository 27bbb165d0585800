/**
 * Runs a bench server (`server.ts`) in its own process, so the server's work does not share the
 * client's event loop and CPU time with the code being measured (as an outside tester measured it).
 * Prints `READY <url>` once listening; on a `reset` line on stdin forgets its counts, on `stats`
 * prints `STATS {json}`; exits when stdin closes.
 *
 *   node bench/http/server-child.ts open
 *   node bench/http/server-child.ts strict <limit> <window>
 *
 * @module
 */
import { createInterface } from "node:readline";
import { startServer, type ServerMode } from "./server.ts";

const [kind, limit, window] = process.argv.slice(2);
const mode: ServerMode = kind === "strict" ? { kind: "strict", limit: Number(limit), window: Number(window) } : { kind: "open" };
const server = await startServer(mode);
process.stdout.write(`READY ${server.url}\n`);
const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  if (line === "reset") {
    server.reset();
    process.stdout.write("RESET\n");
  } else if (line === "stats") {
    process.stdout.write(`STATS ${JSON.stringify(server.stats)}\n`);
  }
});
lines.on("close", () => {
  void server.close().then(() => process.exit(0));
});
