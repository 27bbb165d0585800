/**
 * Limiter metrics: counters and the wait histogram are fed by the limiter's events (a listener per
 * event type, no polling); the queue and in-flight counts and the rate are read from `stats()` when
 * the SDK collects, in one batch callback. Stopping removes both, so an instrumented limiter that is
 * dropped leaves nothing behind in the meter.
 *
 * A `KeyedLimiter`'s per-key counts are read with `stats(key)` for the keys seen in events (a key
 * stays tracked while it has callers queued or in flight); what those keys do not account for —
 * keys not broken out, or queued before their first event — is reported without `sluice.key`, so the
 * series always add up to `stats()`.
 *
 * @module
 */
import { describeValue, keysOf, onlyKnown } from "../../validate.ts";
import { limiterGauges, limiterInstruments, type LimiterInstruments, requireMeter } from "./instruments.ts";
import { commonAttributes, type KeyAttributeOptions, KeyAttributes } from "./keys.ts";
import { ATTRIBUTES } from "./names.ts";
import type {
  Attributes,
  BatchObservableResultLike,
  MeterLike,
  ObservableKeyedLimiter,
  ObservableLimiter,
  ObservableLike,
} from "./types.ts";

/**
 * Options of {@link instrumentLimiter}.
 *
 * @example
 * ```ts
 * const options: InstrumentLimiterOptions = { meter: metrics.getMeter("my-service"), name: "github" };
 * ```
 */
export interface InstrumentLimiterOptions {
  /** The OpenTelemetry `Meter` to create the instruments with, e.g. `metrics.getMeter("my-service")`. */
  meter: MeterLike;
  /** The `sluice.limiter.name` attribute of every measurement: tells limiters apart. */
  name: string;
  /** More attributes for every measurement (keep them few and fixed: each value is a series). */
  attributes?: Attributes;
}

/**
 * Options of {@link instrumentKeyed}: those of {@link instrumentLimiter}, and how keys become the
 * `sluice.key` attribute.
 *
 * @example
 * ```ts
 * const options: InstrumentKeyedOptions = { meter, name: "tenants", key: (tenant) => planOf(tenant), maxKeys: 5 };
 * ```
 */
export interface InstrumentKeyedOptions extends InstrumentLimiterOptions, KeyAttributeOptions {}

/**
 * Stops reporting: removes the event listeners and the collection callback. Calling it again does
 * nothing. (With cumulative temporality the SDK keeps exporting the last observed queued and
 * in-flight values until its meter provider shuts down; that is the SDK's rule for series.)
 *
 * @example
 * ```ts
 * const stop: StopInstrumenting = instrumentLimiter(limiter, { meter, name: "github" });
 * stop();
 * ```
 */
export type StopInstrumenting = () => void;

/** Upper bound on keys tracked for the per-key counts; past it, new keys count without `sluice.key`. */
const MAX_TRACKED_KEYS = 10_000;

/** The attribute objects of one series (one key, or none), built once. */
interface EventAttributes {
  readonly common: Attributes;
  readonly granted: Attributes;
  readonly aborted: Attributes;
  readonly maxWait: Attributes;
  readonly maxQueue: Attributes;
}

function eventAttributes(common: Attributes): EventAttributes {
  const refused = { ...common, [ATTRIBUTES.outcome]: "refused" };
  return {
    common,
    granted: { ...common, [ATTRIBUTES.outcome]: "granted" },
    aborted: { ...common, [ATTRIBUTES.outcome]: "aborted" },
    maxWait: { ...refused, [ATTRIBUTES.refusalReason]: "max_wait" },
    maxQueue: { ...refused, [ATTRIBUTES.refusalReason]: "max_queue" },
  };
}

interface EventDetail {
  readonly permits?: number;
  readonly waited?: number;
  readonly reason?: string;
  readonly key?: string;
}

function detailOf(event: Event): EventDetail | undefined {
  const detail = (event as CustomEvent<unknown>).detail;
  return typeof detail === "object" && detail !== null ? detail : undefined;
}

