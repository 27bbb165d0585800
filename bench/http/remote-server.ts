/**
 * A bench server (`server.ts`) in a child process, driven from the bench: the server's work runs on
 * its own event loop and CPU time, not the client's, as an outside tester measured it — in-process,
 * every request's server half would be counted against every client.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { ServerMode, ServerStats } from "./server.ts";

export interface RemoteServer {
  url: string;
  /** The server's counts since the last reset. */
  stats(): Promise<ServerStats>;
  reset(): Promise<void>;
  close(): Promise<void>;
}

export async function startRemoteServer(mode: ServerMode): Promise<RemoteServer> {
  const script = fileURLToPath(new URL("./server-child.ts", import.meta.url));
  const args = mode.kind === "strict" ? ["strict", String(mode.limit), String(mode.window)] : ["open"];
  const child = spawn(process.execPath, [script, ...args], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout });
  const waiting: ((line: string) => void)[] = [];
  lines.on("line", (line) => waiting.shift()?.(line));
  const next = () => new Promise<string>((resolve) => waiting.push(resolve));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const ready = await Promise.race([next(), exited.then(() => "")]);
  const url = /^READY (\S+)$/.exec(ready)?.[1];
  if (url === undefined) throw new Error(`the bench server did not start (${ready || "exited"})`);
  return {
    url,
    async stats() {
      const reply = next();
      child.stdin.write("stats\n");
      return JSON.parse((await reply).slice("STATS ".length)) as ServerStats;
    },
    async reset() {
      const reply = next();
      child.stdin.write("reset\n");
      await reply;
    },
    async close() {
      child.stdin.end();
      await exited;
    },
  };
}
