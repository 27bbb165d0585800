/**
 * `sluice/testing/msw`: the simulated servers of `sluice/testing` — the OpenAI, Anthropic and GitHub
 * simulators, or any {@link SimulatedServer} — as [msw](https://mswjs.io) request handlers, so code
 * that calls the global `fetch` (or any client msw intercepts: axios, ky, an SDK) meets a faithful
 * rate-limited API in the virtual time of a `ManualClock`.
 *
 * You pass msw's own `http` namespace in: this module imports nothing from msw, so it works with
 * the msw your project has (2.x or later, an optional peer dependency of sluice), in Node
 * (`setupServer`) and in browsers (`setupWorker`), and adds nothing to a bundle that does not use it.
 *
 * @example
 * ```ts
 * import { http } from "msw";
 * import { setupServer } from "msw/node";
 * import { ManualClock } from "sluice/testing";
 * import { openaiHandler } from "sluice/testing/msw";
 *
 * const clock = new ManualClock();
 * const openai = openaiHandler(http, { clock, latency: { min: 200, max: 2000 }, simulator: { defaultLimits: { rpm: 60, tpm: 40_000 } } });
 * const server = setupServer(openai.handler);
 * server.listen();
 * // … run your batch job against https://api.openai.com, advancing `clock` …
 * openai.fetch.stats.byStatus; // e.g. { 200: 500 } — what the simulated server answered
 * ```
 *
 * @module
 */
import { describeValue, keysOf, onlyKnown, optionsObject } from "./validate.ts";
import { createSimulatedFetch, type SimulatedFetch, type SimulatedFetchOptions } from "./testing/simulated-fetch.ts";
import type { SimulatedServer } from "./testing/server.ts";
import { OpenAISimulator, type OpenAISimulatorOptions } from "./testing/openai.ts";
import { AnthropicSimulator, type AnthropicSimulatorOptions } from "./testing/anthropic.ts";
import { GitHubSimulator, type GitHubSimulatorOptions } from "./testing/github.ts";

/**
 * The part of msw's `http` namespace used here: `http.all(path, resolver)`. Pass msw's own
 * (`import { http } from "msw"`); the handler type `H` is msw's `HttpHandler`.
 *
 * @example
 * ```ts
 * import { http } from "msw";
 * const ns: MswHttp<ReturnType<typeof http.all>> = http;
 * ```
 */
export interface MswHttp<H> {
  /** Makes a handler of every method for requests matching `path` (msw's `http.all`). */
  all(path: string, resolver: (info: { request: Request }) => Response | Promise<Response>): H;
}

/**
 * A handler and the simulated fetch behind it (its `stats` count what the server saw).
 *
 * @example
 * ```ts
 * const { handler, fetch }: SimulatedHandler<HttpHandler> = simulatedHandler(http, origin, { server, clock });
 * ```
 */
export interface SimulatedHandler<H> {
  /** The msw handler: give it to `setupServer(…)`, `setupWorker(…)` or `server.use(…)`. */
  readonly handler: H;
  /** The simulated fetch that answers; `fetch.stats` has the server's counters. */
  readonly fetch: SimulatedFetch;
}

/**
 * A vendor handler: {@link SimulatedHandler} plus the simulator itself.
 *
 * @example
 * ```ts
 * const { handler, simulator }: VendorHandler<HttpHandler, GitHubSimulator> = githubHandler(http, { clock });
 * ```
 */
export interface VendorHandler<H, S extends SimulatedServer> extends SimulatedHandler<H> {
  /** The simulated vendor (its options were checked when it was made). */
  readonly simulator: S;
}

/**
 * Options of the vendor handlers: the simulated fetch's (`clock`, `latency`, `requestLatency`,
 * `seed`), the simulator or its options, and the origin to answer.
 *
 * @example
 * ```ts
 * const options: VendorHandlerOptions<GitHubSimulatorOptions> = { clock, latency: 50, simulator: { primaryStatus: 429 } };
 * ```
 */
export interface VendorHandlerOptions<O> extends Omit<SimulatedFetchOptions, "server"> {
  /** The simulator's options (or a simulator you made). @default the vendor's documented limits */
  readonly simulator?: O;
  /** The origin answered, e.g. a proxy's or Azure's. @default the vendor's public API origin */
  readonly origin?: string;
}

/** The origins the vendor handlers answer by default. */
const ORIGINS = { openai: "https://api.openai.com", anthropic: "https://api.anthropic.com", github: "https://api.github.com" } as const;

/**
 * An msw handler answering every request under `origin` (any method, any path) from `options.server`,
 * through {@link createSimulatedFetch}: the server decides, counts and delays in virtual time; msw
 * only hands it the intercepted request.
 *
 * @param http msw's `http` namespace (`import { http } from "msw"`).
 * @param origin `scheme://host[:port]`, e.g. `"https://api.example.com"`.
 * @throws {TypeError} when `http` has no `all` function or `origin` is not an origin; what
 *   `createSimulatedFetch` throws for bad options.
 * @example
 * ```ts
 * import { http } from "msw";
 * import { FixedWindowServer, ManualClock, serveModel } from "sluice/testing";
 *
 * const clock = new ManualClock();
 * const server = serveModel(new FixedWindowServer({ limit: 5, interval: 1000, headers: ["ietf", "retry-after"] }));
 * const { handler, fetch } = simulatedHandler(http, "https://api.example.com", { server, clock });
 * ```
 */
