/**
 * Entry point `sluice/otel` (JSR `@sluice/sluice/otel`): OpenTelemetry metrics for sluice's limiters
 * and throttled fetch — requests granted, refused and aborted, time in the queue, callers queued and
 * in flight, pauses, throttling responses and retries — following the semantic conventions.
 *
 * `@opentelemetry/api` is an optional peer dependency and is never imported: you pass the `Meter`
 * (typed structurally, so any copy of the API ≥ 1.3 fits), and importing `sluice` never loads this
 * entry. Web-standard only: it runs wherever the limiters do.
 *
 * @example
 * ```ts
 * import { metrics } from "@opentelemetry/api";
 * import { createThrottledFetch, WindowLimiter } from "sluice";
 * import { instrumentLimiter, otelFetchHooks } from "sluice/otel";
 *
 * const meter = metrics.getMeter("my-service");
 * const limiter = new WindowLimiter({ limit: 5000, interval: 3_600_000, countFrom: "completion" });
 * instrumentLimiter(limiter, { meter, name: "github" });
 * const api = createThrottledFetch({ limiter, ...otelFetchHooks({ meter, name: "github" }) });
 * ```
 *
 * @module
 */
export * from "./integrations/otel/index.ts";
