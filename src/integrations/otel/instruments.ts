/**
 * Creating the instruments from the caller's `Meter`. Creating an instrument twice with the same
 * name and options returns the same one in the SDK, so instrumenting several limiters with one
 * meter shares the instruments; `sluice.limiter.name` tells the series apart.
 *
 * @module
 */
import { describeValue } from "../../validate.ts";
import { METRICS, WAIT_BUCKETS } from "./names.ts";
import type { CounterLike, HistogramLike, InstrumentOptions, MeterLike, ObservableLike } from "./types.ts";

const METER_METHODS = [
  "createCounter",
  "createHistogram",
  "createObservableUpDownCounter",
  "createObservableGauge",
  "addBatchObservableCallback",
  "removeBatchObservableCallback",
] as const;

/** The `meter` option, checked by shape (a `Meter` from any copy of `@opentelemetry/api` ≥ 1.3 passes). */
export function requireMeter(meter: unknown): MeterLike {
  const missing = typeof meter === "object" && meter !== null
    ? METER_METHODS.find((m) => typeof (meter as Record<string, unknown>)[m] !== "function")
    : undefined;
  if (typeof meter !== "object" || meter === null || missing !== undefined) {
    throw new TypeError(`\`meter\` must be an OpenTelemetry Meter${missing === undefined ? "" : ` (it has no ${missing}())`}, got ${describeValue(meter)}`);
  }
  return meter as MeterLike;
}

function options(metric: { readonly unit: string; readonly description: string }, buckets?: readonly number[]): InstrumentOptions {
  return {
    unit: metric.unit,
    description: metric.description,
    ...(buckets !== undefined && { advice: { explicitBucketBoundaries: [...buckets] } }),
  };
}

/** The instruments fed by a limiter's events. */
export interface LimiterInstruments {
  readonly requests: CounterLike;
  readonly permits: CounterLike;
  readonly queueDuration: HistogramLike;
  readonly pauses: CounterLike;
}

export function limiterInstruments(meter: MeterLike): LimiterInstruments {
  return {
    requests: meter.createCounter(METRICS.requests.name, options(METRICS.requests)),
    permits: meter.createCounter(METRICS.permits.name, options(METRICS.permits)),
    queueDuration: meter.createHistogram(METRICS.queueDuration.name, options(METRICS.queueDuration, WAIT_BUCKETS)),
    pauses: meter.createCounter(METRICS.pauses.name, options(METRICS.pauses)),
  };
}

/** The asynchronous instruments read from `stats()` at each collection. */
export interface LimiterGauges {
  readonly queued: ObservableLike;
  readonly active: ObservableLike;
  readonly rate: ObservableLike;
}

export function limiterGauges(meter: MeterLike): LimiterGauges {
  return {
    queued: meter.createObservableUpDownCounter(METRICS.queuedRequests.name, options(METRICS.queuedRequests)),
    active: meter.createObservableUpDownCounter(METRICS.activeRequests.name, options(METRICS.activeRequests)),
    rate: meter.createObservableGauge(METRICS.rate.name, options(METRICS.rate)),
  };
}

/** The instruments fed by the throttled fetch's hooks. */
export interface HttpInstruments {
  readonly throttled: CounterLike;
  readonly throttleDelay: HistogramLike;
  readonly retries: CounterLike;
}

export function httpInstruments(meter: MeterLike): HttpInstruments {
  return {
    throttled: meter.createCounter(METRICS.throttledResponses.name, options(METRICS.throttledResponses)),
    throttleDelay: meter.createHistogram(METRICS.throttleDelay.name, options(METRICS.throttleDelay, WAIT_BUCKETS)),
    retries: meter.createCounter(METRICS.retries.name, options(METRICS.retries)),
  };
}
