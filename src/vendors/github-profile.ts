/**
 * `github()`: the throttled-fetch options for GitHub's REST and GraphQL APIs.
 *
 * @module
 */

import { type Clock, systemClock } from "../clock.ts";
import type { DelayContext, ResponseEvent, RetryContext } from "../http/options.ts";
import type { RetryVerdict } from "../http/retry.ts";
import { combine } from "../limiters/combine.ts";
import { ConcurrencyLimiter } from "../limiters/concurrency.ts";
import { KeyedLimiter } from "../limiters/keyed.ts";
import type { GatedLimiter } from "../limiters/limiter.ts";
import { SmoothLimiter } from "../limiters/smooth.ts";
import { WindowLimiter } from "../limiters/window.ts";
import { nonNegativeFinite, optionsObject, positiveInteger } from "../validate.ts";
import { githubWaitMs, readBodyPrefix, readGitHubHeaders } from "./github-headers.ts";
import { GITHUB_LIMITS } from "./github-limits.ts";
import { bodyText, type Cost, MINUTE, profileOptions, type VendorProfile, wallClockOption } from "./profile.ts";
import type { VendorSignal } from "./types.ts";

const HOUR = 60 * MINUTE;

/**
 * GitHub's rate-limit resources the profile budgets (a request to another resource counts as `core` until GitHub names its resource in an answer).
 *
 * @example
 * ```ts
 * const resource: GitHubProfileResource = "code_search";
 * ```
 */
export type GitHubProfileResource = "core" | "graphql" | "search" | "code_search";

/**
 * Options of {@link github}.
 *
 * @example
 * ```ts
 * const options: GitHubProfileOptions = { core: 15_000, contentCreating: { perMinute: 40 } };
 * ```
 */
export interface GitHubProfileOptions {
  /** `core` requests per hour: 5,000 for a user token (60 unauthenticated, 15,000 on Enterprise Cloud, 1,000 for `GITHUB_TOKEN`). @default 5000 */
  readonly core?: number;
  /**
   * `graphql` points per hour, each request budgeted at one point (its least cost): a costlier query
   * is not counted here, and GitHub's `x-ratelimit-remaining: 0` then pauses the budget until the
   * reset. @default 5000
   */
  readonly graphql?: number;
  /** Search requests per minute (code search excepted): 30 authenticated, 10 unauthenticated. @default 30 */
  readonly search?: number;
  /** Code-search requests per minute. @default 10 */
  readonly codeSearch?: number;
  /** Requests in flight at once, over every resource. @default 100 */
  readonly maxConcurrent?: number;
  /** Content-creating requests per minute and per hour. @default { perMinute: 80, perHour: 500 } */
  readonly contentCreating?: { readonly perMinute?: number; readonly perHour?: number };
  /**
   * The longest wait (ms) after which a refused call is retried; a longer one (an hour to a primary
   * reset) resolves the call with GitHub's 403/429 — the budgets stay paused for every caller
   * either way. The default lets the doubling secondary waits (60 s, 120 s, 240 s)
   * be retried.
   * @default 300000
   */
  readonly maxRetryAfter?: number;
  /** The clock of the budgets (a `ManualClock` in tests); it is passed on to the fetch. @default systemClock */
  readonly clock?: Clock;
  /**
   * Epoch ms the profile reads the vendor's resets against when a response has no `Date` header
   * (a virtual epoch in tests: `() => epoch + clock.now()`); it is passed on to the fetch.
   * @default Date.now
   */
  readonly wallClock?: () => number;
}

const KNOWN = ["core", "graphql", "search", "codeSearch", "maxConcurrent", "contentCreating", "maxRetryAfter", "clock", "wallClock"];
const MUTATIONS = new Set(["POST", "PATCH", "PUT", "DELETE"]);
const DEFAULT_MAX_RETRY_AFTER = 5 * MINUTE;
/**
 * The fewest writes GitHub must have accepted in the minute before a secondary refusal of a write
 * for that count to be taken as the account's per-minute limit (or the documented limit, when
 * lower). A refusal after fewer says nothing about the per-minute count — another client on the same
 * token, or a limit on something else (CPU, concurrency) — and learning from it would hold writes
 * to one a minute for the life of the profile.
 */
