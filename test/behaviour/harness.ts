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
 * cleans up after it. Every platform runs every case: one that lacks what a case needs fails it.
 *
 * @module
 */

/** A request handler in web-standard form, as `Deno.serve` and `Bun.serve` take it. */
export type Handler = (request: Request) => Response | Promise<Response>;

/** A local HTTP server a case started; closed by the harness after the case. */
export interface TestServer {
  /**
   * Base URL, e.g. `http://127.0.0.1:43117` (in the browser `http://127.0.0.1:43117/__relay/3`).
   * A request to `${url}/items?page=2` reaches the handler with `new URL(request.url)` giving
   * pathname `/items` and search `?page=2`; read those, not the whole `request.url`.
   */
  readonly url: string;
  close(): Promise<void>;
}

/** Starts a server on 127.0.0.1 with an ephemeral port (each runtime brings its own). */
export type Serve = (handler: Handler) => Promise<TestServer>;

/** What a runtime offers the cases. */
export interface Platform {
  /** A short name for messages: "node", "deno", "bun", "browser". */
  readonly name: string;
  /** Absent where nothing can serve; the cases that need it then fail. */
  readonly serve?: Serve;
}

export interface ServeOptions {
  /**
   * A handler that throws is answered with a 500 carrying the error's message, on every platform;
   * it also fails the case (an `expect` inside a handler must not turn into a mere 500) unless this
   * is true, for a case about that 500.
   * @default false
   */
  readonly handlerMayThrow?: boolean;
}

/** Handed to each case. */
export interface CaseContext {
  /** Starts a local server for this case; it is closed when the case ends. */
  serve(handler: Handler, options?: ServeOptions): Promise<TestServer>;
  /** Runs `fn` when the case ends, pass or fail (last registered, first run). */
  onCleanup(fn: () => void | Promise<void>): void;
}

/** Capabilities a case may need beyond the JavaScript language and web-standard APIs. */
export type Need = "serve";

export interface CaseOptions {
  /** What the case uses; on a platform that lacks one the case fails, saying which (never skipped). */
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

/** What `c` needs that `platform` lacks, as a failure message; undefined when it has everything. */
function missingNeed(c: Case, platform: Platform): string | undefined {
  for (const need of c.options.needs ?? []) {
    if (need === "serve" && platform.serve === undefined) return `needs a local server, which ${platform.name} cannot start`;
  }
  return undefined;
}

/** A cleanup that hangs fails its case rather than the whole run. */
const CLEANUP_LIMIT = 5000;

/** Settles as `work` does, or rejects with `message` after `ms` real ms; no timer outlives it. */
async function within(work: () => unknown, ms: number, message: string): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  try {
    await Promise.race([Promise.resolve().then(work), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs one case on `platform` with its timeout, then its cleanups; rejects when it fails. */
export async function runCase(c: Case, platform: Platform): Promise<void> {
  const missing = missingNeed(c, platform);
  if (missing !== undefined) throw new Error(missing);
  const cleanups: (() => void | Promise<void>)[] = [];
  const handlerErrors: unknown[] = [];
  const t: CaseContext = {
    async serve(handler, options = {}) {
      // Declared needs are what lets a platform without a server fail the case up front, by name.
      if (!(c.options.needs ?? []).includes("serve")) throw new Error('a case that calls t.serve() must declare `needs: ["serve"]`');
      if (platform.serve === undefined) throw new Error(`${platform.name} cannot start a server`);
      // The same answer to a throwing handler everywhere (Deno and Bun would hide the message).
      const guarded: Handler = async (request) => {
        try {
          return await handler(request);
        } catch (error) {
          if (options.handlerMayThrow !== true) handlerErrors.push(error);
          return new Response(String(error), { status: 500, headers: { "content-type": "text/plain; charset=utf-8" } });
        }
      };
      const started = await platform.serve(guarded);
      let closed: Promise<void> | undefined;
      // Once only: a case may close its server itself, and the harness closes it again after.
      const server: TestServer = { url: started.url, close: () => (closed ??= started.close()) };
      cleanups.push(() => server.close());
      return server;
    },
    onCleanup(fn) {
      cleanups.push(fn);
    },
  };
  const limit = c.options.timeout ?? 10_000;
  let failure: { error: unknown } | undefined;
  try {
    await within(() => c.fn(t), limit, `timed out after ${limit} ms (real time)`);
  } catch (error) {
    failure = { error };
  }
  for (const cleanup of cleanups.reverse()) {
    try {
      await within(cleanup, CLEANUP_LIMIT, `a cleanup (e.g. closing a server) took over ${CLEANUP_LIMIT} ms`);
    } catch (error) {
      failure ??= { error }; // the case's own failure, if any, is the one worth reporting
    }
  }
  if (handlerErrors.length > 0) {
    // Reported first: the case's own failure is most likely the 500 it caused.
    const [first] = handlerErrors;
    const then = failure === undefined ? "" : `; then the case failed: ${String(failure.error)}`;
    const message = `the server's handler threw${handlerErrors.length > 1 ? ` ${handlerErrors.length} times` : ""}: ${String(first)}${then}`;
    failure = { error: new Error(message, { cause: first }) };
  }
  if (failure !== undefined) throw failure.error;
}
