/**
 * Requests in flight per limiter, so that a quota the server reports can be read against them.
 *
 * A response's `remaining` is a snapshot taken when the server answered it. Every other request
 * this client has sent on the same limiter and not yet seen answered may still reach the server
 * after that snapshot and consume what it reports: with four callers, "remaining 2" while three
 * requests are in flight means one of them will be refused. So the quota counts as exhausted as
 * soon as `remaining` ≤ the *other* requests in flight — the client pauses until the reset before
 * any of its requests is refused. Counting every other request (not only those sent after this
 * one) is the safe side: one sent earlier may still arrive later.
 *
 * Not airtight: two answers read back to back, before either caller sends again, can each see the
 * same one request of room, and both callers send (pinned in `test/http/quota-in-flight.test.ts`).
 * Remembering the room per limiter until the reset closes that gap but, with resets in whole seconds
 * and snapshots read out of order, paused far more than it saved (tried and withdrawn 2026-11-27).
 *
 * Kept per limiter object in a WeakMap, so every throttled fetch (and `sluice/undici` interceptor)
 * sharing a limiter shares the count, and a forgotten limiter takes its count with it.
 *
 * @module
 */

const counts = new WeakMap<object, { n: number }>();

/** One request in flight on a limiter: `others()` while it lasts, `end()` when its answer (or failure) came. */
export interface InFlight {
  /** How many other requests on the same limiter are in flight now. */
  others(): number;
  /** Marks the request answered or failed; idempotent. */
  end(): void;
}

/**
 * Records a request sent through `limiter`.
 *
 * @example
 * ```ts
 * const flight = startFlight(limiter);
 * const response = await fetch(url);
 * const others = flight.others(); // read against the response's remaining quota
 * flight.end();
 * ```
 */
export function startFlight(limiter: object): InFlight {
  let count = counts.get(limiter);
  if (count === undefined) counts.set(limiter, (count = { n: 0 }));
  count.n++;
  return new Flight(count);
}

/** A class, not a literal with closures: one allocation per attempt. */
class Flight implements InFlight {
  readonly #shared: { n: number };
  #open = true;

  constructor(shared: { n: number }) {
    this.#shared = shared;
  }

  others(): number {
    return this.#shared.n - (this.#open ? 1 : 0);
  }

  end(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#shared.n--;
  }
}
