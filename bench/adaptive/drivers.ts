/**
 * The clients of the "unknown limits" benchmark, each driving closed-loop callers (every caller
 * sends, awaits the answer, sends again) at one lane of a server for a fixed time, and recording
 * every answer the server gave — retries included — through the fetch it is handed.
 *
 * - `aws`: the AWS SDK's adaptive rate limiter (`DefaultRateLimiter` of `@smithy/util-retry`), used
 *   as the SDK's adaptive retry strategy uses it: `getSendToken()` before each send,
 *   `updateClientSendingRate()` after each answer (a 429 passed as a throttling error). A throttled
 *   request is retried after the SDK's throttling backoff (full jitter from 500 ms, at most 2 retries).
 *   It cannot be told a limit.
 * - `fixed`: today's sluice without adaptation, `createThrottledFetch({ limit, interval: 1000 })`.
 *   It needs a limit: it has no "told nothing" row.
 * - `adaptive`: `createThrottledFetch({ adaptive: true })`, told nothing, or `{ limit, interval,
 *   adaptive: true }` (the told limit a ceiling); retries (2 by default) re-enter the learned rate.
 *
 * @module
 */
import { DefaultRateLimiter } from "@smithy/util-retry";
import { createThrottledFetch } from "../../src/index.ts";

export interface Answer {
  /** ms since the scenario's start. */
  readonly at: number;
  readonly status: number;
}

/** Records every answer of one client (the throttled fetch's retries go through it too). */
export class Recorder {
  readonly answers: Answer[] = [];
  readonly #t0: number;
  constructor(t0: number) {
    this.#t0 = t0;
  }
  readonly fetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init);
    this.answers.push({ at: performance.now() - this.#t0, status: response.status });
    return response;
  };
}

export type ClientId = "aws" | "fixed" | "adaptive";

export interface DriveOptions {
  readonly url: string;
  readonly callers: number;
  readonly durationMs: number;
  /** The limit the client is told, requests per second; undefined for none. */
  readonly told: number | undefined;
  readonly recorder: Recorder;
  /** When the run ends (performance.now()). */
  readonly endAt: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function loop(o: DriveOptions, one: () => Promise<void>): Promise<void> {
  await Promise.all(Array.from({ length: o.callers }, async () => {
    while (performance.now() < o.endAt) await one();
  }));
}

/** Runs one client's callers until `endAt`. */
export async function drive(client: ClientId, o: DriveOptions): Promise<void> {
  const record = o.recorder.fetch;
  if (client === "aws") {
    const limiter = new DefaultRateLimiter();
    await loop(o, async () => {
      for (let attempt = 0; ; attempt++) {
        await limiter.getSendToken();
        const response = await record(o.url);
        await response.arrayBuffer();
        const throttled = response.status === 429 || response.status === 503;
        limiter.updateClientSendingRate(throttled ? { errorType: "THROTTLING" } : {});
        if (!throttled || attempt === 2 || performance.now() >= o.endAt) return;
        await sleep(Math.random() * Math.min(20_000, 500 * 2 ** attempt)); // the SDK's throttling backoff
      }
    });
    return;
  }
  if (client === "fixed") {
    if (o.told === undefined) throw new RangeError("the non-adaptive client needs a limit");
    const api = createThrottledFetch({ limit: o.told, interval: 1000, fetch: record });
    await loop(o, async () => {
      await (await api(o.url)).arrayBuffer();
    });
    return;
  }
  // The wiring users get: told nothing, or told a limit (the ceiling and the start).
  const api = createThrottledFetch({
    adaptive: true,
    ...(o.told !== undefined && { limit: o.told, interval: 1000 }),
    fetch: record,
  });
  await loop(o, async () => {
    await (await api(o.url)).arrayBuffer();
  });
}
