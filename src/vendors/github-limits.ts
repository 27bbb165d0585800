/**
 * GitHub's documented REST limits, each with its source, so the `github()` profile and its tests
 * share one set of numbers.
 *
 * Sources (read 2026-11): `github/docs`
 * - `content/rest/using-the-rest-api/rate-limits-for-the-rest-api.md` (primary and secondary limits),
 * - `data/reusables/rest-api/secondary-rate-limit-rest-graphql.md` (the secondary limits' figures),
 * - `content/rest/using-the-rest-api/best-practices-for-using-the-rest-api.md` (waits and backoff),
 * - `content/rest/search/search.md` ("Rate limit": 30/min authenticated, code search 10/min, 10/min
 *   unauthenticated),
 * - docs.github.com/en/graphql/overview/rate-limits-and-node-limits-for-the-graphql-api#primary-rate-limit
 *   (GraphQL: 5,000 points an hour for a user; a query costs at least one point).
 *
 * @module
 */

/**
 * The numbers of GitHub's REST rate limits.
 *
 * @example
 * ```ts
 * GITHUB_LIMITS.maxConcurrent;            // 100
 * GITHUB_LIMITS.contentCreatingPerMinute; // 80
 * ```
 */
export const GITHUB_LIMITS: {
  readonly maxConcurrent: number;
  readonly contentCreatingPerMinute: number;
  readonly contentCreatingPerHour: number;
  readonly pointsPerMinute: number;
  readonly readPoints: number;
  readonly mutationPoints: number;
  readonly minMutationGapMs: number;
  readonly searchPerMinute: number;
  readonly codeSearchPerMinute: number;
  readonly unauthenticatedSearchPerMinute: number;
  readonly secondaryMinWaitMs: number;
  readonly primaryResetMarginMs: number;
  readonly graphqlPointsPerHour: number;
  readonly primaryPerHour: { readonly unauthenticated: number; readonly user: number; readonly enterpriseCloud: number; readonly githubToken: number };
} = {
  /** Secondary limit: "No more than 100 concurrent requests", shared by REST and GraphQL. */
  maxConcurrent: 100,
  /** Secondary limit: content-creating requests, "no more than 80 … per minute". */
  contentCreatingPerMinute: 80,
  /** Secondary limit: content-creating requests, "no more than 500 … per hour". */
  contentCreatingPerHour: 500,
  /** Secondary limit: 900 points per minute per REST endpoint. */
  pointsPerMinute: 900,
  /** Points of a GET, HEAD or OPTIONS request. */
  readPoints: 1,
  /** Points of a POST, PATCH, PUT or DELETE request. */
  mutationPoints: 5,
  /** Best practices: "wait at least one second between each request" that mutates (POST/PATCH/PUT/DELETE). */
  minMutationGapMs: 1_000,
  /** Search endpoints (except code search), authenticated: 30 requests per minute. */
  searchPerMinute: 30,
  /** The code-search endpoint: 10 requests per minute (authentication required). */
  codeSearchPerMinute: 10,
  /** Search endpoints, unauthenticated: 10 requests per minute. */
  unauthenticatedSearchPerMinute: 10,
  /** Secondary limit without `retry-after` (and quota left): "wait for at least one minute before retrying". */
  secondaryMinWaitMs: 60_000,
  /**
   * Added to a primary reset: it is whole epoch seconds, and waiting until exactly that second can
   * land just before the server's clock reaches it (notes/vendors.md §2.1: "wait until reset (+1 s)").
   */
  primaryResetMarginMs: 1_000,
  /** GraphQL's primary limit: 5,000 points per hour for a user (its own budget, apart from REST's). */
  graphqlPointsPerHour: 5_000,
  /** Primary quotas per hour: unauthenticated 60, a user 5,000, GitHub Enterprise Cloud 15,000, `GITHUB_TOKEN` 1,000 per repository. */
  primaryPerHour: { unauthenticated: 60, user: 5_000, enterpriseCloud: 15_000, githubToken: 1_000 },
};
