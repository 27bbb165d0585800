/**
 * The OpenTelemetry SDK as users run it (MeterProvider + a periodic reader into the in-memory
 * exporter, flushed on demand), and fake limiters that implement the stats-and-events interface of
 * SPEC-observability.md to the letter: `stats()` snapshots, and an `EventTarget` that dispatches
 * `CustomEvent`s only while someone listens for that type.
 */
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  type MetricData,
  MeterProvider,
  PeriodicExportingMetricReader,
} from "@opentelemetry/sdk-metrics";
import type { Meter } from "@opentelemetry/api";

export interface Harness {
  readonly meter: Meter;
  /** Collects and exports now; returns every metric exported. */
  collect(): Promise<MetricData[]>;
  shutdown(): Promise<void>;
}

export function harness(): Harness {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  // A long interval: exports happen only when the test flushes.
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ readers: [reader] });
  return {
    meter: provider.getMeter("sluice-test"),
    async collect() {
      exporter.reset();
      await reader.forceFlush();
      return exporter.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics));
    },
    shutdown: () => provider.shutdown(),
  };
}

type Attrs = Record<string, unknown>;

/** Attributes as one string, whatever order their keys are in (the SDK does not keep it). */
const canonical = (attributes: Attrs) => JSON.stringify(Object.entries(attributes).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

/** Rows of `[attributes, value]` in the order {@link points} returns them. */
export function sorted<T extends [Attrs, number]>(rows: T[]): T[] {
  return rows.sort((a, b) => canonical(a[0]).localeCompare(canonical(b[0])));
}

/** Histogram rows in the order {@link histogram} returns them. */
export function sortedBy<T extends { attributes: Attrs }>(rows: T[]): T[] {
  return rows.sort((a, b) => canonical(a.attributes).localeCompare(canonical(b.attributes)));
}

/** A counter's or gauge's data points: `[attributes, value]`, sorted by attributes. */
export function points(metrics: MetricData[], name: string): Array<[Attrs, number]> {
  const metric = metrics.find((m) => m.descriptor.name === name);
  if (metric === undefined) return [];
  if (metric.dataPointType === DataPointType.HISTOGRAM) throw new Error(`${name} is a histogram`);
  return sorted(metric.dataPoints.map((p): [Attrs, number] => [{ ...p.attributes }, p.value as number]));
}

export interface HistogramPoint {
  attributes: Attrs;
  count: number;
  sum: number;
  /** Counts per bucket, as `[upper bound, count]` for the non-empty ones (`Infinity` last). */
  buckets: Array<[number, number]>;
}

/** A histogram's data points, sorted by attributes. */
export function histogram(metrics: MetricData[], name: string): HistogramPoint[] {
  const metric = metrics.find((m) => m.descriptor.name === name);
  if (metric === undefined) return [];
  if (metric.dataPointType !== DataPointType.HISTOGRAM) throw new Error(`${name} is not a histogram`);
  return sortedBy(metric.dataPoints
    .map((p) => {
      const { boundaries, counts } = p.value.buckets;
      const buckets = counts
        .map((n, i): [number, number] => [boundaries[i] ?? Infinity, n])
        .filter(([, n]) => n > 0);
      return { attributes: { ...p.attributes }, count: p.value.count, sum: p.value.sum ?? NaN, buckets };
    }));
}

/** The stats snapshot of SPEC-observability.md. */
export interface LimiterStats {
  readonly queued: number;
  readonly inFlight: number;
  readonly granted: number;
  readonly refused: number;
  readonly aborted: number;
  readonly pausedUntil: number | undefined;
  readonly rate?: { readonly limit: number; readonly interval: number };
}

/** An EventTarget that knows whether anyone listens for a type, so nothing is dispatched for nobody. */
export class ListenedEvents extends EventTarget {
  readonly #listeners = new Map<string, Set<unknown>>();

  override addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: AddEventListenerOptions | boolean): void {
    super.addEventListener(type, listener, options);
    if (listener !== null) {
      const set = this.#listeners.get(type) ?? new Set();
      set.add(listener);
      this.#listeners.set(type, set);
    }
  }

  override removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: EventListenerOptions | boolean): void {
    super.removeEventListener(type, listener, options);
    this.#listeners.get(type)?.delete(listener);
  }

  /** Listeners of `type` now (all types when omitted). */
  listeners(type?: string): number {
    if (type !== undefined) return this.#listeners.get(type)?.size ?? 0;
    let n = 0;
    for (const set of this.#listeners.values()) n += set.size;
    return n;
  }

  /** Dispatches a CustomEvent, allocating nothing when no one listens. */
  emit(type: string, detail: () => object): void {
    if (this.listeners(type) > 0) this.dispatchEvent(new CustomEvent(type, { detail: detail() }));
  }
}

