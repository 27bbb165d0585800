/**
 * What a simulated server decides about one request, and the rate-limit headers it sends about it.
 * Shared by every model in this folder, so a test can swap algorithms and keep its assertions.
 *
 * @module
 */
import { describeValue } from "../validate.ts";

/**
 * Header families a model can send. An empty list sends none at all.
 *
 * @example
 * ```ts
 * new TokenBucketServer({ limit: 10, headers: ["ietf", "retry-after"] });
 * ```
 */
export type HeaderStyle =
  /** `RateLimit-Policy: "default";q=10;w=1` and `RateLimit: "default";r=3;t=1` (draft-ietf-httpapi-ratelimit-headers-10). */
  | "ietf"
  /** `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (delta seconds, or epoch seconds with `epochMs`). */
  | "x-ratelimit"
  /** `Retry-After: <seconds>` on refusals (RFC 9110 delay-seconds, rounded up so it is never early). */
  | "retry-after";

/**
 * Options every model shares: which headers to send and what a refusal looks like.
 *
 * @example
 * ```ts
 * new SlidingLogServer({ limit: 10, headers: ["x-ratelimit"], epochMs: Date.UTC(2026, 0, 1), status: 503 });
 * ```
 */
export interface HeaderOptions {
  /** Header families to send; `[]` for none. @default ["retry-after"] */
  headers?: readonly HeaderStyle[];
  /** The policy name in the IETF headers. @default "default" */
  policy?: string;
  /** With `"x-ratelimit"`: send `X-RateLimit-Reset` as epoch seconds, `now = 0` being this epoch ms. @default delta seconds */
  epochMs?: number;
  /** The status of a refusal. @default 429 */
  status?: number;
}

/**
 * One decision. `remaining`, `limit`, `resetMs` and `windowMs` describe the quota after the decision,
 * as the headers report it.
 *
 * @example
 * ```ts
 * import { TokenBucketServer } from "sluice/testing";
 * const server = new TokenBucketServer({ limit: 1, interval: 1000 });
 * server.decide(0);                    // { allowed: true, status: 200, ... }
 * server.decide(10).retryAfterMs;      // 990: the exact wait before the same request would pass
 * ```
 */
