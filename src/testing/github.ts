/**
 * A simulated GitHub REST/GraphQL API with its primary and secondary rate limits, from GitHub's docs
 * (`github/docs`: rate-limits-for-the-rest-api.md, secondary-rate-limit-rest-graphql.md,
 * best-practices-for-using-the-rest-api.md; summarised in /work/shared/notes/vendors.md §2):
 *
 * - **Primary**: a quota per resource — `core` 5,000/h (a user token), `graphql` 5,000 points/h,
 *   `search` 30/min (authenticated; docs.github.com/rest/search/search#rate-limit), `code_search`
 *   (`/search/code`) 10/min. Unauthenticated
 *   core is 60/h, `GITHUB_TOKEN` 1,000/h per repository: set `resources`.
 *   Here a resource's window opens at its first request and lasts its interval. Every answer
 *   carries `x-ratelimit-{limit,remaining,used,reset,resource}`, reset in UTC epoch seconds.
 *   Exhausted: **403** (or 429, `primaryStatus`) with "API rate limit exceeded" and remaining 0.
 * - **Secondary**: at most **100 concurrent** requests, and "no more than **80 content-generating
 *   requests per minute and no more than 500** content-generating requests **per hour**" (strict
 *   rolling windows here; every POST, PATCH, PUT and DELETE outside GraphQL counts as
 *   content-generating — GitHub also counts GraphQL mutations and web actions, which this model
 *   does not see). Answered **403** (or 429, `secondaryStatus`) with a
 *   message containing "secondary rate limit" and a `retry-after` in seconds: the exact wait for the
 *   per-minute and per-hour limits, 60 for concurrency (the docs' "wait at least one minute") —
 *   or none (`secondaryRetryAfter: false`: the client must wait at least a minute on its own).
 *   Not modelled: 900 points/min per endpoint, 90 s of CPU per minute, ≥ 1 s between mutations
 *   (`secondaryLimit` refuses requests by any rule of yours instead).
 * - Refused requests count against nothing.
 *
 * @module
 */
import { describeValue, keysOf, onlyKnown, optionsObject, positiveInteger } from "../validate.ts";
import type { ServerContext, SimulatedReply, SimulatedServer } from "./server.ts";
import { SlidingLogServer } from "./sliding-log.ts";
import { ceilSeconds } from "./decision.ts";
import { DEFAULT_EPOCH_MS, httpDate, json } from "./vendor-format.ts";

/**
 * A GitHub rate-limit resource.
 *
 * @example
 * ```ts
 * GitHubSimulator.resourceOf("/search/issues"); // "search"
 * ```
 */
export type GitHubResource = "core" | "search" | "code_search" | "graphql";

/**
 * A resource's primary quota: `limit` per `interval` ms.
 *
 * @example
 * ```ts
 * new GitHubSimulator({ resources: { core: { limit: 60, interval: 3_600_000 } } }); // unauthenticated
 * ```
 */
export interface GitHubQuota {
  /** Requests allowed per window. */
  readonly limit: number;
  /** The window, in ms. */
  readonly interval: number;
}

/**
 * Options of {@link GitHubSimulator}.
 *
 * @example
 * ```ts
 * new GitHubSimulator({ primaryStatus: 429, contentCreation: { perMinute: 10, perHour: 100 } });
 * ```
 */
export interface GitHubSimulatorOptions {
  /** Primary quotas. @default { core: 5000/h, search: 30/min, code_search: 10/min, graphql: 5000/h } */
  resources?: Partial<Record<GitHubResource, GitHubQuota>>;
  /** Status of an exhausted primary quota (GitHub sends 403 or 429). @default 403 */
  primaryStatus?: 403 | 429;
  /** Status of a secondary limit. @default 403 */
  secondaryStatus?: 403 | 429;
  /** Whether a secondary refusal carries `retry-after` (GitHub's may not: then wait at least a minute). @default true */
  secondaryRetryAfter?: boolean;
  /** Concurrent requests allowed. @default 100 */
  maxConcurrent?: number;
  /** Content-generating requests per minute, and per hour. @default { perMinute: 80, perHour: 500 } */
  contentCreation?: { perMinute: number; perHour: number };
  /** Points a GraphQL request costs. @default 1 */
  graphqlCost?: (request: Request) => number;
  /** The JSON body of a successful answer. @default {} */
  respond?: (request: Request) => unknown;
  /**
   * Refuses a request with a secondary limit when it returns a delay (ms, sent as `retry-after`
   * rounded up to seconds): the limits this model does not see (900 points a minute per endpoint,
   * CPU time), or a refusal on purpose in a test. Asked after the concurrency check, before the
   * primary quota; `undefined` lets the request go on. @default none
   * @example
   * ```ts
   * new GitHubSimulator({ secondaryLimit: ({ resource, now }) => (resource === "search" && now < 1000 ? 30_000 : undefined) });
   * ```
   */
  secondaryLimit?: (request: { readonly method: string; readonly path: string; readonly resource: GitHubResource; readonly now: number }) => number | undefined;
  /** Wall-clock epoch ms of virtual `now = 0`, for `x-ratelimit-reset` and `Date`. @default 2026-01-01T00:00:00Z */
  epochMs?: number;
}

