/**
 * What a scheduler did with the tasks it was given, counted as it happens: the most running at once,
 * and how often the start order broke the priorities or first-come-first-served. Pure bookkeeping (no
 * clock), specified in `test/bench-smoke.test.ts`, so a correctness figure in RESULTS.md is only as
 * good as these few lines.
 *
 * Definitions (priorities as *levels*, higher = more important):
 * - a **priority inversion** is a task that starts while a more important task, submitted before
 *   that start, has not started yet (counted once per starting task, however many it passed);
 * - a **FIFO inversion** is a task that starts while a task of its own level, submitted before it,
 *   has not started yet.
 *
 * A task submitted after another started is never an inversion against it: the scheduler could not
 * have known about it.
 *
 * @module
 */

/** Counts in-flight tasks and start-order violations; ids are the order of `submit` calls. */
export class OrderTracker {
  /** Tasks submitted and not yet started, per level. */
  readonly #pending: number[];
  /** Per level, the ids submitted in order, and how far the started prefix reaches. */
  readonly #ids: number[][];
  readonly #head: number[];
  readonly #levelOf: number[] = [];
  readonly #started: boolean[] = [];
  #inFlight = 0;
  maxInFlight = 0;
  priorityInversions = 0;
  fifoInversions = 0;
  startedCount = 0;
  finishedCount = 0;

  /** @param levels priority levels in use: 0 … levels − 1 (arrays, not maps: it runs inside the measurement). */
  constructor(levels = 1) {
    if (!Number.isInteger(levels) || levels < 1) throw new RangeError(`\`levels\` must be a positive integer, got ${levels}`);
    this.#pending = new Array<number>(levels).fill(0);
    this.#ids = Array.from({ length: levels }, () => []);
    this.#head = new Array<number>(levels).fill(0);
  }

  /** Records a submission at `level` (call it just before handing the task over); returns its id. */
  submit(level = 0): number {
    if (!(level >= 0 && level < this.#pending.length && Number.isInteger(level))) {
      throw new RangeError(`\`level\` must be an integer from 0 to ${this.#pending.length - 1}, got ${level}`);
    }
    const id = this.#levelOf.length;
    this.#levelOf.push(level);
    this.#started.push(false);
    this.#pending[level]!++;
    this.#ids[level]!.push(id);
    return id;
  }

  /** Records that task `id` started running (its first statement). */
  start(id: number): void {
    const level = this.#levelOf[id];
    if (level === undefined || this.#started[id]) throw new RangeError(`\`id\` must be a submitted task not yet started, got ${id}`);
    for (let other = level + 1; other < this.#pending.length; other++) {
      if (this.#pending[other]! > 0) {
        this.priorityInversions++;
        break;
      }
    }
    const ids = this.#ids[level]!;
    let head = this.#head[level]!;
    while (head < ids.length && this.#started[ids[head]!]) head++;
    this.#head[level] = head;
    if (ids[head] !== id) this.fifoInversions++;
    this.#started[id] = true;
    this.#pending[level]!--;
    this.startedCount++;
    this.#inFlight++;
    if (this.#inFlight > this.maxInFlight) this.maxInFlight = this.#inFlight;
  }

  /** Records that a started task ended (returned, or its promise settled). */
  finish(): void {
    this.#inFlight--;
    this.finishedCount++;
  }

  /** Tasks running now. */
  get inFlight(): number {
    return this.#inFlight;
  }
}
