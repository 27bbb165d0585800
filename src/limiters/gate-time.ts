/**
 * Gate time: the clock's time as every limiter on that clock sees it. It never goes backwards and
 * never stalls: when the clock steps back (an NTP correction, a VM resumed), gate time carries on from
 * where it was at the clock's pace, through an offset kept per clock. Clamping instead (time frozen
 * until the clock catches up) would stop every grant for the length of the step and re-arm a timer
 * each time one fires early. A step back mints nothing, since gate time only moves forward; the time
 * really waited still counts, since gate time keeps moving with the clock.
 *
 * One state per clock object, shared by all its gates, so limiters combined later agree on the time.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { describeValue } from "../validate.ts";

/**
 * The gate time of one clock, shared by every gate on that clock (see {@link timeOf}).
 *
 * @example
 * ```ts
 * const time = timeOf(clock);
 * const now = time.now();
 * ```
 */
export class GateTime {
  readonly #clock: Clock;
  #offset = 0;
  #last = -Infinity;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /**
   * The current gate time.
   * @throws {TypeError} when `clock.now()` returns anything but a finite number
   */
  now(): number {
    const raw = this.#clock.now();
    if (typeof raw !== "number" || !Number.isFinite(raw)) {
      throw new TypeError(`\`clock.now()\` must return a finite number, got ${describeValue(raw)}`);
    }
    const t = raw + this.#offset;
    if (t >= this.#last) return (this.#last = t);
    this.#offset = this.#last - raw; // stepped back: resume from where gate time was
    return this.#last;
  }

  /**
   * Gate time, moved up to `atLeast` if it is behind: a timer armed for that time has fired, which
   * proves the time has passed even if the clock stepped back meanwhile (else the gate would lose the
   * time between its last reading and the step, and re-arm for it).
   */
  atLeast(atLeast: number): number {
    const t = this.now();
    if (t >= atLeast) return t;
    this.#offset += atLeast - t;
    return (this.#last = atLeast);
  }
}

const times = new WeakMap<Clock, GateTime>();

/**
 * The gate time of `clock`, one per clock object, so limiters combined later agree on the time.
 *
 * @example
 * ```ts
 * timeOf(clock) === timeOf(clock); // true
 * ```
 */
export function timeOf(clock: Clock): GateTime {
  let time = times.get(clock);
  if (time === undefined) times.set(clock, (time = new GateTime(clock)));
  return time;
}
