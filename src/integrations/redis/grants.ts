/**
 * The waiting half of a Redis limiter: waiters holding a grant time, in a heap ordered by (grant
 * time, arrival), with ONE timer armed for the head and none when nothing waits.
 *
 * @module
 */
import { type Clock, MAX_TIMER_DELAY, type TimerHandle } from "../../clock.ts";
import { TimerHeap } from "./heap.ts";
import type { Waiter } from "./waiter.ts";

/**
 * Waiters with grant times and the one timer that grants them. @internal
 *
 * @example
 * ```ts
 * const grants = new GrantTimer(clock, (waiters) => waiters.forEach((w) => w.resolve()));
 * grants.push(waiter); // granted when the clock reaches waiter.grantAt
 * ```
 */
export class GrantTimer {
  readonly #clock: Clock;
  readonly #onGrant: (waiters: readonly Waiter[]) => void;
  readonly #heap = new TimerHeap<Waiter>();
  #timer: TimerHandle | undefined = undefined;
  #timerAt = Infinity;

  /** `onGrant` receives the waiters whose time has come, in grant order, already removed. */
  constructor(clock: Clock, onGrant: (waiters: readonly Waiter[]) => void) {
    this.#clock = clock;
    this.#onGrant = onGrant;
  }

  /** Waiters holding a grant time. */
  get size(): number {
    return this.#heap.size;
  }

  /** True while the timer is armed (only while waiters hold grant times). */
  get armed(): boolean {
    return this.#timer !== undefined;
  }

  /** Every waiter, in no particular order. */
  items(): readonly Waiter[] {
    return this.#heap.items();
  }

  /** Adds a waiter with its `grantAt` set. */
  push(waiter: Waiter): void {
    this.#heap.push(waiter);
    this.#arm();
  }

  /** Removes a waiter (aborted, or given back before its time). */
  remove(waiter: Waiter): void {
    this.#heap.remove(waiter);
    this.#arm();
  }

  #arm(): void {
    const head = this.#heap.peek();
    const at = head === undefined ? Infinity : head.grantAt;
    if (at === this.#timerAt && this.#timer !== undefined) return;
    if (this.#timer !== undefined) {
      this.#clock.clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    this.#timerAt = at;
    if (at === Infinity) return;
    const delay = Math.min(MAX_TIMER_DELAY, Math.max(0, Math.ceil(at - this.#clock.now())));
    this.#timer = this.#clock.setTimeout(this.#onTimer, delay);
  }

  readonly #onTimer = (): void => {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = this.#clock.now();
    let granted: Waiter[] | undefined;
    for (let head = this.#heap.peek(); head !== undefined && head.grantAt <= now; head = this.#heap.peek()) {
      this.#heap.pop();
      (granted ??= []).push(head);
    }
    this.#arm();
    if (granted !== undefined) this.#onGrant(granted);
  };
}