const MIN_WRITES_TO_LEARN = 10;
/** The most request paths remembered as belonging to a resource the profile does not budget. */
const MAX_ROUTES = 1024;
/**
 * The most resources without a quota of their own the profile keeps a budget for (GitHub has about a
 * dozen): the names come from the server's `x-ratelimit-resource`, so they are bounded here.
 */
const MAX_OTHER_RESOURCES = 64;

/**
 * The resource a request counts against, from its path (GitHub's `x-ratelimit-resource` names).
 *
 * @example
 * ```ts
 * githubResource("/search/code"); // "code_search"
 * githubResource("/repos/o/r");   // "core"
 * ```
 */
export function githubResource(path: string): GitHubProfileResource {
  if (path === "/graphql" || path.endsWith("/graphql")) return "graphql";
  if (path.startsWith("/search/code")) return "code_search";
  if (path.startsWith("/search/")) return "search";
  return "core";
}

/**
 * Options for `createThrottledFetch` that keep a client inside GitHub's primary and secondary limits.
 *
 * - **Primary**, per resource (`core`, `graphql`, `search`, `code_search`): a rolling-window budget
 *   at the documented quota, and `x-ratelimit-remaining: 0` (on any response, or a 403/429) pauses
 *   that resource's budget until `x-ratelimit-reset` + 1 s: every caller of the resource waits, the
 *   others go on.
 * - **Secondary**: at most 100 requests in flight (until their headers arrive) over all resources;
 *   content-creating requests (POST/PATCH/PUT/DELETE, and GraphQL `mutation`s) at most 80 a minute
 *   and 500 an hour. A 403/429 whose body says "secondary rate limit" pauses every caller of every
 *   resource (a secondary limit is the account's, and requests sent into one draw more refusals)
 *   for `retry-after`, else at least 60 s, doubling while refusals repeat — until a quiet spell as
 *   long as the last wait (a success alone does not reset it: reads can pass while writes are
 *   refused). When the refused request was content-creating, the writes budget is
 *   lowered to the writes GitHub accepted in the last minute (an account's real limit can be below
 *   the documented 80), when there were at least 10.
 * - **Other resources** (`code_scanning_upload`, `source_import`, …): a refusal naming one pauses
 *   a budget of its own, which the requests to that path queue on from then; never `core`.
 * - A refused call is retried (POST too: GitHub did no work) as a server-timed retry — the
 *   `shouldRetry` answer `{ retryAfter }`: it spends no retry budget and pauses the resources' budgets
 *   (`retry.pauseDimensions: ["requests"]`, also for a 429 the fetch reads itself), not the slots — when
 *   its wait is at most `maxRetryAfter`; a 403 that is no rate limit (a permission error) is
 *   returned as is.
 *
 * The profile reads `x-ratelimit-*` itself (per resource) and turns the fetch's generic reading off.
 *
 * @throws {RangeError} for an option out of range; {@link TypeError} for an unknown option.
 * @example
 * ```ts
 * import { createThrottledFetch } from "sluice";
 * import { github } from "sluice/vendors";
 *
 * const gh = createThrottledFetch({ ...github() });
 * const repo = await gh("https://api.github.com/repos/octocat/hello-world", { headers: { authorization } });
 * ```
 */
