/**
 * One caller of a Redis limiter while it reserves and waits, and the fleet-unique reservation ids.
 *
 * @module
 */
import type { Permits } from "../../limiters/reservation.ts";
import type { Reservation } from "./batch.ts";
import type { HeapItem } from "./heap.ts";
import type { Reply } from "./store.ts";

let nextSeq = 0;

/** Where a waiter is: its reserve is out (or queued to go out), it holds a grant time, or it settled. */
export type State = "reserving" | "waiting" | "done";

/** One caller of `acquire`: its request, where it stands, and how to settle it. @internal */
export class Waiter implements HeapItem, Reservation {
  readonly permits: number;
  readonly seq = nextSeq++;
  readonly maxWait: number;
  readonly signal: AbortSignal | undefined;
  state: State = "reserving";
  id = "";
  /**
   * The queue's sequence number when the current reserve was requested: ordered against pauses
   * exactly, where two times in one millisecond would tie.
   */
  sentSeq = 0;
  /** True once the current reserve's call went out (only then may it execute and need a cancel). */
  sent = false;
  grantAt = 0;
  index = -1;
  resolve: () => void = noop;
  reject: (reason: unknown) => void = noop;
  onAbort: (() => void) | undefined = undefined;
  /** True for `reserve`: the grant becomes a reservation that settles. */
  readonly settles: boolean;
  /** Per policy, what a reservation asked per named dimension; null: `permits` of every policy. */
  readonly amounts: readonly number[] | null;
  /** As the caller asked: a number, or a record of dimensions (for the failure policy). */
  readonly asked: Permits;

  constructor(
    permits: number,
    maxWait: number,
    signal: AbortSignal | undefined,
    settles = false,
    amounts: readonly number[] | null = null,
    asked: Permits = permits,
  ) {
    this.permits = permits;
    this.asked = asked;
    this.amounts = amounts;
    this.maxWait = maxWait;
    this.signal = signal;
    this.settles = settles;
  }
}

/** A `tryAcquireAsync` request: settles with the script's reply or the call's error. @internal */
export class Probe implements Reservation {
  id = "";
  readonly permits: number;
  sent = false;
  resolve: (reply: Reply) => void = noop;
  reject: (reason: unknown) => void = noop;

  constructor(permits: number) {
    this.permits = permits;
  }
}

function noop(): void {}

/** This process's random 64-bit id prefix (hex), drawn once: ids are unique across the fleet without coordination. */
const PREFIX: string = (() => {
  let hex = "";
  for (const b of crypto.getRandomValues(new Uint8Array(8))) hex += b.toString(16).padStart(2, "0");
  return hex;
})();
let nextId = 0;

/**
 * A reservation id: the process's random prefix and a counter. Never repeats within a process, and
 * two processes collide only if their 64-bit prefixes do; cheaper than fresh random bytes per call,
 * and shorter keys. @internal
 */
export function newId(): string {
  return PREFIX + (nextId++).toString(36);
}

/** An already-settled promise, shared. @internal */
export const RESOLVED: Promise<void> = Promise.resolve();
