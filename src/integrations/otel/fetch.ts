/**
 * HTTP metrics through the hooks the throttled fetch already has: the hooks are the integration
 * point, so nothing in the fetch loop knows about OpenTelemetry, and the same `onThrottle` works for
 * `sluice/undici`'s `throttle()` (whose events carry `statusCode` instead of a `Response`).
 *
 * @module
 */
import { httpInstruments, requireMeter } from "./instruments.ts";
import { commonAttributes, type KeyAttributeOptions, KeyAttributes } from "./keys.ts";
import { ATTRIBUTES } from "./names.ts";
import type { Attributes, MeterLike } from "./types.ts";
import { keysOf, onlyKnown } from "../../validate.ts";

/**
 * Options of {@link otelFetchHooks}.
 *
 * @example
 * ```ts
 * const options: OtelFetchHooksOptions = { meter: metrics.getMeter("my-service"), name: "github" };
 * ```
 */
export interface OtelFetchHooksOptions extends KeyAttributeOptions {
  /** The OpenTelemetry `Meter` to create the instruments with. */
  meter: MeterLike;
  /** The `sluice.limiter.name` attribute of every measurement: use the limiter's, to read both together. */
  name: string;
  /** More attributes for every measurement (keep them few and fixed). */
  attributes?: Attributes;
}

/**
 * What `onThrottle` reads: the throttled fetch's `ThrottleEvent`, or `sluice/undici`'s
 * `DispatchThrottleEvent`.
 *
 * @example
 * ```ts
 * const event: ThrottleEventLike = { reason: "throttled", delay: 2000, key: undefined, statusCode: 429 };
 * ```
 */
export interface ThrottleEventLike {
  /** `"throttled"` (429, 503 with a delay) or `"quota-exhausted"`. */
  readonly reason: string;
  /** The delay the server asked for, in ms. */
  readonly delay: number;
  /** The limiter key, with a `KeyedLimiter`. */
  readonly key: string | undefined;
  /** The response (throttled fetch). */
  readonly response?: { readonly status: number };
  /** The response status (`sluice/undici`). */
  readonly statusCode?: number;
}

/**
 * What `onRetry` reads: the throttled fetch's `RetryEvent`.
 *
 * @example
 * ```ts
 * const event: RetryEventLike = { throttled: true, key: undefined, response: { status: 429 } };
 * ```
 */
export interface RetryEventLike {
  /** True when the server timed the retry (429, 503 with a delay). */
  readonly throttled: boolean;
  /** The limiter key, with a `KeyedLimiter`. */
  readonly key: string | undefined;
  /** The response being retried. */
  readonly response?: { readonly status: number };
  /** The error being retried (when there is no response). */
  readonly error?: unknown;
}

/**
 * Hooks to spread into `createThrottledFetch` options (or `onThrottle` into `throttle()`'s).
 *
 * @example
 * ```ts
 * const hooks: OtelFetchHooks = otelFetchHooks({ meter, name: "github" });
 * const api = createThrottledFetch({ limiter, ...hooks });
 * ```
 */
export interface OtelFetchHooks {
  /** Counts a throttling response and records the delay it asked for. */
  onThrottle(event: ThrottleEventLike): void;
  /** Counts a retry. */
  onRetry(event: RetryEventLike): void;
}

/** The name of an error, which is low-cardinality and never carries a secret (a message may). */
function errorType(error: unknown): string {
  const name = (error as { name?: unknown } | null)?.name;
  return typeof name === "string" && name !== "" && name.length <= 64 ? name : "_OTHER";
}

/**
 * Hooks that report a throttled fetch's HTTP metrics: responses that throttled it
 * (`sluice.http.client.throttled_responses`, by `sluice.throttle.reason` and
 * `http.response.status_code`), the delay they asked for (`sluice.http.client.throttle.delay`,
 * seconds) and retries (`sluice.http.client.retries`, by `sluice.retry.throttled` and the status or
 * `error.type`). With a `KeyedLimiter`, the key is the `sluice.key` attribute, bounded as in
 * `instrumentKeyed`. To keep a hook of your own as well, call both from one function.
 *
 * @example
 * ```ts
 * import { metrics } from "@opentelemetry/api";
 * import { createThrottledFetch } from "sluice";
 * import { otelFetchHooks } from "sluice/otel";
 *
 * const api = createThrottledFetch({
 *   limit: 10,
 *   ...otelFetchHooks({ meter: metrics.getMeter("my-service"), name: "github" }),
 * });
 * ```
 */
export function otelFetchHooks(options: OtelFetchHooksOptions): OtelFetchHooks {
  const meter = requireMeter(options?.meter);
  onlyKnown("otelFetchHooks()", options, keysOf<OtelFetchHooksOptions>()("meter", "name", "attributes", "key", "maxKeys"));
  const instruments = httpInstruments(meter);
  const keys = new KeyAttributes(options, commonAttributes(options.name, options.attributes), (attributes) => attributes);
  return {
    onThrottle(event) {
      const status = event.response?.status ?? event.statusCode;
      const attributes: Record<string, string | number | boolean> = {
        ...keys.for(event.key),
        [ATTRIBUTES.throttleReason]: event.reason === "quota-exhausted" ? "quota_exhausted" : "throttled",
      };
      if (typeof status === "number") attributes[ATTRIBUTES.statusCode] = status;
      instruments.throttled.add(1, attributes);
      if (Number.isFinite(event.delay) && event.delay >= 0) instruments.throttleDelay.record(event.delay / 1000, attributes);
    },
    onRetry(event) {
      const attributes: Record<string, string | number | boolean> = {
        ...keys.for(event.key),
        [ATTRIBUTES.retryThrottled]: event.throttled === true,
      };
      if (event.response !== undefined) attributes[ATTRIBUTES.statusCode] = event.response.status;
      else attributes[ATTRIBUTES.errorType] = errorType(event.error);
      instruments.retries.add(1, attributes);
    },
  };
}
