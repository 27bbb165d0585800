/**
 * One caller of a Redis limiter while it reserves and waits, and the fleet-unique reservation ids.
 *
 * @module
 */
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
  /** Local time the current reserve was requested. */
  sentAt = 0;
  /** True once the current reserve's call went out (only then may it execute and need a cancel). */
  sent = false;
  grantAt = 0;
  index = -1;
  resolve: () => void = noop;
  reject: (reason: unknown) => void = noop;
  onAbort: (() => void) | undefined = undefined;

  constructor(permits: number, maxWait: number, signal: AbortSignal | undefined) {
    this.permits = permits;
    this.maxWait = maxWait;
    this.signal = signal;
  }
}

/** A `tryAcquireAsync` request: settles with the script's reply or the call's error. @internal */
export class Probe implements Reservation {
  readonly id: string;
  readonly permits: number;
  sent = false;
  resolve: (reply: Reply) => void = noop;
  reject: (reason: unknown) => void = noop;

  constructor(id: string, permits: number) {
    this.id = id;
    this.permits = permits;
  }
}

function noop(): void {}

/** A random reservation id (96 bits, hex): unique across the fleet without coordination. @internal */
export function newId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  let id = "";
  for (const b of bytes) id += b.toString(16).padStart(2, "0");
  return id;
}

/** An already-settled promise, shared. @internal */
export const RESOLVED: Promise<void> = Promise.resolve();
