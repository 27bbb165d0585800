/**
 * Settling granted waiters and running scheduled tasks, in grant order, even when a task calls back
 * into a limiter during the drain.
 *
 * @module
 */
import type { Gate } from "./gate.ts";
import { announceGrant } from "./stats.ts";
import { CompletionTaskWaiter, type Task, TaskWaiter, type Waiter, type WaitQueue } from "./waiter.ts";

/**
 * What a scheduled task rejects with when it found, as it started, that its caller had left (aborted
 * between the grant and the task): nothing was done, so its grant is ended as if never used (see
 * `Gate.unstarted`: held permits and slots go back). Internal: sluice's throttled fetch and
 * undici interceptor throw it; their caller gets `reason`. @internal
 *
 * @example
 * ```ts
 * limiter.schedule(async () => { if (signal.aborted) throw new Unstarted(signal.reason); return send(); });
 * ```
 */
export class Unstarted {
  readonly reason: unknown;
  constructor(reason: unknown) {
    this.reason = reason;
  }
}

/** Ends a task's grant; `outcome` is its value or error. */
export type OnDone = (outcome?: unknown) => void;

/**
 * Runs a task now: its result, or its synchronous throw as a rejection, becomes the returned
 * promise; `onDone` runs once the result settles, with its value or error (an {@link Unstarted}
 * error gives the grant back).
 */
function runTask(task: Task, onDone: OnDone | undefined, queue: WaitQueue): Promise<unknown> {
  // In flight from its grant (now) to its settling: see `stats().inFlight`.
  queue.inFlight++;
  let result: unknown;
  try {
    result = task();
  } catch (error) {
    queue.inFlight--;
    onDone?.(error);
    return Promise.reject(error);
  }
  const promise = Promise.resolve(result);
  // A synchronous result has settled already: no reaction to wait for (the common fast path).
  const thenable = result instanceof Promise ||
    (result !== null && (typeof result === "object" || typeof result === "function") &&
      typeof (result as { then?: unknown }).then === "function");
  if (!thenable) queue.inFlight--;
  const done = thenable ? (queue.taskDone ??= () => void queue.inFlight--) : undefined;
  if (onDone === undefined) {
    if (done !== undefined) promise.then(done, done);
  } else if (done === undefined) promise.then(onDone, onDone);
  else {
    const both = (outcome: unknown): void => {
      done();
      onDone(outcome);
    };
    promise.then(both, both);
  }
  return promise;
}

/**
 * Granted waiters settle in grant order, even when a task they run calls back into a limiter and
 * causes more grants: those join the end of this queue instead of running first.
 */
const settling: Array<Waiter | (() => void) | Gate> = [];
let draining = false;

/**
 * Settles waiters just granted by `gate`, in order. The gate rides along in the drain (before its
 * waiters) rather than on each queue, so an empty queue keeps no reference to a gate that may later be
 * merged away (which would keep a chain of forwarded gates alive).
 */
export function settleInOrder(granted: readonly Waiter[], gate: Gate): void {
  settling.push(gate);
  for (const waiter of granted) settling.push(waiter);
  if (draining) return;
  draining = true;
  let current: Gate | undefined;
  try {
    for (let i = 0; i < settling.length; i++) {
      const next = settling[i]!;
      if (typeof next === "function") next();
      else if (next instanceof Promise) settle(next, current!);
      else current = next;
    }
  } finally {
    settling.length = 0;
    draining = false;
  }
  // Permits stamped as their tasks started: the queues they held can now be timed. One pass per gate.
  if (stamped.size > 0) {
    const gates = [...stamped];
    stamped.clear();
    for (const gate of gates) gate.scan();
  }
}

/** Gates whose held permits were stamped during the drain, to rescan once it ends. */
export const stamped = new Set<Gate>();

/**
 * Starts a task granted at once. Outside a grant pass it runs synchronously, at its grant; inside one
 * (a task scheduling another), it runs after the tasks granted before it.
 */
export function startTask(task: Task, onDone: OnDone | undefined, queue: WaitQueue): Promise<unknown> {
  if (!draining) return runTask(task, onDone, queue);
  return new Promise((resolve) => {
    settling.push(() => resolve(runTask(task, onDone, queue)));
  });
}

/** Resolves a granted waiter that has left its queue (running its task, if it carries one). */
function settle(waiter: Waiter, granter: Gate): void {
  if (waiter instanceof TaskWaiter) {
    let onDone: OnDone | undefined;
    const queue = waiter.queue;
    if (waiter.hold || queue.slots) {
      const gate = granter.root();
      const stamp = waiter.hold && queue.countFrom === "start" && !(waiter instanceof CompletionTaskWaiter);
      if (stamp) gate.stampStart(queue.policies, waiter.permits);
      // Concurrency slots, and permits counted from completion, end when the task settles.
      const release = waiter.hold && !stamp;
      if (queue.slots || release) {
        onDone = (outcome) => {
          if (outcome instanceof Unstarted) gate.root().unstarted(queue.policies, waiter.permits, release);
          else if (queue.slots) gate.root().finish(queue.policies, waiter.permits, release);
          else gate.root().release(queue.policies, waiter.permits);
        };
      }
    }
    announceGrant(waiter);
    waiter.resolve(runTask(waiter.task, onDone, waiter.queue) as PromiseLike<void>);
  } else {
    announceGrant(waiter);
    waiter.resolve(waiter.result() as PromiseLike<void> | undefined);
  }
}

export const RESOLVED: Promise<void> = Promise.resolve();
