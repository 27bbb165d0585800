/**
 * A scripted fetch for unit tests in virtual time: each call is answered by the next handler, and
 * recorded with the virtual time it was made and the body it carried.
 */
import type { ManualClock } from "../../../src/clock.ts";

export interface RecordedCall {
  at: number;
  method: string;
  url: string;
  headers: Headers;
  body: string;
  signal: AbortSignal | null;
}

/** Answers one call: a Response, a thrown error, or "hang" (never answers until aborted). */
export type Handler = (call: RecordedCall) => Response | Promise<Response> | "hang";

export class StubFetch {
  readonly calls: RecordedCall[] = [];
  readonly #clock: ManualClock;
  readonly #handlers: Handler[] = [];
  #fallback: Handler;
  /** Responses handed out, so tests can check that discarded bodies were cancelled. */
  readonly responses: Response[] = [];

  constructor(clock: ManualClock, fallback: Handler = () => new Response("ok")) {
    this.#clock = clock;
    this.#fallback = fallback;
  }

  /** Queues handlers for the next calls, in order. */
  then(...handlers: Handler[]): this {
    this.#handlers.push(...handlers);
    return this;
  }

  /** The handler for calls after the queue is empty. */
  otherwise(handler: Handler): this {
    this.#fallback = handler;
    return this;
  }

  get times(): number[] {
    return this.calls.map((c) => c.at);
  }

  readonly fetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const at = this.#clock.now();
    const body = request.body === null ? "" : await request.text();
    const call: RecordedCall = {
      at, method: request.method, url: request.url, headers: request.headers, body, signal: init?.signal ?? null,
    };
    this.calls.push(call);
    const signal = init?.signal ?? undefined;
    if (signal?.aborted) throw signal.reason;
    const handler = this.#handlers.shift() ?? this.#fallback;
    const answer = handler(call);
    const response = answer === "hang"
      ? await new Promise<Response>((_, reject) => {
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
      })
      : await answer;
    this.responses.push(response);
    return response;
  };
}

/** A response with `status` and headers. */
export function reply(status: number, headers: Record<string, string> = {}, body: string | null = null): Response {
  return new Response(status === 204 || status === 304 ? null : body ?? `status ${status}`, { status, headers });
}

/** Lets pending promise chains run (a few macrotask turns). */
export async function flush(turns = 10): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * Awaits `promise` while firing the clock's timers whenever the code under test is waiting on one:
 * for code whose next step depends on real I/O (msw, sockets) as well as virtual time.
 */
export async function settle<T>(clock: ManualClock, promise: Promise<T>): Promise<T> {
  let done = false;
  const watched = promise.finally(() => {
    done = true;
  });
  watched.catch(() => {});
  for (let spins = 0; !done; spins++) {
    if (spins > 10_000) throw new Error("settle(): the promise neither settled nor armed a timer");
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (!done && clock.pendingTimers > 0) await clock.advanceTo(clock.nextTimerAt!);
  }
  return promise;
}
