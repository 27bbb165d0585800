/**
 * A simulated OpenAI chat-completions API with its rate limits, faithful to what OpenAI documents
 * (sources in /work/shared/notes/vendors.md §2 and §4; each figure's source is beside it below):
 *
 * - **Two limits per model**: requests per minute (RPM) and tokens per minute (TPM), each a token
 *   bucket holding one minute's worth and refilling continuously. (OpenAI does not publish its
 *   algorithm; a bucket is what its headers describe: `x-ratelimit-reset-*` is "the time until the
 *   rate limit … resets to its initial state", i.e. until **full**, not until the next token.)
 * - **Charged up front**: a request counts against TPM as "the maximum of max_tokens and the
 *   estimated number of tokens based on the character count of your request" (rate-limits guide),
 *   here `max(max_tokens · n, ⌈chars / 4⌉)`. A request whose charge exceeds the TPM limit is refused
 *   outright, and retrying cannot help (`x-should-retry: false`).
 * - **Headers on every response**: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, the
 *   resets as Go durations (`"1s"`, `"6m0s"`, `"12ms"`); on a 429 also `retry-after-ms` and
 *   `retry-after` (which openai-node reads, in that order).
 * - **Usage in the response**: `usage.{prompt_tokens, completion_tokens, total_tokens}`, and in a
 *   stream (`stream: true`) a final chunk carrying it when `stream_options.include_usage` is set.
 *   Usage past the up-front charge (output without `max_tokens`) is counted when the response is
 *   delivered. Whether OpenAI gives back the unused part of the up-front charge is not documented:
 *   `refundUnused: true` makes the server settle to actual usage then.
 * - Error bodies have OpenAI's envelope (`{ error: { message, type, param, code } }`, code
 *   `rate_limit_exceeded`, type `requests` or `tokens`); the message texts only imitate OpenAI's.
 *
 * @module
 */
import { describeValue, keysOf, onlyKnown, optionsObject } from "../validate.ts";
import { SeededRandom } from "./random.ts";
import type { ServerContext, SimulatedReply, SimulatedServer } from "./server.ts";
import { TokenBucketServer } from "./token-bucket.ts";
import { completionBody, completionStream, errorBody, type Completion } from "./openai-bodies.ts";
import {
  contentText, DEFAULT_EPOCH_MS, estimateTokens, goDuration, httpDate, intField, json, perMinute, readJson, tokenCount,
} from "./vendor-format.ts";

/**
 * A model's limits, per minute.
 *
 * @example
 * ```ts
 * new OpenAISimulator({ models: { "gpt-4o": { rpm: 500, tpm: 30_000 } } });
 * ```
 */
export interface OpenAILimits {
  /** Requests per minute. */
  readonly rpm: number;
  /** Tokens per minute. */
  readonly tpm: number;
}

/**
 * What decides the length of a simulated completion.
 *
 * @example
 * ```ts
 * new OpenAISimulator({ completionTokens: ({ maxTokens }) => maxTokens ?? 100 }); // always the maximum
 * ```
 */
export interface CompletionContext {
  /** `max_completion_tokens` or `max_tokens` of the request, if set. */
  readonly maxTokens: number | undefined;
  /** The prompt's token estimate (characters / 4, rounded up). */
  readonly promptTokens: number;
  /** A seeded uniform [0, 1) draw. */
  readonly random: () => number;
}

/**
 * Options of {@link OpenAISimulator}.
 *
 * @example
 * ```ts
 * new OpenAISimulator({ defaultLimits: { rpm: 3, tpm: 40_000 }, refundUnused: true, seed: 7 });
 * ```
 */
export interface OpenAISimulatorOptions {
  /** Limits per model name; other models get `defaultLimits`. */
  models?: Readonly<Record<string, OpenAILimits>>;
  /**
   * Limits of a model not in `models`. The default is the sample in OpenAI's rate-limits guide
   * (`x-ratelimit-limit-requests: 60`, `x-ratelimit-limit-tokens: 150000`).
   * @default { rpm: 60, tpm: 150_000 }
   */
  defaultLimits?: OpenAILimits;
  /** Tokens one choice generates. @default uniform in [1, min(max_tokens, 256)] from `seed` */
  completionTokens?: (context: CompletionContext) => number;
  /** Settle the TPM charge down to the actual `total_tokens` when the response is delivered (usage past it is counted either way). @default false */
  refundUnused?: boolean;
  /** Wall-clock epoch ms of virtual `now = 0`, for `created` and the `Date` header. @default 2026-01-01T00:00:00Z */
  epochMs?: number;
  /** Seed of the completion lengths. @default 1 */
  seed?: number;
}

interface ModelBuckets {
  readonly limits: OpenAILimits;
  readonly requests: TokenBucketServer;
  readonly tokens: TokenBucketServer;
}

