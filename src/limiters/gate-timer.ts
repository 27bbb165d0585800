/**
 * The gate's clock and its one timer: reads gate time, arms a single timer for the earliest change
 * of the domain, and re-checks on firing. {@link Gate} extends it (a base class, not a field, so an
 * idle limiter — one per key — carries no extra object).
 *
 * Delays are capped at {@link MAX_TIMER_DELAY} and re-checked; the timer is armed only while waiters
 * exist, so an idle limiter keeps no process alive.
 *
 * @module
 */
import { type Clock, MAX_TIMER_DELAY, type TimerHandle } from "../clock.ts";
import { type GateTime, timeOf } from "./gate-time.ts";

/** The timing half of a {@link Gate}: gate time and the domain's one timer. */
export abstract class GateTimer {
  readonly clock: Clock;
  #timer: TimerHandle | undefined = undefined;
  #timerAt = Infinity;
  /** The gate time by which the armed timer fires (≤ `#timerAt` when a long delay is capped). */
  #timerDue = -Infinity;
  /** The clock's step-back count when the timer was armed. */
  #armedSteps = 0;

  readonly #time: GateTime;

  constructor(clock: Clock) {
    this.clock = clock;
    this.#time = timeOf(clock);
  }

  /** Runs the grant rule at `at` (or now) and re-arms: what the timer does when it fires. */
  abstract scan(at?: number): void;

  /** Rejects every waiter of the domain with `error`: the clock failed where nobody can catch it. */
  protected abstract failAll(error: unknown): void;

  /**
   * Gate time (see `gate-time.ts`): never backwards, never stalled by a clock stepping back.
   * @throws {TypeError} when `clock.now()` returns anything but a finite number
   */
  now(): number {
    return this.#time.now();
  }

  /**
   * Gate time where nobody can catch a throw (a timer, a task's completion, an abort listener): a
   * clock that fails rejects every waiter of the domain with its error instead, since none of them
   * can be timed any more; `undefined` then.
   */
  protected nowOrFail(): number | undefined {
    try {
      return this.#time.now();
    } catch (error) {
      this.failAll(error);
      return undefined;
    }
  }

  /** The time the armed timer is for (`Infinity` when none is armed). */
  protected get timerAt(): number {
    return this.#timerAt;
  }

  /** Serves the waiters already due when the timer is overdue, before a newcomer is considered. */
  serveOverdue(now: number): void {
    if (this.#timerAt <= now) this.scan(now);
  }

  /** True while the gate has a timer armed (only while waiters exist). */
  get hasTimer(): boolean {
    return this.#timer !== undefined;
  }

  protected arm(wake: number, now: number): void {
    if (wake === this.#timerAt && this.#timer !== undefined) return;
    if (this.#timer !== undefined) {
      this.clock.clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    this.#timerAt = wake;
    if (wake === Infinity) return;
    const delay = Math.min(MAX_TIMER_DELAY, Math.max(0, wake - now));
    this.#timerDue = now + delay;
    this.#armedSteps = this.#time.steps;
    this.#timer = this.clock.setTimeout(this.#onTimer, delay);
  }

  readonly #onTimer = (): void => {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    let now: number;
    try {
      // The clock's reading; an early fire just re-arms. Only across a step back is the fire itself
      // taken as proof that its time has passed (see GateTime.atLeast).
      now = this.#time.now();
      if (this.#time.steps !== this.#armedSteps) now = this.#time.atLeast(this.#timerDue);
    } catch (error) {
      this.failAll(error);
      return;
    }
    this.scan(now);
  };
}