export function simulatedHandler<H>(http: MswHttp<H>, origin: string, options: SimulatedFetchOptions): SimulatedHandler<H> {
  if (typeof (http as Partial<MswHttp<H>> | null)?.all !== "function") {
    throw new TypeError(`\`http\` must be msw's \`http\` namespace (import { http } from "msw"), got ${describeValue(http)}`);
  }
  const base = originOf(origin);
  const fetch = createSimulatedFetch(options);
  // A request its caller aborted rejects in the simulated fetch; msw would log that as a failing
  // handler, though the caller already has its AbortError: answer a network error instead.
  const handler = http.all(`${base}/*`, ({ request }) =>
    fetch(request).catch((error: unknown) => {
      if (request.signal.aborted) return Response.error();
      throw error;
    }));
  return { handler, fetch };
}

/**
 * An msw handler for a simulated OpenAI API ({@link OpenAISimulator}) at `https://api.openai.com`.
 *
 * @example
 * ```ts
 * const openai = openaiHandler(http, { clock, simulator: { defaultLimits: { rpm: 60, tpm: 40_000 } } });
 * setupServer(openai.handler).listen();
 * ```
 */
export function openaiHandler<H>(http: MswHttp<H>, options: VendorHandlerOptions<OpenAISimulatorOptions | OpenAISimulator>): VendorHandler<H, OpenAISimulator> {
  return vendorHandler("openaiHandler()", http, options, ORIGINS.openai, (o) => o instanceof OpenAISimulator ? o : new OpenAISimulator(o));
}

/**
 * An msw handler for a simulated Anthropic API ({@link AnthropicSimulator}) at `https://api.anthropic.com`.
 *
 * @example
 * ```ts
 * const anthropic = anthropicHandler(http, { clock, latency: { min: 300, max: 3000 } });
 * setupServer(anthropic.handler).listen();
 * ```
 */
export function anthropicHandler<H>(
  http: MswHttp<H>,
  options: VendorHandlerOptions<AnthropicSimulatorOptions | AnthropicSimulator>,
): VendorHandler<H, AnthropicSimulator> {
  return vendorHandler("anthropicHandler()", http, options, ORIGINS.anthropic, (o) => o instanceof AnthropicSimulator ? o : new AnthropicSimulator(o));
}

/**
 * An msw handler for a simulated GitHub API ({@link GitHubSimulator}) at `https://api.github.com`.
 *
 * @example
 * ```ts
 * const github = githubHandler(http, { clock, simulator: { resources: { search: { limit: 5, interval: 60_000 } } } });
 * setupServer(github.handler).listen();
 * ```
 */
export function githubHandler<H>(http: MswHttp<H>, options: VendorHandlerOptions<GitHubSimulatorOptions | GitHubSimulator>): VendorHandler<H, GitHubSimulator> {
  return vendorHandler("githubHandler()", http, options, ORIGINS.github, (o) => o instanceof GitHubSimulator ? o : new GitHubSimulator(o));
}

function vendorHandler<H, O, S extends SimulatedServer>(
  name: string,
  http: MswHttp<H>,
  options: VendorHandlerOptions<O>,
  fallbackOrigin: string,
  make: (o: O | undefined) => S,
): VendorHandler<H, S> {
  const o = optionsObject("options", options);
  // Checked here, so a misspelt option names the function the caller called.
  onlyKnown(name, o, keysOf<VendorHandlerOptions<O>>()("simulator", "origin", "clock", "latency", "requestLatency", "seed"));
  const { simulator: given, origin, ...fetchOptions } = o;
  const simulator = make(given as O | undefined);
  return { ...simulatedHandler(http, origin ?? fallbackOrigin, { ...fetchOptions, server: simulator } as SimulatedFetchOptions), simulator };
}

/** `origin` as `scheme://host[:port]` (a trailing `/` is dropped), else a TypeError naming it. */
function originOf(origin: unknown): string {
  let url: URL | undefined;
  try {
    url = typeof origin === "string" ? new URL(origin) : undefined;
  } catch {
    url = undefined;
  }
  if (url === undefined || url.origin === "null" || url.pathname !== "/" || url.search !== "" || url.hash !== "" || url.username !== "" || url.password !== "") {
    // Only the shape is quoted for a string: it might carry credentials.
    throw new TypeError(`\`origin\` must be an origin like "https://api.example.com" (no path, query or credentials), got ${
      typeof origin === "string" ? "a string that is not one" : describeValue(origin)
    }`);
  }
  return url.origin;
}
