/**
 * A simulated Anthropic Messages API with its rate limits (sources: /work/shared/notes/vendors.md
 * §2 and §4):
 *
 * - **Three independent token buckets**, continuous refill, each holding one minute's worth:
 *   requests per minute (RPM), input tokens per minute (ITPM) and output tokens per minute (OTPM).
 * - **Headers on every answer**: `anthropic-ratelimit-{requests,input-tokens,output-tokens,tokens}-
 *   {limit,remaining,reset}`, resets as RFC 3339 times (rounded up to the second) at which the bucket
 *   is full again; `-tokens-*` repeats the most restrictive of the input and output limits. A 429
 *   carries `retry-after` in seconds and a `rate_limit_error` body (`{ type: "error", error: { type,
 *   message } }`; the message text only imitates Anthropic's).
 * - **Output charge**: by default OTPM is estimated from `max_tokens` at the start and settled to the
 *   actual `output_tokens` when the response is delivered (from memory of Anthropic's docs —
 *   **unverified**); `outputCharge: "actual"` charges only actual output, on delivery (what the
 *   token-throttle project reports). The input charge is the simulator's ⌈chars / 4⌉ estimate.
 * - **Streaming** (`stream: true`): server-sent events, the final output usage in `message_delta`.
 * - **529 `overloaded_error`** on demand ({@link AnthropicSimulator.overload}): not a quota, so it
 *   charges nothing and carries no rate-limit headers.
 *
 * @module
 */
import { describeValue, keysOf, onlyKnown, optionsObject } from "../validate.ts";
import { anthropicModelClass } from "../vendors/anthropic-models.ts";
import { SeededRandom } from "./random.ts";
import type { ServerContext, SimulatedReply, SimulatedServer } from "./server.ts";
import { TokenBucketServer } from "./token-bucket.ts";
import {
  contentText, DEFAULT_EPOCH_MS, estimateTokens, httpDate, intField, json, perMinute, readJson, rfc3339, tokenCount,
} from "./vendor-format.ts";

/**
 * Per-minute limits.
 *
 * @example
 * ```ts
 * new AnthropicSimulator({ limits: { rpm: 50, inputTpm: 30_000, outputTpm: 8_000 } });
 * ```
 */
export interface AnthropicLimits {
  /** Requests per minute. */
  readonly rpm: number;
  /** Input tokens per minute. */
  readonly inputTpm: number;
  /** Output tokens per minute. */
  readonly outputTpm: number;
}

/**
 * Options of {@link AnthropicSimulator}.
 *
 * @example
 * ```ts
 * new AnthropicSimulator({ outputCharge: "actual", outputTokens: ({ maxTokens }) => maxTokens });
 * ```
 */
export interface AnthropicSimulatorOptions {
  /**
   * The organization's limits, for each model class (Anthropic applies them per model, a family's
   * versions pooled: see `modelClass`). The default is Anthropic's published Tier 1 figures for a
   * Sonnet model when this was written; set yours.
   * @default { rpm: 50, inputTpm: 30_000, outputTpm: 8_000 }
   */
  limits?: AnthropicLimits;
  /** The budget a model draws from: models that map to one name share it. @default anthropicModelClass (from `sluice/vendors`) */
  modelClass?: (model: string) => string;
  /** When OTPM is charged: `"max_tokens"` up front then settled to actual, or only `"actual"` on delivery. @default "max_tokens" */
  outputCharge?: "max_tokens" | "actual";
  /** Output tokens of a response. @default uniform in [1, min(max_tokens, 256)] from `seed` */
  outputTokens?: (context: { maxTokens: number; inputTokens: number; random: () => number }) => number;
  /** Wall-clock epoch ms of virtual `now = 0`, for the resets and the `Date` header. @default 2026-01-01T00:00:00Z */
  epochMs?: number;
  /** Seed of the output lengths. @default 1 */
  seed?: number;
}

type Bucket = "requests" | "input-tokens" | "output-tokens";

/**
 * A simulated Anthropic API: `POST …/v1/messages`. Use it through {@link createSimulatedFetch}, or
 * call {@link AnthropicSimulator.messages} with a time and a body.
 *
 * @example
 * ```ts
 * import { AnthropicSimulator, createSimulatedFetch, ManualClock } from "sluice/testing";
 * const clock = new ManualClock();
 * const anthropic = new AnthropicSimulator({ limits: { rpm: 50, inputTpm: 30_000, outputTpm: 8_000 } });
 * anthropic.overload(0, 5_000); // answer 529 overloaded_error for the first 5 s
 * const fetch = createSimulatedFetch({ server: anthropic, clock, latency: { min: 300, max: 3000 } });
 * ```
 */
