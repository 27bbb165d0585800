/**
 * The shapes `sluice/otel` works with, declared structurally so the entry imports nothing:
 * `@opentelemetry/api` stays an optional peer that is never loaded by sluice (the caller passes a
 * `Meter` it already has), and the limiter side is the stats-and-events interface every sluice
 * limiter implements. A real OpenTelemetry `Meter` satisfies {@link MeterLike}; a test checks it.
 *
 * @module
 */

/** Attribute values OpenTelemetry accepts on a measurement (the subset sluice writes). */
export type AttributeValue = string | number | boolean;

/**
 * Attributes of a measurement, as in `@opentelemetry/api`.
 *
 * @example
 * ```ts
 * const attributes: Attributes = { "deployment.environment.name": "production" };
 * ```
 */
export type Attributes = Readonly<Record<string, AttributeValue>>;

/**
 * Options of an instrument: what sluice passes when it creates one.
 *
 * @example
 * ```ts
 * const options: InstrumentOptions = { unit: "s", description: "Time in the queue" };
 * ```
 */
export interface InstrumentOptions {
  /** What the instrument measures. */
  description?: string;
  /** The UCUM unit, e.g. `"s"` or `"{request}"`. */
  unit?: string;
  /** Hints to the SDK; sluice suggests histogram buckets. */
  advice?: { explicitBucketBoundaries?: number[] };
}

/**
 * A counter (or histogram): something a value is added to (recorded in), with attributes.
 *
 * @example
 * ```ts
 * const counter: CounterLike = meter.createCounter("sluice.limiter.requests");
 * counter.add(1, { "sluice.limiter.name": "github" });
 * ```
 */
export interface CounterLike {
  /** Adds `value` to the series of `attributes`. */
  add(value: number, attributes?: Attributes): void;
}

/**
 * A histogram: records one value per measurement.
 *
 * @example
 * ```ts
 * const histogram: HistogramLike = meter.createHistogram("sluice.limiter.queue.duration", { unit: "s" });
 * histogram.record(0.25);
 * ```
 */
export interface HistogramLike {
  /** Records `value` in the series of `attributes`. */
  record(value: number, attributes?: Attributes): void;
}

/**
 * An asynchronous instrument, observed in a batch callback at each collection.
 *
 * @example
 * ```ts
 * const queued: ObservableLike = meter.createObservableUpDownCounter("sluice.limiter.queued_requests");
 * ```
 */
export interface ObservableLike {
  /** Registers a callback for this instrument alone (unused by sluice, which observes in batches). */
  addCallback(callback: (result: { observe(value: number, attributes?: Attributes): void }) => void): void;
}

/**
 * What a batch observable callback receives: one `observe` for any of its instruments.
 *
 * @example
 * ```ts
 * const callback = (result: BatchObservableResultLike) => result.observe(queued, 3, { "sluice.limiter.name": "github" });
 * ```
 */
export interface BatchObservableResultLike {
  /** Reports `value` for `observable` in the series of `attributes`. */
  observe(observable: ObservableLike, value: number, attributes?: Attributes): void;
}

/**
 * The part of an OpenTelemetry `Meter` (`@opentelemetry/api` ≥ 1.3) that sluice uses. Pass the
 * real thing: `metrics.getMeter("my-service")`.
 *
 * @example
 * ```ts
 * import { metrics } from "@opentelemetry/api";
 * const meter: MeterLike = metrics.getMeter("my-service");
 * ```
 */
export interface MeterLike {
  /** Creates (or returns the existing) counter of this name. */
  createCounter(name: string, options?: InstrumentOptions): CounterLike;
  /** Creates (or returns the existing) histogram of this name. */
  createHistogram(name: string, options?: InstrumentOptions): HistogramLike;
  /** Creates an asynchronous up-down counter (a count that is summed across series, like a queue length). */
  createObservableUpDownCounter(name: string, options?: InstrumentOptions): ObservableLike;
  /** Creates an asynchronous gauge (a value that is not summed across series, like a rate). */
  createObservableGauge(name: string, options?: InstrumentOptions): ObservableLike;
  /** Calls `callback` at each collection to observe `observables`. */
  addBatchObservableCallback(callback: (result: BatchObservableResultLike) => void, observables: ObservableLike[]): void;
  /** Undoes {@link MeterLike.addBatchObservableCallback}. */
  removeBatchObservableCallback(callback: (result: BatchObservableResultLike) => void, observables: ObservableLike[]): void;
}

/**
 * The part of a limiter's `stats()` snapshot that the gauges read.
 *
 * @example
 * ```ts
 * const { queued, inFlight }: LimiterStatsLike = limiter.stats();
 * ```
 */
export interface LimiterStatsLike {
  /** Callers waiting now. */
  readonly queued: number;
  /** Granted and not yet finished (scheduled tasks running, reservations not yet settled). */
  readonly inFlight: number;
  /** The current limit: `limit` permits per `interval` ms, when the limiter has one. */
  readonly rate?: { readonly limit: number; readonly interval: number } | undefined;
}

/**
 * A limiter `sluice/otel` can instrument: every sluice limiter (`SmoothLimiter`, `WindowLimiter`,
 * `combine(…)`, the Redis limiters…) has `stats()` and `events`.
 *
 * @example
 * ```ts
 * const observed: ObservableLimiter = new SmoothLimiter({ limit: 10 });
 * ```
 */
export interface ObservableLimiter {
  /** A snapshot of the limiter's counters. */
  stats(): LimiterStatsLike;
  /** Dispatches `grant`, `refuse`, `abort`, `pause` and `ratechange` `CustomEvent`s. */
  readonly events: EventTarget;
}

/**
 * A `KeyedLimiter<string>`: `stats()` over all keys, `stats(key)` for one, and `events` carrying
 * every key's events with `detail.key` set.
 *
 * @example
 * ```ts
 * const observed: ObservableKeyedLimiter = new KeyedLimiter({ create: () => new SmoothLimiter({ limit: 5 }) });
 * ```
 */
export interface ObservableKeyedLimiter {
  /** Totals over the live keys, or one key's snapshot. */
  stats(key?: string): LimiterStatsLike;
  /** Whether the key has a live limiter (asked before `stats(key)`, so no limiter is made for it). */
  has(key: string): boolean;
  /** Every key's events, with `detail.key` set. */
  readonly events: EventTarget;
}
