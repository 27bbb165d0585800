/** Running other programs from the check scripts: output captured, failures thrown with it. */
import { spawn, spawnSync } from "node:child_process";

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Milliseconds before the program is killed (the run then counts as failed). */
  timeout?: number;
  /** Show the program's output as it runs (for test runners) instead of capturing it. */
  inherit?: boolean;
}

export interface RunResult {
  /** The exit code; 128 + n style codes are reported as 1 when the program was killed by a signal. */
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs `command` to completion. Rejects only when it cannot start; a non-zero exit is in `status`. */
export function exec(command: string, args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: options.inherit === true ? ["ignore", "inherit", "inherit"] : ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    let killed = false;
    const timer = options.timeout === undefined ? undefined : setTimeout(() => {
      killed = true;
      child.kill("SIGKILL");
    }, options.timeout);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${command}: ${error.message}`));
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      if (killed) stderr += `\n(killed after ${options.timeout} ms)`;
      resolve({ status: killed ? 1 : (code ?? 1), stdout, stderr });
    });
  });
}

/** Runs `command` and rejects, with its output in the message, unless it exits with 0. */
export async function run(command: string, args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  const result = await exec(command, args, options);
  if (result.status !== 0) {
    const output = `${result.stdout}\n${result.stderr}`.trim();
    throw new Error(`\`${[command, ...args].join(" ")}\` exited with ${result.status}${output ? `\n${output}` : ""}`);
  }
  return result;
}

/** Synchronous, for quick probes (`--version`). Returns undefined when the program cannot run. */
export function probe(command: string, args: readonly string[]): string | undefined {
  const result = spawnSync(command, args, { encoding: "utf8", timeout: 30_000 });
  if (result.error !== undefined || result.status !== 0) return undefined;
  return result.stdout.trim();
}
