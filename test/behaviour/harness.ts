/**
 * The runtime-neutral harness of the behavioural suite: ONE set of test cases that every runtime we
 * claim runs through its own test runner.
 *
 * Case files (`*.cases.ts`, listed in `index.ts`) register cases with {@link describe} and
 * {@link test}, and assert with the small `expect` of `expect.ts`. They import sluice only through its
 * public entry points (`src/index.ts`, `src/testing.ts`), so the same cases can run against the
 * TypeScript source (vitest on Node 24, Deno) or against the built package (Node 20, Bun, Chromium):
 * the bundler used for those swaps the entry modules for `dist/`.
 *
 * A runner adapter (`run/*.ts`, a few lines each) hands every registered case to its runtime's test
 * runner — vitest, node:test, Deno.test, bun:test, or a loop in the browser page — through
 * {@link runCase}, which supplies what the case needs (a local HTTP server), enforces a timeout, and
 * cleans up after it.
 *
 * @module
 */

/** A request handler in web-standard form, as `Deno.serve` and `Bun.serve` take it. */
export type Handler = (request: Request) => Response | Promise<Response>;

/** A local HTTP server a case started; closed by the harness after the case. */
export interface TestServer {
  /** Base URL, e.g. `http://127.0.0.1:43117`. */
  readonly url: string;
  close(): Promise<void>;
}

/** Starts a server on 127.0.0.1 with an ephemeral port (each runtime brings its own). */
export type Serve = (handler: Handler) => Promise<TestServer>;

/** What a runtime offers the cases. */
export interface Platform {
  /** A short name for messages: "node", "deno", "bun", "browser". */
  readonly name: string;
  /** Absent where nothing can listen (a browser page). */
  readonly serve?: Serve;
}

/** Handed to each case. */
export interface CaseContext {
  /** Starts a local server for this case; it is closed when the case ends. */
  serve(handler: Handler): Promise<TestServer>;
  /** Runs `fn` when the case ends, pass or fail (last registered, first run). */
  onCleanup(fn: () => void | Promise<void>): void;
}

/** Capabilities a case may need beyond the JavaScript language and web-standard APIs. */
export type Need = "serve";

export interface CaseOptions {
  /** The case is reported as skipped on a platform that lacks one of these (never silently). */
  readonly needs?: readonly Need[];
  /** Real-time limit in ms for the whole case. @default 10000 */
  readonly timeout?: number;
}

/** One registered case. */
export interface Case {
  /** The enclosing `describe` names. */
  readonly suite: readonly string[];
  readonly name: string;
  readonly options: CaseOptions;
  readonly fn: (t: CaseContext) => void | Promise<void>;
}

const registry: Case[] = [];
const stack: string[] = [];

/** Groups cases under a name (nesting allowed). The body runs at once, synchronously. */
export function describe(name: string, body: () => void): void {
  stack.push(name);
  try {
    body();
  } finally {
    stack.pop();
  }
}

/** Registers a case. Its name should read as a specification of the behaviour. */
export function test(name: string, fn: (t: CaseContext) => void | Promise<void>, options: CaseOptions = {}): void {
  registry.push({ suite: [...stack], name, options, fn });
}

/** Every case registered so far, in registration order. */
export function cases(): readonly Case[] {
  return registry;
}

/** "Suite › Sub-suite › name", for runners without nesting. */
export function fullName(c: Case): string {
  return [...c.suite, c.name].join(" › ");
}

/** Why `c` cannot run on `platform`, or undefined when it can. */
export function skipReason(c: Case, platform: Platform): string | undefined {
  for (const need of c.options.needs ?? []) {
    if (need === "serve" && platform.serve === undefined) return `needs a local server, which ${platform.name} cannot start`;
  }
  return undefined;
}

/** Runs one case on `platform` with its timeout, then its cleanups; rejects when it fails. */
export async function runCase(c: Case, platform: Platform): Promise<void> {
  const cleanups: (() => void | Promise<void>)[] = [];
  const t: CaseContext = {
    async serve(handler) {
      if (platform.serve === undefined) throw new Error(`${platform.name} cannot start a server`);
      const server = await platform.serve(handler);
      cleanups.push(() => server.close());
      return server;
    },
    onCleanup(fn) {
      cleanups.push(fn);
    },
  };
  const limit = c.options.timeout ?? 10_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${limit} ms (real time)`)), limit);
  });
  let failure: { error: unknown } | undefined;
  try {
    await Promise.race([Promise.resolve().then(() => c.fn(t)), timeout]);
  } catch (error) {
    failure = { error };
  } finally {
    clearTimeout(timer);
  }
  for (const cleanup of cleanups.reverse()) {
    try {
      await cleanup();
    } catch (error) {
      failure ??= { error }; // the case's own failure, if any, is the one worth reporting
    }
  }
  if (failure !== undefined) throw failure.error;
}