const count = (n: unknown) => (typeof n === "number" && Number.isFinite(n) && n >= 0 ? n : 0);

/**
 * Subscribes the counters and the histogram to `events`; returns the unsubscriber. `seen` is told the
 * key of each event whose key is broken out.
 */
function listen(
  events: EventTarget,
  instruments: LimiterInstruments,
  keys: KeyAttributes<EventAttributes> | undefined,
  none: EventAttributes,
  seen: ((key: string) => void) | undefined,
): () => void {
  const setsOf = (detail: EventDetail): EventAttributes => {
    if (keys === undefined) return none;
    const value = keys.value(detail.key);
    if (value !== undefined && seen !== undefined) seen(detail.key!);
    return keys.forValue(value);
  };
  const handlers: Record<string, (event: Event) => void> = {
    grant: (event) => {
      const detail = detailOf(event);
      if (detail === undefined) return;
      const sets = setsOf(detail);
      instruments.requests.add(1, sets.granted);
      instruments.permits.add(count(detail.permits), sets.granted);
      instruments.queueDuration.record(count(detail.waited) / 1000, sets.granted);
    },
    refuse: (event) => {
      const detail = detailOf(event);
      if (detail === undefined) return;
      const sets = setsOf(detail);
      const attributes = detail.reason === "maxQueue" ? sets.maxQueue : sets.maxWait;
      instruments.requests.add(1, attributes);
      instruments.permits.add(count(detail.permits), attributes);
    },
    abort: (event) => {
      const detail = detailOf(event);
      if (detail === undefined) return;
      const sets = setsOf(detail);
      instruments.requests.add(1, sets.aborted);
      instruments.permits.add(count(detail.permits), sets.aborted);
      instruments.queueDuration.record(count(detail.waited) / 1000, sets.aborted);
    },
    pause: (event) => {
      const detail = detailOf(event);
      if (detail === undefined) return;
      instruments.pauses.add(1, setsOf(detail).common);
    },
  };
  for (const [type, handler] of Object.entries(handlers)) events.addEventListener(type, handler);
  return () => {
    for (const [type, handler] of Object.entries(handlers)) events.removeEventListener(type, handler);
  };
}

function requireObservable(name: string, value: unknown, keyed: boolean): void {
  const v = value as Partial<ObservableKeyedLimiter> | null;
  const ok = typeof value === "object" && v !== null && typeof v.stats === "function" &&
    typeof v.events?.addEventListener === "function" && (!keyed || typeof v.has === "function");
  if (!ok) {
    throw new TypeError(`\`${name}\` must be a sluice ${keyed ? "KeyedLimiter" : "limiter"} (with stats() and events), got ${describeValue(value)}`);
  }
}

/** Adds `callback` for `observables` and returns the function that removes it, once. */
function observe(meter: MeterLike, observables: ObservableLike[], callback: (result: BatchObservableResultLike) => void, unlisten: () => void): StopInstrumenting {
  meter.addBatchObservableCallback(callback, observables);
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    unlisten();
    meter.removeBatchObservableCallback(callback, observables);
  };
}

/**
 * Reports a limiter's metrics through an OpenTelemetry `Meter`: requests granted, refused and
 * aborted (`sluice.limiter.requests`, `sluice.limiter.permits`), the time they waited
 * (`sluice.limiter.queue.duration`), pauses, and at each collection the callers queued and in
 * flight and the current rate. Every measurement carries `sluice.limiter.name`. Returns the function
 * that stops it.
 *
 * @example
 * ```ts
 * import { metrics } from "@opentelemetry/api";
 * import { WindowLimiter } from "sluice";
 * import { instrumentLimiter } from "sluice/otel";
 *
 * const limiter = new WindowLimiter({ limit: 5000, interval: 3_600_000 });
 * const stop = instrumentLimiter(limiter, { meter: metrics.getMeter("my-service"), name: "github" });
 * ```
 */
