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

interface ClockState {
  offset: number;
  last: number;
}
const states = new WeakMap<Clock, ClockState>();

/**
 * The current gate time of `clock`.
 * @throws {TypeError} when `clock.now()` returns anything but a finite number
 *
 * @example
 * ```ts
 * const t = gateTime(new ManualClock(5)); // 5
 * ```
 */
export function gateTime(clock: Clock): number {
  const raw = clock.now();
  if (typeof raw !== "number" || !Number.isFinite(raw)) {
    throw new TypeError(`\`clock.now()\` must return a finite number, got ${describeValue(raw)}`);
  }
  let state = states.get(clock);
  if (state === undefined) {
    states.set(clock, (state = { offset: 0, last: raw }));
    return raw;
  }
  const t = raw + state.offset;
  if (t >= state.last) return (state.last = t);
  state.offset = state.last - raw; // stepped back: resume from where gate time was
  return state.last;
}

/**
 * Gate time of `clock`, moved up to `atLeast` if it is behind: a timer armed for that time has fired,
 * which proves the time has passed even if the clock stepped back meanwhile (else the gate would
 * lose the time between its last reading and the step, and re-arm for it).
 *
 * @example
 * ```ts
 * gateTimeAtLeast(clock, timerDueAt);
 * ```
 */
export function gateTimeAtLeast(clock: Clock, atLeast: number): number {
  const t = gateTime(clock);
  if (t >= atLeast) return t;
  const state = states.get(clock)!;
  state.offset += atLeast - t;
  return (state.last = atLeast);
}
