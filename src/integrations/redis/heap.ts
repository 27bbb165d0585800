/**
 * A binary min-heap of waiters ordered by (grant time, arrival), with O(log n) removal of any
 * element (each element remembers its index), so an abort unlinks a waiter without leaving a dead
 * entry behind.
 *
 * @module
 */

/** What the heap needs from an element. */
export interface HeapItem {
  /** Local clock time at which the item is due. */
  grantAt: number;
  /** Arrival order, to break ties. */
  readonly seq: number;
  /** Position in the heap, −1 when not in it. */
  index: number;
}

function before(a: HeapItem, b: HeapItem): boolean {
  return a.grantAt < b.grantAt || (a.grantAt === b.grantAt && a.seq < b.seq);
}

/** The heap. */
export class TimerHeap<T extends HeapItem> {
  readonly #items: T[] = [];

  get size(): number {
    return this.#items.length;
  }

  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
    item.index = this.#items.length;
    this.#items.push(item);
    this.#up(item.index);
  }

  pop(): T | undefined {
    const top = this.#items[0];
    if (top !== undefined) this.remove(top);
    return top;
  }

  remove(item: T): void {
    const i = item.index;
    if (i < 0 || this.#items[i] !== item) return;
    const last = this.#items.pop()!;
    item.index = -1;
    if (last === item) return;
    this.#items[i] = last;
    last.index = i;
    this.#up(i);
    this.#down(last.index);
  }

  /** Every item, in no particular order. */
  items(): readonly T[] {
    return this.#items;
  }

  #up(i: number): void {
    const items = this.#items;
    const item = items[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(item, items[parent]!)) break;
      items[i] = items[parent]!;
      items[i]!.index = i;
      i = parent;
    }
    items[i] = item;
    item.index = i;
  }

  #down(i: number): void {
    const items = this.#items;
    const n = items.length;
    const item = items[i]!;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && before(items[right]!, items[left]!) ? right : left;
      if (!before(items[child]!, item)) break;
      items[i] = items[child]!;
      items[i]!.index = i;
      i = child;
    }
    items[i] = item;
    item.index = i;
  }
}
