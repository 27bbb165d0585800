/**
 * A private redis-server process on 127.0.0.1 and a free port, without persistence, stopped by pid.
 * Used by the test suites (through `server.ts`), the benchmark and the fleet example.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The redis-server binary: `SLUICE_REDIS_SERVER` or `redis-server` on the PATH. */
export const BINARY: string = process.env.SLUICE_REDIS_SERVER ?? "redis-server";

/** A free TCP port on 127.0.0.1 (the OS picks it; a tiny race with other processes is retried in start). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0));
    });
  });
}

/** A running redis-server. */
export interface RedisServer {
  readonly port: number;
  readonly pid: number;
  readonly url: string;
  /** SIGKILL and wait for the exit (a crash: no clean shutdown). */
  kill(): Promise<void>;
  /** Starts again on the same port (after kill). */
  restart(): Promise<void>;
  /** Stops for good. */
  stop(): Promise<void>;
}

function launch(port: number, cluster: boolean): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const extra = cluster
      ? ["--cluster-enabled", "yes", "--cluster-config-file", `sluice-test-nodes-${port}.conf`, "--cluster-announce-ip", "127.0.0.1"]
      : [];
    const child = spawn(
      BINARY,
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no",
        "--loglevel", "notice", "--dir", tmpdir(), ...extra],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`redis-server on port ${port} did not start:\n${output}`));
    }, 10_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.includes("Ready to accept connections")) {
        clearTimeout(timer);
        child.stdout!.off("data", onData);
        child.stdout!.resume();
        child.stderr!.resume();
        resolve(child);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server on port ${port} exited with ${code}:\n${output}`));
    });
  });
}

function waitExit(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill(signal);
  });
}

/**
 * Starts a private redis-server; stop it in afterAll. With `cluster`, a one-node Redis Cluster that
 * owns every slot (the caller assigns them): scripts then refuse keys of different slots (CROSSSLOT).
 */
export async function startRedis(options: { cluster?: boolean } = {}): Promise<RedisServer> {
  const cluster = options.cluster === true;
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    try {
      let child = await launch(port, cluster);
      const server: RedisServer = {
        port,
        get pid() {
          return child.pid!;
        },
        url: `redis://127.0.0.1:${port}`,
        kill: () => waitExit(child, "SIGKILL"),
        restart: async () => {
          child = await launch(port, cluster);
        },
        stop: async () => {
          await waitExit(child, "SIGKILL");
          if (cluster) rmSync(join(tmpdir(), `sluice-test-nodes-${port}.conf`), { force: true });
        },
      };
      return server;
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}