const DOCS = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api";
const HOUR = 3_600_000;
const MUTATIONS = new Set(["POST", "PATCH", "PUT", "DELETE"]);

interface Window {
  resetAt: number;
  used: number;
}

/**
 * A simulated GitHub API. Use it through {@link createSimulatedFetch} (which tracks concurrency),
 * or call {@link GitHubSimulator.request} directly.
 *
 * @example
 * ```ts
 * import { createSimulatedFetch, GitHubSimulator, ManualClock } from "sluice/testing";
 * const clock = new ManualClock();
 * const github = new GitHubSimulator({ resources: { core: { limit: 60, interval: 3_600_000 } } });
 * const fetch = createSimulatedFetch({ server: github, clock, latency: { min: 50, max: 300 } });
 * const res = await fetch("https://api.github.com/repos/o/r");
 * res.headers.get("x-ratelimit-remaining"); // "59"
 * ```
 */
export class GitHubSimulator implements SimulatedServer {
  readonly #quotas: Record<GitHubResource, GitHubQuota>;
  readonly #windows = new Map<GitHubResource, Window>();
  readonly #primaryStatus: number;
  readonly #secondaryStatus: number;
  readonly #secondaryRetryAfter: boolean;
  readonly #maxConcurrent: number;
  readonly #perMinute: SlidingLogServer;
  readonly #perHour: SlidingLogServer;
  readonly #graphqlCost: ((request: Request) => number) | undefined;
  readonly #respond: ((request: Request) => unknown) | undefined;
  readonly #secondaryLimit: GitHubSimulatorOptions["secondaryLimit"];
  readonly #epoch: number;

