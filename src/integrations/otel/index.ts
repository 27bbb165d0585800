/**
 * sluice for OpenTelemetry: limiter metrics from `stats()` and events, HTTP metrics from the
 * throttled fetch's hooks, reported through a `Meter` the caller passes in.
 *
 * @module
 */
export { instrumentKeyed, instrumentLimiter } from "./limiter.ts";
export type { InstrumentKeyedOptions, InstrumentLimiterOptions, StopInstrumenting } from "./limiter.ts";
export { otelFetchHooks } from "./fetch.ts";
export type { OtelFetchHooks, OtelFetchHooksOptions, RetryEventLike, ThrottleEventLike } from "./fetch.ts";
export { DEFAULT_MAX_KEYS, type KeyAttributeOptions } from "./keys.ts";
export { ATTRIBUTES, METRICS, WAIT_BUCKETS } from "./names.ts";
export type {
  AttributeValue,
  Attributes,
  BatchObservableResultLike,
  CounterLike,
  HistogramLike,
  InstrumentOptions,
  LimiterStatsLike,
  MeterLike,
  ObservableKeyedLimiter,
  ObservableLike,
  ObservableLimiter,
} from "./types.ts";
