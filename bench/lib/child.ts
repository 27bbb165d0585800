/**
 * Runs a benchmark script in a fresh Node process (same binary, `--expose-gc`) and reads its
 * `RESULT {json}` line, with a time limit: a library that takes minutes is reported as such instead
 * of stalling the run.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Gated } from "../peers.ts";
import { tick } from "./measure.ts";

export interface ChildOutcome<T> {
  result?: T;
  /** Why there is no result: timed out, crashed, or printed none. */
  error?: string;
  /** ms from the `IDLE` line to the process's exit (exit-mode children), or undefined. */
  exitAfterIdleMs?: number;
  /** True when the child had to be killed. */
  killed: boolean;
}

/** Path of a script in `bench/`. */
export function benchScript(name: string): string {
  return fileURLToPath(new URL(`../${name}`, import.meta.url));
}

/**
 * Spawns `script args…` and waits for it. `timeoutMs` counts from the start, or from the `IDLE` line
 * when the child prints one (then the child is expected to exit by itself).
 */
export function runChild<T>(script: string, args: readonly string[], timeoutMs: number): Promise<ChildOutcome<T>> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--expose-gc", script, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let idleAt: number | undefined;
    let killed = false;
    let timer = setTimeout(kill, timeoutMs);
    function kill(): void {
      killed = true;
      child.kill("SIGKILL");
    }
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      if (idleAt === undefined && /^IDLE /m.test(stdout)) {
        idleAt = performance.now();
        clearTimeout(timer);
        timer = setTimeout(kill, timeoutMs);
      }
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      const exitedAt = performance.now();
      const line = stdout.split("\n").find((l) => l.startsWith("RESULT "));
      const outcome: ChildOutcome<T> = { killed };
      if (idleAt !== undefined && !killed) outcome.exitAfterIdleMs = exitedAt - idleAt;
      if (line !== undefined) outcome.result = JSON.parse(line.slice("RESULT ".length)) as T;
      else if (killed) outcome.error = `killed after ${Math.round(timeoutMs / 1000)} s`;
      else if (idleAt === undefined) {
        const lastError = stderr.trim().split("\n").filter((l) => /Error|error/.test(l)).pop() ?? "";
        outcome.error = `exit ${code ?? signal}${lastError === "" ? "" : `: ${lastError.slice(0, 160)}`}`;
      }
      resolve(outcome);
    });
  });
}

/** In a child process: prints the result line the parent reads, and exits. */
export function report(result: unknown): never {
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
  process.exit(0);
}

/** Waits until the library holds all `n` waiters (where it says), else until the event loop is quiet. */
export async function untilQueued(gated: Gated, n: number): Promise<void> {
  if (gated.intakePending !== undefined) {
    while (gated.intakePending() > 0) await tick();
  } else if (gated.waiting !== undefined) {
    while (gated.waiting() < n) await tick();
  }
  for (let i = 0; i < 3; i++) await tick();
}