export function instrumentLimiter(limiter: ObservableLimiter, options: InstrumentLimiterOptions): StopInstrumenting {
  requireObservable("limiter", limiter, false);
  const meter = requireMeter(options?.meter);
  onlyKnown("instrumentLimiter()", options, keysOf<InstrumentLimiterOptions>()("meter", "name", "attributes"));
  const sets = eventAttributes(commonAttributes(options.name, options.attributes));
  const unlisten = listen(limiter.events, limiterInstruments(meter), undefined, sets, undefined);
  const gauges = limiterGauges(meter);
  return observe(meter, [gauges.queued, gauges.active, gauges.rate], (result) => {
    const stats = limiter.stats();
    result.observe(gauges.queued, stats.queued, sets.common);
    result.observe(gauges.active, stats.inFlight, sets.common);
    if (stats.rate !== undefined) result.observe(gauges.rate, (stats.rate.limit * 1000) / stats.rate.interval, sets.common);
  }, unlisten);
}

/**
 * Reports a `KeyedLimiter`'s metrics, as {@link instrumentLimiter} does, with each key as the
 * `sluice.key` attribute — through the `key` function, and at most `maxKeys` distinct values (100 by
 * default): keys past the bound, or mapped to `undefined`, are reported without `sluice.key`, so
 * sums over the attribute stay right. The queued and in-flight counts of a key are read with
 * `stats(key)` once the key has had an event (a grant, refusal, abort or pause); until then they
 * are in the series without `sluice.key`. A key stays tracked while it has callers queued or in
 * flight, and is reported at 0 once when it becomes idle; at most 10 000 keys are tracked at once.
 * No rate is reported (keys may have different ones).
 *
 * @example
 * ```ts
 * import { metrics } from "@opentelemetry/api";
 * import { KeyedLimiter, SmoothLimiter } from "sluice";
 * import { instrumentKeyed } from "sluice/otel";
 *
 * const perHost = new KeyedLimiter({ create: () => new SmoothLimiter({ limit: 5 }) });
 * const stop = instrumentKeyed(perHost, { meter: metrics.getMeter("my-service"), name: "per-host" });
 * ```
 */
export function instrumentKeyed(keyed: ObservableKeyedLimiter, options: InstrumentKeyedOptions): StopInstrumenting {
  requireObservable("keyed", keyed, true);
  const meter = requireMeter(options?.meter);
  onlyKnown("instrumentKeyed()", options, keysOf<InstrumentKeyedOptions>()("meter", "name", "attributes", "key", "maxKeys"));
  const keys = new KeyAttributes(options, commonAttributes(options.name, options.attributes), eventAttributes);
  const tracked = new Set<string>();
  const seen = (key: string) => {
    if (tracked.size < MAX_TRACKED_KEYS) tracked.add(key);
  };
  const unlisten = listen(keyed.events, limiterInstruments(meter), keys, keys.none, seen);
  const gauges = limiterGauges(meter);
  return observe(meter, [gauges.queued, gauges.active], (result) => {
    const total = keyed.stats();
    let restQueued = total.queued;
    let restActive = total.inFlight;
    const byValue = new Map<string, { queued: number; active: number }>();
    for (const key of tracked) {
      const value = keys.value(key);
      const stats = keyed.has(key) ? keyed.stats(key) : undefined;
      const queued = stats?.queued ?? 0;
      const active = stats?.inFlight ?? 0;
      // Reported at 0 once, then forgotten: memory follows the busy keys, not every key ever seen.
      if (queued === 0 && active === 0) tracked.delete(key);
      if (value === undefined) continue;
      const sum = byValue.get(value);
      if (sum === undefined) byValue.set(value, { queued, active });
      else {
        sum.queued += queued;
        sum.active += active;
      }
      restQueued -= queued;
      restActive -= active;
    }
    for (const [value, sum] of byValue) {
      const attributes = keys.forValue(value).common;
      result.observe(gauges.queued, sum.queued, attributes);
      result.observe(gauges.active, sum.active, attributes);
    }
    result.observe(gauges.queued, Math.max(0, restQueued), keys.none.common);
    result.observe(gauges.active, Math.max(0, restActive), keys.none.common);
  }, unlisten);
}
