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
 * Two things make that count race-free when responses come close together:
 * - Requests sent between a response's arrival and the moment it is read count too
 *   ({@link InFlight.others} after `end()`): they were sent without knowing this snapshot.
 * - When the snapshot leaves room (`remaining` > others), that room is remembered per limiter
 *   ({@link noteSpare}) and each later send takes one; the send that takes the last pauses the
 *   limiter until the reset ({@link InFlight.quotaOut}). Otherwise two responses read back to back
 *   could each see the same one request of room, and their two callers would both send.
 *
 * Kept per limiter object in a WeakMap, so every throttled fetch (and `sluice/undici` interceptor)
 * sharing a limiter shares the count, and a forgotten limiter takes its count with it.
 *
 * @module
 */

/** The count of one limiter. */
interface Shared {
  /** Requests in flight now. */
  n: number;
  /** Requests ever started: tells how many started since a moment. */
  starts: number;
  /** Sends a reported quota still has room for, until `until` (clock ms); Infinity: none known. */
  spare: number;
  until: number;
}

const counts = new WeakMap<object, Shared>();

function sharedOf(limiter: object): Shared {
  let count = counts.get(limiter);
  if (count === undefined) counts.set(limiter, (count = { n: 0, starts: 0, spare: Infinity, until: -Infinity }));
  return count;
}

/** One request in flight on a limiter: `others()` while it lasts, `end()` when its answer (or failure) came. */
export interface InFlight {
  /**
   * How many other requests on the same limiter may still consume the quota its answer reports:
   * those in flight now — or, once ended, those in flight when it ended plus those sent since.
   */
  others(): number;
  /** Marks the request answered or failed; idempotent. */
  end(): void;
  /**
   * ms to pause the limiter for, when this send took the last request of room a reported quota had
   * (see {@link noteSpare}): until that quota's reset. 0 otherwise.
   */
  readonly quotaOut: number;
}

/**
 * Records a request sent through `limiter` at `now` (clock ms).
 *
 * @example
 * ```ts
 * const flight = startFlight(limiter, clock.now());
 * if (flight.quotaOut > 0) limiter.pause(flight.quotaOut); // this send used the quota up
 * const response = await fetch(url);
 * flight.end();
 * const others = flight.others(); // read against the response's remaining quota
 * ```
 */
export function startFlight(limiter: object, now = 0): InFlight {
  const count = sharedOf(limiter);
  count.n++;
  count.starts++;
  let out = 0;
  if (count.spare !== Infinity) {
    if (now >= count.until) count.spare = Infinity;
    else if (--count.spare <= 0) {
      out = count.until - now;
      count.spare = Infinity;
    }
  }
  return new Flight(count, out);
}

/**
 * A response read at `now` left room for `spare` more sends (beyond the requests in flight) until
 * `until` (clock ms): the sends after it take that room one by one, and the last pauses the limiter
 * (see {@link InFlight.quotaOut}). A report for the same window as the one held (resets within
 * {@link sameWindow}) keeps the smaller room — an older snapshot read late shows more room than
 * is left — and the later reset; a report of another window (or a bucket that refilled past the
 * tolerance) replaces it.
 *
 * @example
 * ```ts
 * noteSpare(limiter, remaining - flight.others(), clock.now() + resetMs, clock.now());
 * ```
 */
export function noteSpare(limiter: object, spare: number, until: number, now: number): void {
  const count = sharedOf(limiter);
  if (count.spare === Infinity || now >= count.until) {
    count.spare = spare;
    count.until = until;
    return;
  }
  if (!sameWindow(count.until, until, now)) {
    count.spare = spare;
    count.until = until;
    return;
  }
  if (spare < count.spare) count.spare = spare;
  if (until > count.until) count.until = until;
}

/**
 * Two resets read at different moments name the same window when they differ by no more than the
 * jitter of reading them: 50 ms, plus 2 % of the time left (resets often come in whole seconds).
 */
function sameWindow(held: number, until: number, now: number): boolean {
  return Math.abs(until - held) <= 50 + 0.02 * Math.max(0, until - now);
}

/** A class, not a literal with closures: one allocation per attempt. */
class Flight implements InFlight {
  readonly #shared: Shared;
  readonly quotaOut: number;
  #open = true;
  /** When ended: the others in flight then, and the starts counted then. */
  #othersAtEnd = 0;
  #startsAtEnd = 0;

  constructor(shared: Shared, quotaOut: number) {
    this.#shared = shared;
    this.quotaOut = quotaOut;
  }

  others(): number {
    const shared = this.#shared;
    if (this.#open) return shared.n - 1;
    return this.#othersAtEnd + (shared.starts - this.#startsAtEnd);
  }

  end(): void {
    if (!this.#open) return;
    const shared = this.#shared;
    this.#othersAtEnd = shared.n - 1;
    this.#startsAtEnd = shared.starts;
    this.#open = false;
    shared.n--;
  }
}