export class AnthropicSimulator implements SimulatedServer {
  readonly #limits: AnthropicLimits;
  readonly #buckets = new Map<string, Record<Bucket, TokenBucketServer>>();
  readonly #modelClass: (model: string) => string;
  readonly #outputCharge: "max_tokens" | "actual";
  readonly #outputTokens: AnthropicSimulatorOptions["outputTokens"];
  readonly #epoch: number;
  readonly #random: SeededRandom;
  #overloads: { from: number; until: number }[] = [];
  #ids = 0;

  /** Checks the options; a `RangeError`/`TypeError` names a bad one. */
  constructor(options: AnthropicSimulatorOptions = {}) {
    const o = optionsObject("options", options);
    onlyKnown("AnthropicSimulator", o, keysOf<AnthropicSimulatorOptions>()("limits", "modelClass", "outputCharge", "outputTokens", "epochMs", "seed"));
    const l = o.limits ?? { rpm: 50, inputTpm: 30_000, outputTpm: 8_000 };
    if (typeof l !== "object" || l === null) throw new TypeError(`\`limits\` must be { rpm, inputTpm, outputTpm }, got ${describeValue(l)}`);
    this.#limits = { rpm: perMinute("limits.rpm", l.rpm), inputTpm: perMinute("limits.inputTpm", l.inputTpm), outputTpm: perMinute("limits.outputTpm", l.outputTpm) };
    if (o.modelClass !== undefined && typeof o.modelClass !== "function") {
      throw new TypeError(`\`modelClass\` must be a function, got ${describeValue(o.modelClass)}`);
    }
    this.#modelClass = o.modelClass ?? anthropicModelClass;
    const charge = o.outputCharge ?? "max_tokens";
    if (charge !== "max_tokens" && charge !== "actual") throw new RangeError(`\`outputCharge\` must be "max_tokens" or "actual", got ${describeValue(charge)}`);
    this.#outputCharge = charge;
    if (o.outputTokens !== undefined && typeof o.outputTokens !== "function") {
      throw new TypeError(`\`outputTokens\` must be a function, got ${describeValue(o.outputTokens)}`);
    }
    this.#outputTokens = o.outputTokens;
    this.#epoch = o.epochMs ?? DEFAULT_EPOCH_MS;
    this.#random = new SeededRandom(o.seed ?? 1);
  }

  /** Answers every request arriving in `[from, until)` with 529 `overloaded_error`. */
  overload(from: number, until: number): void {
    if (!Number.isFinite(from) || !(until > from)) throw new RangeError(`\`until\` must be a time after \`from\` (${from}), got ${describeValue(until)}`);
    this.#overloads.push({ from, until });
  }