  /** Checks the options; a `RangeError`/`TypeError` names a bad one. */
  constructor(options: GitHubSimulatorOptions = {}) {
    const o = optionsObject("options", options);
    onlyKnown("GitHubSimulator", o, keysOf<GitHubSimulatorOptions>()("resources", "primaryStatus", "secondaryStatus", "secondaryRetryAfter", "maxConcurrent", "contentCreation", "graphqlCost", "respond", "secondaryLimit", "epochMs"));
    const r = optionsObject("resources", o.resources);
    // The simulator names resources as GitHub's headers do (`code_search`); a misspelt one (the
    // github() profile's option `codeSearch`) would leave that resource at its default unnoticed.
    onlyKnown("GitHubSimulator's `resources`", r, keysOf<Record<GitHubResource, GitHubQuota>>()("core", "search", "code_search", "graphql"));
    const quota = (name: GitHubResource, fallback: GitHubQuota): GitHubQuota => {
      const q = r[name] ?? fallback;
      return { limit: positiveInteger(`resources.${name}.limit`, q.limit), interval: positiveInteger(`resources.${name}.interval`, q.interval) };
    };
    this.#quotas = {
      core: quota("core", { limit: 5000, interval: HOUR }),
      search: quota("search", { limit: 30, interval: 60_000 }),
      code_search: quota("code_search", { limit: 10, interval: 60_000 }),
      graphql: quota("graphql", { limit: 5000, interval: HOUR }),
    };
    this.#primaryStatus = status("primaryStatus", o.primaryStatus ?? 403);
    this.#secondaryStatus = status("secondaryStatus", o.secondaryStatus ?? 403);
    if (o.secondaryRetryAfter !== undefined && typeof o.secondaryRetryAfter !== "boolean") {
      throw new TypeError(`\`secondaryRetryAfter\` must be a boolean, got ${describeValue(o.secondaryRetryAfter)}`);
    }
    this.#secondaryRetryAfter = o.secondaryRetryAfter ?? true;
    this.#maxConcurrent = positiveInteger("maxConcurrent", o.maxConcurrent ?? 100);
    const cc = optionsObject("contentCreation", o.contentCreation);
    this.#perMinute = new SlidingLogServer({ limit: positiveInteger("contentCreation.perMinute", cc.perMinute ?? 80), interval: 60_000, headers: [] });
    this.#perHour = new SlidingLogServer({ limit: positiveInteger("contentCreation.perHour", cc.perHour ?? 500), interval: HOUR, headers: [] });
    for (const [name, fn] of [["graphqlCost", o.graphqlCost], ["respond", o.respond], ["secondaryLimit", o.secondaryLimit]] as const) {
      if (fn !== undefined && typeof fn !== "function") throw new TypeError(`\`${name}\` must be a function, got ${describeValue(fn)}`);
    }
    this.#graphqlCost = o.graphqlCost;
    this.#respond = o.respond;
    this.#secondaryLimit = o.secondaryLimit;
    this.#epoch = o.epochMs ?? DEFAULT_EPOCH_MS;
  }

  /** The resource a request counts against. */
  static resourceOf(path: string): GitHubResource {
    if (path === "/graphql" || path.endsWith("/graphql")) return "graphql";
    if (path.startsWith("/search/code")) return "code_search";
    if (path.startsWith("/search/")) return "search";
    return "core";
  }

  /** Answers an HTTP request arriving at `context.now` (see `SimulatedServer.handle`). */
  handle(request: Request, context: ServerContext): SimulatedReply {
    const path = new URL(request.url).pathname;
    const resource = GitHubSimulator.resourceOf(path);
    const cost = resource === "graphql" ? positiveInteger("graphqlCost()", this.#graphqlCost?.(request) ?? 1) : 1;
    const reply = this.request(context.now, { method: request.method, path, inFlight: context.inFlight, cost });
    return reply.status === 200 && this.#respond !== undefined
      ? { ...reply, body: JSON.stringify(this.#respond(request)) }
      : reply;
  }

  /** Decides one request at `now`: the pure core of {@link handle}. `inFlight` counts this request. */
  request(now: number, r: { method: string; path: string; inFlight?: number; cost?: number }): SimulatedReply {
    const resource = GitHubSimulator.resourceOf(r.path);
    const quota = this.#quotas[resource];
    let w = this.#windows.get(resource);
    if (w === undefined || now >= w.resetAt) {
      w = { resetAt: now + quota.interval, used: 0 };
      this.#windows.set(resource, w);
    }
    const cost = r.cost ?? 1;
    const headers = () => ({
      date: httpDate(this.#epoch + now),
      "x-ratelimit-limit": String(quota.limit),
      "x-ratelimit-remaining": String(quota.limit - w.used),
      "x-ratelimit-used": String(w.used),
      "x-ratelimit-reset": String(ceilSeconds(this.#epoch + w.resetAt)),
      "x-ratelimit-resource": resource,
    });
    const secondary = (retryAfterMs: number) => json(this.#secondaryStatus, {
      message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
      documentation_url: `${DOCS}#about-secondary-rate-limits`,
    }, this.#secondaryRetryAfter ? { ...headers(), "retry-after": String(ceilSeconds(retryAfterMs)) } : headers());

    if ((r.inFlight ?? 1) > this.#maxConcurrent) return secondary(60_000);
    const forced = this.#secondaryLimit?.({ method: r.method.toUpperCase(), path: r.path, resource, now });
    if (forced !== undefined) {
      if (typeof forced !== "number" || !(forced >= 0) || !Number.isFinite(forced)) {
        throw new RangeError(`\`secondaryLimit\` must return a non-negative number of ms or undefined, got ${describeValue(forced)}`);
      }
      return secondary(forced);
    }
    if (w.used + cost > quota.limit) {
      return json(this.#primaryStatus, { message: "API rate limit exceeded.", documentation_url: DOCS }, headers());
    }
    const creates = resource !== "graphql" && MUTATIONS.has(r.method.toUpperCase());
    if (creates) {
      const wait = Math.max(this.#perMinute.waitFor(now), this.#perHour.waitFor(now));
      if (wait > 0) return secondary(wait);
      this.#perMinute.decide(now);
      this.#perHour.decide(now);
    }
    w.used += cost;
    return json(200, {}, headers());
  }
}

function status(name: string, value: unknown): number {
  if (value !== 403 && value !== 429) throw new RangeError(`\`${name}\` must be 403 or 429, got ${describeValue(value)}`);
  return value;
}