/**
 * A simulated OpenAI API: `POST …/chat/completions`, rate-limited per model. Use it through
 * {@link createSimulatedFetch}, or call {@link OpenAISimulator.chat} directly with a time and a body.
 *
 * @example
 * ```ts
 * import { createSimulatedFetch, ManualClock, OpenAISimulator } from "sluice/testing";
 * const clock = new ManualClock();
 * const openai = new OpenAISimulator({ models: { "gpt-4o-mini": { rpm: 500, tpm: 200_000 } } });
 * const fetch = createSimulatedFetch({ server: openai, clock, latency: { min: 200, max: 2000 } });
 * // give `fetch` to your client; after the run:
 * fetch.stats.byStatus[429]; // how many times your code overran the limits
 * ```
 */
export class OpenAISimulator implements SimulatedServer {
  readonly #models: Readonly<Record<string, OpenAILimits>>;
  readonly #default: OpenAILimits;
  readonly #buckets = new Map<string, ModelBuckets>();
  readonly #completionTokens: ((context: CompletionContext) => number) | undefined;
  readonly #refund: boolean;
  readonly #epoch: number;
  readonly #random: SeededRandom;
  #ids = 0;
  #requests = 0;

  /** Checks the options; a `RangeError`/`TypeError` names a bad one. */
  constructor(options: OpenAISimulatorOptions = {}) {
    const o = optionsObject("options", options);
    onlyKnown("OpenAISimulator", o, keysOf<OpenAISimulatorOptions>()("models", "defaultLimits", "completionTokens", "refundUnused", "epochMs", "seed"));
    this.#models = o.models ?? {};
    for (const [name, l] of Object.entries(this.#models)) checkLimits(`models.${name}`, l);
    this.#default = checkLimits("defaultLimits", o.defaultLimits ?? { rpm: 60, tpm: 150_000 });
    if (o.completionTokens !== undefined && typeof o.completionTokens !== "function") {
      throw new TypeError(`\`completionTokens\` must be a function, got ${describeValue(o.completionTokens)}`);
    }
    this.#completionTokens = o.completionTokens;
    if (o.refundUnused !== undefined && typeof o.refundUnused !== "boolean") {
      throw new TypeError(`\`refundUnused\` must be a boolean, got ${describeValue(o.refundUnused)}`);
    }
    this.#refund = o.refundUnused ?? false;
    this.#epoch = o.epochMs ?? DEFAULT_EPOCH_MS;
    this.#random = new SeededRandom(o.seed ?? 1);
  }

  #bucketsOf(model: string): ModelBuckets {
    let b = this.#buckets.get(model);
    if (b === undefined) {
      const limits = Object.hasOwn(this.#models, model) ? this.#models[model]! : this.#default;
      b = {
        limits,
        requests: new TokenBucketServer({ limit: limits.rpm, interval: 60_000, headers: [] }),
        tokens: new TokenBucketServer({ limit: limits.tpm, interval: 60_000, headers: [] }),
      };
      this.#buckets.set(model, b);
    }
    return b;
  }

  /** Whole requests and tokens a model has left at `now` (negative while in debt; headers show 0). */
  remaining(model: string, now: number): { requests: number; tokens: number } {
    const b = this.#bucketsOf(model);
    return { requests: b.requests.available(now), tokens: b.tokens.available(now) };
  }

  /** Answers an HTTP request arriving at `context.now` (see `SimulatedServer.handle`). */
  async handle(request: Request, { now }: ServerContext): Promise<SimulatedReply> {
    const url = new URL(request.url);
    if (request.method !== "POST" || !url.pathname.endsWith("/chat/completions")) {
      return json(404, errorBody(`Invalid URL (${request.method} ${url.pathname})`, "invalid_request_error", null), this.#base(now));
    }
    return this.chat(now, await readJson(request));
  }

  /** Decides one chat-completions request with body `body` at `now`: the pure core of {@link handle}. */
  chat(now: number, body: Record<string, unknown> | undefined): SimulatedReply {
    const base = this.#base(now);
    const model = body?.["model"];
    const messages = body?.["messages"];
    if (body === undefined || typeof model !== "string" || !Array.isArray(messages)) {
      return json(400, errorBody("The request needs a JSON body with `model` and `messages`.", "invalid_request_error", null), base);
    }
    const b = this.#bucketsOf(model);
    const promptTokens = estimateTokens(messages.map((m: { content?: unknown }) => contentText(m?.content)).join(""));
    const n = intField(body, "n") ?? 1;
    const maxTokens = intField(body, "max_completion_tokens") ?? intField(body, "max_tokens");
    const charge = Math.max((maxTokens ?? 0) * n, promptTokens);

    if (charge > b.limits.tpm) {
      const message = `Request too large for ${model} on tokens per min (TPM): Limit ${b.limits.tpm}, Requested ${charge}. The input or output tokens must be reduced in order to run successfully.`;
      return json(429, errorBody(message, "tokens", "rate_limit_exceeded"), { ...base, ...this.#limitHeaders(b, now), "x-should-retry": "false" });
    }
    const waitRequests = b.requests.waitFor(now, 1);
    const waitTokens = charge > 0 ? b.tokens.waitFor(now, charge) : 0;
    if (waitRequests > 0 || waitTokens > 0) {
      const wait = Math.max(waitRequests, waitTokens);
      const [what, unit, limit, left] = waitRequests > 0
        ? ["requests", "RPM", b.limits.rpm, b.requests.available(now)]
        : ["tokens", "TPM", b.limits.tpm, b.tokens.available(now)];
      const message = `Rate limit reached for ${model} on ${what} per min (${unit}): Limit ${limit}, Used ${limit - Math.max(0, left)}, Requested ${what === "requests" ? 1 : charge}. Please try again in ${goDuration(wait)}.`;
      return json(429, errorBody(message, what, "rate_limit_exceeded"), {
        ...base,
        ...this.#limitHeaders(b, now),
        "retry-after-ms": String(Math.ceil(wait - 1e-9)),
        "retry-after": String(Math.ceil(wait / 1000 - 1e-9)),
      });
    }
    b.requests.decide(now, 1);
    if (charge > 0) b.tokens.decide(now, charge);

    const completion = this.#complete(now, model, n, maxTokens, promptTokens);
    const stream = body["stream"] === true;
    const includeUsage = (body["stream_options"] as { include_usage?: unknown } | undefined)?.include_usage === true;
    const headers = { ...base, ...this.#limitHeaders(b, now) };
    // On delivery the server counts what the call used beyond its up-front charge (output past the
    // prompt's estimate when no `max_tokens` bounds it) — and, with `refundUnused`, gives back what
    // it did not use. (Without this, a call with no `max_tokens` was never charged its output:
    // 4× the TPM passed without a 429; red-team, 2026-11-27.)
    const extra = completion.usage.total_tokens - charge;
    const settle = this.#refund || extra > 0
      ? (at: number) => b.tokens.charge(Math.max(at, now), this.#refund ? extra : Math.max(0, extra))
      : undefined;
    const reply: SimulatedReply = stream
      ? { status: 200, headers: { ...headers, "content-type": "text/event-stream" }, body: completionStream(completion, includeUsage) }
      : json(200, completionBody(completion), headers);
    return settle === undefined ? reply : { ...reply, onDelivered: settle };
  }

  #complete(now: number, model: string, n: number, maxTokens: number | undefined, promptTokens: number): Completion {
    const cap = Math.min(maxTokens ?? 256, 256);
    const choices = Array.from({ length: n }, () => {
      const drawn = this.#completionTokens === undefined
        ? (cap === 0 ? 0 : this.#random.int(1, cap))
        : tokenCount("completionTokens", this.#completionTokens({ maxTokens, promptTokens, random: () => this.#random.next() }));
      const tokens = maxTokens === undefined ? drawn : Math.min(drawn, maxTokens);
      return { tokens, finish: maxTokens !== undefined && tokens === maxTokens ? "length" as const : "stop" as const };
    });
    const completionTokens = choices.reduce((sum, c) => sum + c.tokens, 0);
    return {
      id: `chatcmpl-sim${++this.#ids}`,
      created: Math.floor((this.#epoch + now) / 1000),
      model,
      choices,
      usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
    };
  }

  #base(now: number): Record<string, string> {
    return { date: httpDate(this.#epoch + now), "x-request-id": `req_sim${++this.#requests}` };
  }

  #limitHeaders(b: ModelBuckets, now: number): Record<string, string> {
    return {
      "x-ratelimit-limit-requests": String(b.limits.rpm),
      "x-ratelimit-limit-tokens": String(b.limits.tpm),
      "x-ratelimit-remaining-requests": String(Math.max(0, b.requests.available(now))),
      "x-ratelimit-remaining-tokens": String(Math.max(0, b.tokens.available(now))),
      "x-ratelimit-reset-requests": goDuration(b.requests.timeToFull(now)),
      "x-ratelimit-reset-tokens": goDuration(b.tokens.timeToFull(now)),
    };
  }
}

function checkLimits(name: string, l: OpenAILimits): OpenAILimits {
  if (typeof l !== "object" || l === null) throw new TypeError(`\`${name}\` must be { rpm, tpm }, got ${describeValue(l)}`);
  perMinute(`${name}.rpm`, l.rpm);
  perMinute(`${name}.tpm`, l.tpm);
  return l;
}