export interface Decision {
  /** True when the server serves the request (possibly after `delayMs`). */
  readonly allowed: boolean;
  /** 200 when allowed, else the model's refusal status (429 unless configured; nginx's default is 503). */
  readonly status: number;
  /** How long the server holds an allowed request before serving it (nginx `limit_req` without `nodelay`), ms. */
  readonly delayMs: number;
  /**
   * On a refusal: the exact ms until the same request would be allowed under the limit in force now
   * (`Infinity`: never, it is too large for it). A scheduled change (`changes`) that falls inside the
   * wait is not foreseen: after a step down the wait can be longer, after a step up shorter (red-team).
   */
  readonly retryAfterMs: number | undefined;
  /** The quota's size in cost units. */
  readonly limit: number;
  /** Whole units left after this decision (0 while the model is in debt). */
  readonly remaining: number;
  /** Ms until the quota resets (the model defines "reset"; each documents its meaning). */
  readonly resetMs: number;
  /** The policy's window in ms (`w` in `RateLimit-Policy`). */
  readonly windowMs: number;
  /** The response headers this decision carries, lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * A rate-limited server as a pure state machine: time is an argument, never read from a clock, and
 * nothing happens between calls. Calls must come in non-decreasing `now`.
 *
 * @example
 * ```ts
 * import { SlidingLogServer, type ServerModel } from "sluice/testing";
 * const model: ServerModel = new SlidingLogServer({ limit: 2, interval: 1000 });
 * [0, 1, 2].map((t) => model.decide(t).allowed); // [true, true, false]
 * ```
 */
export interface ServerModel {
  /** Decides a request of `cost` units (default 1) arriving at `now` ms; an allowed one is charged. */
  decide(now: number, cost?: number): Decision;
}

/**
 * A model whose requests can be charged after the fact (tokens metered when the response completes).
 *
 * @example
 * ```ts
 * const tokens: MeteredModel = new TokenBucketServer({ limit: 1000, interval: 60_000 });
 * tokens.decide(0, 500);     // reserve an estimate
 * tokens.charge(2000, -380); // settle: only 120 were used
 * ```
 */
export interface MeteredModel extends ServerModel {
  /** Charges `amount` more units at `now` (negative refunds); the model may go into debt. */
  charge(now: number, amount: number): void;
}

/** The snapshot a model hands to {@link decision}. @internal */
export interface QuotaState {
  readonly allowed: boolean;
  readonly delayMs?: number;
  readonly retryAfterMs?: number;
  readonly limit: number;
  readonly remaining: number;
  readonly resetMs: number;
  readonly windowMs: number;
}

/** Validated header options. @internal */
export interface ResolvedHeaders {
  readonly styles: ReadonlySet<HeaderStyle>;
  readonly policy: string;
  readonly epochMs: number | undefined;
  readonly status: number;
}

const STYLES: readonly HeaderStyle[] = ["ietf", "x-ratelimit", "retry-after"];

/** Checks the shared header options. @internal */
export function resolveHeaders(o: HeaderOptions): ResolvedHeaders {
  const list = o.headers ?? ["retry-after"];
  if (!Array.isArray(list)) throw new TypeError(`\`headers\` must be an array of header styles, got ${describeValue(list)}`);
  for (const style of list) {
    if (!STYLES.includes(style)) throw new RangeError(`\`headers\` entries must be one of ${STYLES.join(", ")}, got ${describeValue(style)}`);
  }
  const policy = o.policy ?? "default";
  if (typeof policy !== "string" || !/^[\w.-]+$/.test(policy)) {
    throw new RangeError(`\`policy\` must be a name of letters, digits, '_', '.' or '-', got ${describeValue(policy)}`);
  }
  const status = o.status ?? 429;
  if (!Number.isInteger(status) || status < 400 || status > 599) {
    throw new RangeError(`\`status\` must be an HTTP error status (400–599), got ${describeValue(status)}`);
  }
  if (o.epochMs !== undefined && !Number.isFinite(o.epochMs)) {
    throw new RangeError(`\`epochMs\` must be a finite number, got ${describeValue(o.epochMs)}`);
  }
  return { styles: new Set(list), policy, epochMs: o.epochMs, status };
}

/** Whole seconds, rounded up: a client that obeys a header is never early. @internal */
export const ceilSeconds = (ms: number): number => Math.max(0, Math.ceil(ms / 1000 - 1e-9));

/** Builds the decision and its headers. @internal */
export function decision(h: ResolvedHeaders, now: number, q: QuotaState): Decision {
  const headers: Record<string, string> = {};
  const remaining = Math.max(0, Math.floor(q.remaining));
  if (h.styles.has("ietf")) {
    headers["ratelimit-policy"] = `"${h.policy}";q=${q.limit};w=${Math.max(1, ceilSeconds(q.windowMs))}`;
    headers["ratelimit"] = `"${h.policy}";r=${remaining};t=${ceilSeconds(q.resetMs)}`;
  }
  if (h.styles.has("x-ratelimit")) {
    headers["x-ratelimit-limit"] = String(q.limit);
    headers["x-ratelimit-remaining"] = String(remaining);
    headers["x-ratelimit-reset"] = String(
      h.epochMs === undefined ? ceilSeconds(q.resetMs) : ceilSeconds(h.epochMs + now + q.resetMs),
    );
  }
  const retryAfterMs = q.allowed ? undefined : q.retryAfterMs ?? Infinity;
  if (h.styles.has("retry-after") && retryAfterMs !== undefined && Number.isFinite(retryAfterMs)) {
    headers["retry-after"] = String(ceilSeconds(retryAfterMs));
  }
  return {
    allowed: q.allowed,
    status: q.allowed ? 200 : h.status,
    delayMs: q.delayMs ?? 0,
    retryAfterMs,
    limit: q.limit,
    remaining,
    resetMs: q.resetMs,
    windowMs: q.windowMs,
    headers,
  };
}

/**
 * A limit that steps up or down at a given time.
 *
 * @example
 * ```ts
 * new TokenBucketServer({ limit: 100, changes: [{ at: 60_000, limit: 50 }, { at: 120_000, limit: 200 }] });
 * ```
 */
export interface LimitChange {
  /** From this time (ms, same origin as `now`) on… */
  readonly at: number;
  /** …the limit is this. */
  readonly limit: number;
}

/** Validates a model's limit schedule: sorted by time, positive integer limits. @internal */
export function checkChanges(changes: readonly LimitChange[] | undefined): readonly LimitChange[] {
  if (changes === undefined) return [];
  if (!Array.isArray(changes)) throw new TypeError(`\`changes\` must be an array of { at, limit }, got ${describeValue(changes)}`);
  let last = -Infinity;
  changes.forEach((c, i) => {
    if (typeof c !== "object" || c === null || !Number.isFinite(c.at) || c.at < last) {
      throw new RangeError(`\`changes[${i}].at\` must be a finite time, in increasing order, got ${describeValue(c?.at)}`);
    }
    if (!Number.isSafeInteger(c.limit) || c.limit <= 0) {
      throw new RangeError(`\`changes[${i}].limit\` must be a positive integer, got ${describeValue(c.limit)}`);
    }
    last = c.at;
  });
  return changes;
}

/** The limit in force at `now`. @internal */
export function limitAt(base: number, changes: readonly LimitChange[], now: number): number {
  let limit = base;
  for (const c of changes) {
    if (c.at > now) break;
    limit = c.limit;
  }
  return limit;
}

/** Checks a decide() call's arguments. @internal */
export function checkCall(now: number, cost: number, last: number): void {
  if (typeof now !== "number" || !Number.isFinite(now)) throw new RangeError(`\`now\` must be a finite number, got ${describeValue(now)}`);
  if (now < last) throw new RangeError(`\`now\` must not go backwards (last ${last}), got ${now}`);
  if (!Number.isSafeInteger(cost) || cost <= 0) throw new RangeError(`\`cost\` must be a positive integer, got ${describeValue(cost)}`);
}