export function github(options: GitHubProfileOptions = {}): VendorProfile {
  const o = profileOptions("github", options, KNOWN);
  const wall = wallClockOption(o.wallClock);
  const clock = o.clock;
  const at = clock === undefined ? {} : { clock };
  const primary: Record<GitHubProfileResource, WindowLimiter> = {
    core: new WindowLimiter({ limit: positiveInteger("core", o.core ?? GITHUB_LIMITS.primaryPerHour.user), interval: HOUR, ...at }),
    graphql: new WindowLimiter({ limit: positiveInteger("graphql", o.graphql ?? GITHUB_LIMITS.graphqlPointsPerHour), interval: HOUR, ...at }),
    search: new WindowLimiter({ limit: positiveInteger("search", o.search ?? GITHUB_LIMITS.searchPerMinute), interval: MINUTE, ...at }),
    code_search: new WindowLimiter({ limit: positiveInteger("codeSearch", o.codeSearch ?? GITHUB_LIMITS.codeSearchPerMinute), interval: MINUTE, ...at }),
  };
  const content = optionsObject("contentCreating", o.contentCreating);
  for (const name of Object.keys(content)) {
    if (name !== "perMinute" && name !== "perHour") {
      throw new TypeError(`\`contentCreating.${name}\` is not an option of github() (known: perMinute, perHour)`);
    }
  }
  const maxConcurrent = positiveInteger("maxConcurrent", o.maxConcurrent ?? GITHUB_LIMITS.maxConcurrent);
  const concurrent = new ConcurrencyLimiter({ limit: maxConcurrent, ...at });
  const writesPerMinute = new WindowLimiter({
    limit: positiveInteger("contentCreating.perMinute", content.perMinute ?? GITHUB_LIMITS.contentCreatingPerMinute), interval: MINUTE, ...at,
  });
  const writesPerHour = new WindowLimiter({
    limit: positiveInteger("contentCreating.perHour", content.perHour ?? GITHUB_LIMITS.contentCreatingPerHour), interval: HOUR, ...at,
  });
  const maxRetryAfter = nonNegativeFinite("maxRetryAfter", o.maxRetryAfter ?? DEFAULT_MAX_RETRY_AFTER);
  const time = clock ?? systemClock;

  // Reads and writes of a REST resource are separate combinations over shared members: a write
  // waiting for the writes budget must not hold back the reads queued behind it (FIFO is per
  // combination). GraphQL's mutations are known only from the body, which the key cannot read, so
  // GraphQL has one combination with every budget (a mutation's cost asks for the writes too).
  // A resource the profile has no quota for (GitHub has more: `code_scanning_upload`,
  // `source_import`, `integration_manifest`, …) gets a budget that never binds, to be paused alone:
  // its refusal must not pause `core`. Its requests are known by path only once GitHub named the
  // resource in an answer (`routes`); until then they queue with `core`.
  const others = new Map<string, SmoothLimiter>();
  const budgetOf = (resource: string): GatedLimiter | undefined => {
    if (Object.hasOwn(primary, resource)) return primary[resource as GitHubProfileResource];
    let budget = others.get(resource);
    if (budget === undefined) {
      // Past the bound, or a name the key's ":write" suffix would misread: nothing to pause, core included.
      if (others.size >= MAX_OTHER_RESOURCES || resource.includes(":")) return undefined;
      budget = new SmoothLimiter({ limit: 1_000_000, interval: 1000, burst: 1_000_000, ...at });
      others.set(resource, budget);
    }
    return budget;
  };
  const routes = new Map<string, string>();
  const learnRoute = (request: Request, resource: string | undefined): void => {
    if (resource === undefined || Object.hasOwn(primary, resource) || budgetOf(resource) === undefined) return;
    const path = new URL(request.url).pathname;
    if (routes.get(path) === resource || githubResource(path) === "graphql") return;
    routes.delete(path);
    routes.set(path, resource);
    if (routes.size > MAX_ROUTES) routes.delete(routes.keys().next().value!);
  };
  const limiter = new KeyedLimiter<string>({
    create: (key) => {
      const [resource, write] = key.split(":");
      const requests = budgetOf(resource!) ?? primary.core;
      return write === undefined && resource !== "graphql"
        ? combine({ requests, concurrent })
        : combine({ requests, concurrent, writesPerMinute, writesPerHour });
    },
    ...at,
  });
  const resourceOf = (request: Request): string => {
    const path = new URL(request.url).pathname;
    return routes.get(path) ?? githubResource(path);
  };
  const graphqlWrites = new WeakSet<Request>(); // mutations seen by `cost`
  const isWrite = (request: Request): boolean => {
    const resource = resourceOf(request);
    return resource === "graphql" ? graphqlWrites.has(request) : MUTATIONS.has(request.method.toUpperCase());
  };
  const keyedAs = new WeakMap<Request, string>(); // the resource each call queued on
  const key = (request: Request): string => {
    const resource = resourceOf(request);
    keyedAs.set(request, resource);
    return resource !== "graphql" && MUTATIONS.has(request.method.toUpperCase()) ? `${resource}:write` : resource;
  };

  const cost = async (request: Request): Promise<Cost> => {
    if (resourceOf(request) === "graphql" && request.method.toUpperCase() === "POST" && isMutation(await bodyText(request))) {
      graphqlWrites.add(request);
    }
    return isWrite(request) ? { requests: 1, concurrent: 1, writesPerMinute: 1, writesPerHour: 1 } : { requests: 1, concurrent: 1 };
  };

  // What a refusal says needs its body (secondary or permission error): read once, from a clone,
  // by `shouldRetry` (which runs first, while the body is whole) or by `onResponse`.
  const signals = new WeakMap<Response, Promise<VendorSignal>>();
  const known = new WeakMap<Response, VendorSignal>();
  const classify = (response: Response): Promise<VendorSignal> => {
    let found = signals.get(response);
    if (found === undefined) {
      const refused = response.status === 403 || response.status === 429;
      found = (refused ? readBodyPrefix(response) : Promise.resolve(undefined))
        .then((body) => readGitHubHeaders(response, { now: wall.now(), body }));
      found.then((signal) => known.set(response, signal), () => {});
      signals.set(response, found);
    }
    return found;
  };

  // Secondary refusals in a row. A secondary limit is the account's, not a resource's (100 in
  // flight over REST and GraphQL, points per minute, CPU time, content creation), and requests sent
  // into one draw more refusals (octokit/plugin-throttling.js#629), so one episode pauses every
  // resource. Refusals of requests sent before the current pause ends belong to the episode (they
  // were in flight together) and do not double the wait again. The episode — and so the doubling —
  // ends only after a quiet spell as long as its last wait with no secondary refusal: a success
  // proves little (a read can pass while writes are still refused), and resetting on one would
  // retry refused writes every 60 s forever.
  const episode = { refusals: 0, pausedUntil: -Infinity, lastWait: 0 };
  const nameOf = (signal: VendorSignal, resource: string): string => signal.resource ?? resource.split(":")[0]!;
  const elsewhere = (request: Request, signal: VendorSignal): boolean =>
    signal.secondary !== true && signal.resource !== undefined && keyedAs.has(request) && signal.resource !== keyedAs.get(request);
  const episodeOver = (now: number): boolean => now >= episode.pausedUntil + episode.lastWait;
  // The wait a refusal causes: a secondary one counts as the next of the episode unless it arrives
  // during the episode's pause. (Asked by `shouldRetry` before `onResponse` records the refusal,
  // so both see the same wait.)
  const waitOf = (signal: VendorSignal): number | undefined => {
    if (!signal.quotaSignal) return undefined;
    if (signal.secondary !== true) return githubWaitMs(signal, 1);
    const now = time.now();
    const refusals = episodeOver(now) ? 0 : episode.refusals;
    return githubWaitMs(signal, now >= episode.pausedUntil ? refusals + 1 : Math.max(1, refusals));
  };
  // A primary limit pauses the resource the response names (`x-ratelimit-resource`, else the
  // request's): all its callers wait together, the other resources go on. A secondary limit pauses
  // every resource.
  const apply = (signal: VendorSignal, resource: string): void => {
    const requests = signal.budgets.requests;
    const name = nameOf(signal, resource);
    // A quota GitHub reports below the profile's (a token's search limit of 5 a minute, not 30; 60 an
    // hour unauthenticated): the resource's budget follows it down, or the calls refused at the
    // reset would all go out again together (integrations red-team, 2026-11-27: 20 searches against
    // 5 a minute drew 30 refusals, and 5 calls failed). Never raised: another client may share it.
    const reported = requests?.limit;
    if (reported !== undefined && reported >= 1 && Object.hasOwn(primary, name)) {
      const budget = primary[name as GitHubProfileResource];
      if (reported < budget.limit) budget.setLimit({ limit: reported });
    }
    if (requests?.remaining === 0 && requests.resetMs !== undefined && (!signal.quotaSignal || signal.secondary !== true)) {
      budgetOf(name)?.pause(requests.resetMs + GITHUB_LIMITS.primaryResetMarginMs);
    }
    if (signal.quotaSignal && signal.secondary === true) {
      const now = time.now();
      const wait = waitOf(signal)!;
      if (episodeOver(now)) episode.refusals = 0;
      if (now >= episode.pausedUntil) episode.refusals++;
      episode.pausedUntil = Math.max(episode.pausedUntil, now + wait);
      episode.lastWait = wait;
      for (const budget of [...Object.values(primary), ...others.values()]) budget.pause(wait);
    } else if (signal.quotaSignal && requests?.resetMs === undefined) {
      budgetOf(name)?.pause(waitOf(signal)!);
    }
  };

  // Content-creating requests GitHub accepted in the last minute: when it refuses one with a
  // secondary limit, that count is evidently the account's real per-minute limit (it may be below
  // the documented 80), so the writes budget is lowered to it — else every minute would start with
  // a burst of refusals — provided there are enough of them to be evidence (MIN_WRITES_TO_LEARN).
  // Never raised again by the profile.
  const accepted: number[] = [];
  const documentedWrites = writesPerMinute.limit;
  let learned = false;
  const learnWrites = (request: Request, status: number, signal: VendorSignal | undefined): void => {
    if (!isWrite(request)) return;
    const now = time.now();
    const pausedUntil = episode.pausedUntil;
    while (accepted.length > 0 && accepted[0]! <= now - MINUTE) accepted.shift();
    if (status >= 200 && status <= 299) {
      accepted.push(now);
      // Answers still arriving during the pause were sent before the refusal: GitHub accepted them
      // in the same minute, so they count towards the learned limit.
      if (learned && now < pausedUntil && accepted.length > writesPerMinute.limit) {
        writesPerMinute.setLimit({ limit: Math.min(documentedWrites, accepted.length) });
      }
    } else if (
      signal?.quotaSignal === true && signal.secondary === true && accepted.length < writesPerMinute.limit &&
      accepted.length >= Math.min(MIN_WRITES_TO_LEARN, documentedWrites)
    ) {
      writesPerMinute.setLimit({ limit: accepted.length });
      learned = true;
    }
  };
  const onResponse = ({ request, response, key: resource }: ResponseEvent): void => {
    const learn = (read: VendorSignal): void => {
      learnWrites(request, response.status, read);
      learnRoute(request, read.resource);
      apply(read, resource ?? "core");
    };
    const signal = known.get(response);
    if (signal !== undefined || (response.status !== 403 && response.status !== 429)) {
      learn(signal ?? readGitHubHeaders(response, { now: wall.now() }));
    } else {
      void classify(response).then(learn, () => {});
    }
  };
  // A refusal is retried after GitHub's wait, as a server-timed retry ({ retryAfter }): the fetch
  // pauses the refused resource's budget for it (`pauseDimensions`), spends no retry budget on it
  // (a burst of refusals is as large as the requests in flight), and returns it past `maxRetryAfter`.
  const shouldRetry = async ({ response, request }: RetryContext): Promise<RetryVerdict> => {
    if (response === undefined || (response.status !== 403 && response.status !== 429)) return undefined;
    const signal = await classify(response);
    if (!signal.quotaSignal) return undefined; // a permission error: the fetch's rule (no retry)
    const wait = waitOf(signal)!;
    // Refused by a resource other than the one the call queued on (a path not yet known to belong to
    // it): a server-timed retry would pause the budget it queued on (`core`) for everyone, so the
    // call waits alone (`delay`), its own resource's budget paused by `onResponse`.
    if (elsewhere(request, signal)) return wait <= maxRetryAfter;
    return { retryAfter: wait };
  };
  // The budget's pause times the retry (it waits in the queue, in its place); no extra sleep.
  const delay = ({ response, request }: DelayContext): number | undefined => {
    const signal = response === undefined ? undefined : known.get(response);
    if (signal?.quotaSignal !== true) return undefined;
    return elsewhere(request, signal) ? waitOf(signal) : 0;
  };

  return {
    limiter,
    key,
    cost,
    settle: () => undefined,
    // A server's delay pauses the resource's budget (`requests`), not the slots or the writes
    // budgets the other resources share.
    retry: { shouldRetry, delay, maxRetryAfter, pauseDimensions: ["requests"] },
    onResponse,
    rateLimitHeaders: false,
    ...(clock === undefined ? {} : { clock }),
    ...wall.passOn,
  };
}

/** A GraphQL body whose `query` is a mutation (`mutation { … }` or `mutation Name(…) { … }`). */
function isMutation(text: string | undefined): boolean {
  if (text === undefined) return false;
  try {
    const query = (JSON.parse(text) as { query?: unknown } | null)?.query;
    return typeof query === "string" && /^\s*(#[^\n]*\n\s*)*mutation\b/.test(query);
  } catch {
    return false;
  }
}