/** A limiter whose state the test sets and whose events the test fires, as the spec defines them. */
export class FakeLimiter {
  readonly events = new ListenedEvents();
  queued = 0;
  inFlight = 0;
  granted = 0;
  refused = 0;
  aborted = 0;
  pausedUntil: number | undefined;
  rate: { limit: number; interval: number } | undefined;
  /** How many times stats() was read. */
  reads = 0;

  stats(): LimiterStats {
    this.reads++;
    return {
      queued: this.queued,
      inFlight: this.inFlight,
      granted: this.granted,
      refused: this.refused,
      aborted: this.aborted,
      pausedUntil: this.pausedUntil,
      ...(this.rate !== undefined && { rate: { ...this.rate } }),
    };
  }

  grant(permits: number, waited: number, key?: string): void {
    this.granted++;
    this.events.emit("grant", () => ({ permits, waited, ...(key !== undefined && { key }) }));
  }

  refuse(permits: number, reason: "maxWait" | "maxQueue", key?: string): void {
    this.refused++;
    this.events.emit("refuse", () => ({ permits, reason, ...(reason === "maxWait" && { retryAfter: 100 }), ...(key !== undefined && { key }) }));
  }

  abort(permits: number, waited: number, key?: string): void {
    this.aborted++;
    this.events.emit("abort", () => ({ permits, waited, ...(key !== undefined && { key }) }));
  }

  pause(ms: number, now: number, key?: string): void {
    this.pausedUntil = now + ms;
    this.events.emit("pause", () => ({ ms, until: now + ms, reason: "429", ...(key !== undefined && { key }) }));
  }
}

/**
 * A KeyedLimiter<string> as the spec defines it: a limiter per live key, `stats()` summed over the
 * live keys, `stats(key)`, and `events` re-dispatching each key's events with `detail.key` set.
 */
export class FakeKeyed {
  readonly events = new ListenedEvents();
  readonly #limiters = new Map<string, FakeLimiter>();

  /** The key's limiter, made on first use; its events reach `events` with the key. */
  key(key: string): FakeLimiter {
    let limiter = this.#limiters.get(key);
    if (limiter === undefined) {
      limiter = new FakeLimiter();
      // Every event goes to the keyed limiter's target, with the key, only while someone listens there.
      limiter.events.emit = (type, detail) => this.events.emit(type, () => ({ ...detail(), key }));
      this.#limiters.set(key, limiter);
    }
    return limiter;
  }

  /** Forgets a key (as eviction does). */
  evict(key: string): void {
    this.#limiters.delete(key);
  }

  has(key: string): boolean {
    return this.#limiters.has(key);
  }

  stats(key?: string): LimiterStats {
    if (key !== undefined) {
      const limiter = this.#limiters.get(key);
      return limiter?.stats() ?? { queued: 0, inFlight: 0, granted: 0, refused: 0, aborted: 0, pausedUntil: undefined };
    }
    const total = { queued: 0, inFlight: 0, granted: 0, refused: 0, aborted: 0, pausedUntil: undefined };
    for (const limiter of this.#limiters.values()) {
      total.queued += limiter.queued;
      total.inFlight += limiter.inFlight;
      total.granted += limiter.granted;
      total.refused += limiter.refused;
      total.aborted += limiter.aborted;
    }
    return total;
  }
}
