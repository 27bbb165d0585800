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
  /** How many times the clock has been seen stepping back (a timer armed before one can tell). */
  steps = 0;

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
    this.steps++;
    return this.#last;
  }

  /**
   * Gate time, moved up to `atLeast` if it is behind. Only for a timer armed for that time that has
   * fired across a step back (see {@link GateTime.steps}): the time between the last reading and the
   * step is then unobservable, and the fire is the best evidence of it (else the gate would re-arm for
   * time already waited). Never for an ordinary fire: runtimes fire timers up to ~1 ms early (Node
   * rounds to its loop's cached ms), so taking every fire as proof would grant early and push gate
   * time ahead of the clock a little more each time.
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