  /** Answers an HTTP request arriving at `context.now` (see `SimulatedServer.handle`). */
  async handle(request: Request, { now }: ServerContext): Promise<SimulatedReply> {
    const url = new URL(request.url);
    if (request.method !== "POST" || !url.pathname.endsWith("/messages")) {
      return json(404, errorBody("not_found_error", "Not found"), this.#base(now));
    }
    return this.messages(now, await readJson(request));
  }

  /** Decides one Messages request with body `body` at `now`: the pure core of {@link handle}. */
  messages(now: number, body: Record<string, unknown> | undefined): SimulatedReply {
    const base = this.#base(now);
    if (this.#overloads.some((o) => o.from <= now && now < o.until)) {
      return { ...json(529, errorBody("overloaded_error", "Overloaded"), base) };
    }
    const model = body?.["model"];
    const messages = body?.["messages"];
    const maxTokens = body === undefined ? undefined : intField(body, "max_tokens");
    if (body === undefined || typeof model !== "string" || !Array.isArray(messages) || maxTokens === undefined) {
      return json(400, errorBody("invalid_request_error", "model, messages and max_tokens are required"), base);
    }
    const system = contentText(body["system"]);
    const inputTokens = Math.max(1, estimateTokens(system + messages.map((m: { content?: unknown }) => contentText(m?.content)).join("")));
    const reserveOutput = this.#outputCharge === "max_tokens" ? maxTokens : 0;
    const buckets = this.#bucketsOf(model);
    const waits: [Bucket, number][] = [
      ["requests", buckets.requests.waitFor(now, 1)],
      ["input-tokens", buckets["input-tokens"].waitFor(now, inputTokens)],
      // With "actual" output charging, a bucket in debt still blocks until it is repaid.
      ["output-tokens", buckets["output-tokens"].waitFor(now, Math.max(1, reserveOutput))],
    ];
    const blocked = waits.filter(([, w]) => w > 0);
    if (blocked.length > 0) {
      const wait = Math.max(...blocked.map(([, w]) => w));
      const [what] = blocked[0]!;
      const limit = what === "requests" ? this.#limits.rpm : what === "input-tokens" ? this.#limits.inputTpm : this.#limits.outputTpm;
      const message = `This request would exceed your organization's rate limit of ${limit} ${what.replace("-", " ")} per minute.`;
      const headers = { ...base, ...this.#limitHeaders(buckets, now) };
      if (Number.isFinite(wait)) headers["retry-after"] = String(Math.ceil(wait / 1000 - 1e-9));
      return json(429, errorBody("rate_limit_error", message), headers);
    }
    buckets.requests.decide(now, 1);
    buckets["input-tokens"].decide(now, inputTokens);
    if (reserveOutput > 0) buckets["output-tokens"].decide(now, reserveOutput);

    const cap = Math.min(maxTokens, 256);
    const outputTokens = this.#outputTokens === undefined
      ? (cap === 0 ? 0 : this.#random.int(1, cap))
      : Math.min(maxTokens, tokenCount("outputTokens", this.#outputTokens({ maxTokens, inputTokens, random: () => this.#random.next() })));
    const message = {
      id: `msg_sim${++this.#ids}`,
      type: "message",
      role: "assistant",
      model,
      content: [{ type: "text", text: "lore".repeat(outputTokens) }],
      stop_reason: outputTokens === maxTokens ? "max_tokens" : "end_turn",
      stop_sequence: null,
      usage: { input_tokens: inputTokens, output_tokens: outputTokens },
    };
    const headers = { ...base, ...this.#limitHeaders(buckets, now) };
    const reply: SimulatedReply = body["stream"] === true
      ? { status: 200, headers: { ...headers, "content-type": "text/event-stream" }, body: messageStream(message) }
      : json(200, message, headers);
    const settle = outputTokens - reserveOutput;
    return settle === 0 ? reply : { ...reply, onDelivered: (at) => buckets["output-tokens"].charge(Math.max(at, now), settle) };
  }

  #base(now: number): Record<string, string> {
    return { date: httpDate(this.#epoch + now), "request-id": `req_sim${now}_${this.#ids}` };
  }

  /** The buckets of `model`'s class, made on its first request. */
  #bucketsOf(model: string): Record<Bucket, TokenBucketServer> {
    const name = this.#modelClass(model);
    let buckets = this.#buckets.get(name);
    if (buckets === undefined) {
      const bucket = (limit: number) => new TokenBucketServer({ limit, interval: 60_000, headers: [] });
      buckets = { requests: bucket(this.#limits.rpm), "input-tokens": bucket(this.#limits.inputTpm), "output-tokens": bucket(this.#limits.outputTpm) };
      this.#buckets.set(name, buckets);
    }
    return buckets;
  }

  #limitHeaders(buckets: Record<Bucket, TokenBucketServer>, now: number): Record<string, string> {
    const headers: Record<string, string> = {};
    const state = (name: Bucket, limit: number) => {
      const b = buckets[name];
      const remaining = Math.max(0, b.available(now));
      headers[`anthropic-ratelimit-${name}-limit`] = String(limit);
      headers[`anthropic-ratelimit-${name}-remaining`] = String(remaining);
      headers[`anthropic-ratelimit-${name}-reset`] = rfc3339(this.#epoch + now + b.timeToFull(now));
      return { limit, remaining, reset: headers[`anthropic-ratelimit-${name}-reset`]! };
    };
    state("requests", this.#limits.rpm);
    const input = state("input-tokens", this.#limits.inputTpm);
    const output = state("output-tokens", this.#limits.outputTpm);
    // "-tokens-*" is the most restrictive limit in effect: the one with the fewest tokens left.
    const tight = output.remaining < input.remaining ? output : input;
    headers["anthropic-ratelimit-tokens-limit"] = String(tight.limit);
    headers["anthropic-ratelimit-tokens-remaining"] = String(tight.remaining);
    headers["anthropic-ratelimit-tokens-reset"] = tight.reset;
    return headers;
  }
}

/**
 * A message as Anthropic streams it: `message_start` (input usage), one text block, then
 * `message_delta` carrying the stop reason and the final output usage, and `message_stop`.
 */
function messageStream(m: { content: { text: string }[]; stop_reason: string; usage: { input_tokens: number; output_tokens: number } } & Record<string, unknown>): string {
  const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  return [
    event("message_start", { message: { ...m, content: [], stop_reason: null, usage: { input_tokens: m.usage.input_tokens, output_tokens: 1 } } }),
    event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
    event("content_block_delta", { index: 0, delta: { type: "text_delta", text: m.content[0]!.text } }),
    event("content_block_stop", { index: 0 }),
    event("message_delta", { delta: { stop_reason: m.stop_reason, stop_sequence: null }, usage: { output_tokens: m.usage.output_tokens } }),
    event("message_stop", {}),
  ].join("");
}

function errorBody(type: string, message: string): unknown {
  return { type: "error", error: { type, message } };
}
