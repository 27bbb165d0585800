/**
 * The names, units and attributes sluice reports, in one place so the code, the tests and the
 * README cannot drift apart. They follow the OpenTelemetry semantic conventions: lowercase
 * dot-separated namespaces (`sluice.limiter.*`, `sluice.http.client.*`), the unit in `unit` and
 * never in the name, UCUM units (`s` for durations, annotations such as `{request}` for counts), no
 * `_total` suffix, plural names only for counts of things. Modelled on the conventions' own rate
 * limiting metrics (`aspnetcore.rate_limiting.*`): one request counter split by an outcome
 * attribute, since granted + refused + aborted is a meaningful total.
 *
 * @module
 */

/**
 * The metrics `sluice/otel` reports: name, instrument and unit.
 *
 * @example
 * ```ts
 * import { METRICS } from "sluice/otel";
 * console.log(METRICS.queueDuration.name); // "sluice.limiter.queue.duration"
 * ```
 */
export const METRICS = {
  /** Counter: acquisitions that finished, by `sluice.limiter.outcome` (and `sluice.limiter.refusal.reason`). */
  requests: { name: "sluice.limiter.requests", unit: "{request}", description: "Permit requests that were granted, refused or aborted" },
  /** Counter: permits those requests asked for, by the same attributes (differs from `requests` with weighted costs). */
  permits: { name: "sluice.limiter.permits", unit: "{permit}", description: "Permits requested, by outcome" },
  /** Histogram: time from the request to its grant (or abort), in seconds; 0 when granted at once. */
  queueDuration: { name: "sluice.limiter.queue.duration", unit: "s", description: "Time requests waited for their permits" },
  /** Asynchronous up-down counter: callers waiting now. */
  queuedRequests: { name: "sluice.limiter.queued_requests", unit: "{request}", description: "Requests waiting for permits" },
  /** Asynchronous up-down counter: granted and not finished (scheduled tasks running, reservations not settled). */
  activeRequests: { name: "sluice.limiter.active_requests", unit: "{request}", description: "Granted requests still in flight" },
  /** Asynchronous gauge: the current limit as permits per second (a live or adaptive limit moves it). */
  rate: { name: "sluice.limiter.rate", unit: "{permit}/s", description: "The limiter's current rate" },
  /** Counter: pauses (a 429's Retry-After, a quota reset, or `pause(ms)` called directly). */
  pauses: { name: "sluice.limiter.pauses", unit: "{pause}", description: "Times the limiter was paused" },
  /** Counter: responses that throttled the client (429, 503 with a delay) or reported an exhausted quota. */
  throttledResponses: {
    name: "sluice.http.client.throttled_responses",
    unit: "{response}",
    description: "Responses that asked the client to slow down",
  },
  /** Histogram: the delay those responses asked for, in seconds. */
  throttleDelay: { name: "sluice.http.client.throttle.delay", unit: "s", description: "Delay asked for by throttling responses" },
  /** Counter: retries about to be made, by `sluice.retry.throttled` and the status or error retried. */
  retries: { name: "sluice.http.client.retries", unit: "{retry}", description: "Retries of HTTP requests" },
} as const;

/**
 * The attribute keys sluice writes. `http.response.status_code` and `error.type` are the semantic
 * conventions' own; the rest live in the `sluice.` namespace.
 *
 * @example
 * ```ts
 * import { ATTRIBUTES } from "sluice/otel";
 * const githubOnly = { [ATTRIBUTES.limiterName]: "github" };
 * ```
 */
export const ATTRIBUTES = {
  /** The `name` given when instrumenting: tells limiters apart. */
  limiterName: "sluice.limiter.name",
  /** A `KeyedLimiter`'s key (as mapped by the `key` option). Absent: not broken out by key. */
  key: "sluice.key",
  /** `"granted"`, `"refused"` or `"aborted"`. */
  outcome: "sluice.limiter.outcome",
  /** On refusals: `"max_wait"` or `"max_queue"`. */
  refusalReason: "sluice.limiter.refusal.reason",
  /** On throttled responses: `"throttled"` (429, 503 with a delay) or `"quota_exhausted"`. */
  throttleReason: "sluice.throttle.reason",
  /** On retries: whether the server timed the retry (429, 503 with a delay). */
  retryThrottled: "sluice.retry.throttled",
  /** The HTTP status of the response (semantic conventions). */
  statusCode: "http.response.status_code",
  /** On retries after an error rather than a response: the error's name, e.g. `"TimeoutError"` (semantic conventions). */
  errorType: "error.type",
} as const;

/**
 * Histogram buckets (seconds) suggested for waits and server delays: a first bucket for "at once",
 * then from 5 ms to 5 minutes, since a limiter's waits reach the length of its window (a minute or
 * an hour) where HTTP latencies stop at seconds. The SDK's views may override them.
 *
 * @example
 * ```ts
 * import { WAIT_BUCKETS } from "sluice/otel";
 * console.log(WAIT_BUCKETS[0]); // 0: granted at once
 * ```
 */
export const WAIT_BUCKETS: readonly number[] = [0, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
