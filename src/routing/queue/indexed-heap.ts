// A binary heap whose items know where they are, so one can be removed or re-keyed in O(log n)
// (a client that left is taken out of the router queue at once; a re-keyed request moves). The
// libraries at hand remove by search, O(n). An item may sit in several heaps at once (the queue
// keeps one best-first and one worst-first over the same requests): each heap reads and writes
// the item's position through its own slot.

/** Where a heap keeps an item's position (-1: not in that heap). */
export interface HeapSlot<T> {
  get(item: T): number;
  set(item: T, index: number): void;
}

export class IndexedHeap<T> {
  private readonly items: T[] = [];

  /** `before(a, b)`: a comes out first. It must be a strict order that stays put while an item is in the heap (call update() after changing an item's key). */
  constructor(
    private readonly before: (a: T, b: T) => boolean,
    private readonly slot: HeapSlot<T>,
  ) {}

  get size(): number {
    return this.items.length;
  }

  /** The item that pop() would return, or undefined when empty. */
  peek(): T | undefined {
    return this.items[0];
  }

  has(item: T): boolean {
    const i = this.slot.get(item);
    return i >= 0 && i < this.items.length && this.items[i] === item;
  }

  push(item: T): void {
    if (this.has(item)) throw new RangeError('the item is already in this heap');
    this.items.push(item);
    this.slot.set(item, this.items.length - 1);
    this.siftUp(this.items.length - 1);
  }

  pop(): T | undefined {
    const top = this.items[0];
    if (top !== undefined) this.removeAt(0);
    return top;
  }

  /** Takes `item` out wherever it is; false when it is not in this heap. */
  remove(item: T): boolean {
    if (!this.has(item)) return false;
    this.removeAt(this.slot.get(item));
    return true;
  }

  /** Restores the order after `item`'s key changed. */
  update(item: T): void {
    if (!this.has(item)) throw new RangeError('the item is not in this heap');
    const i = this.slot.get(item);
    if (!this.siftUp(i)) this.siftDown(i);
  }

  /** The items, in no particular order, without a copy: the heap must not change meanwhile. */
  values(): IterableIterator<T> {
    return this.items.values();
  }

  /** The items, in no particular order (a snapshot). */
  toArray(): T[] {
    return this.items.slice();
  }

  clear(): void {
    for (const item of this.items) this.slot.set(item, -1);
    this.items.length = 0;
  }

  private removeAt(i: number): void {
    const items = this.items;
    const last = items.length - 1;
    const removed = items[i];
    if (i !== last) {
      items[i] = items[last];
      this.slot.set(items[i], i);
    }
    items.pop();
    this.slot.set(removed, -1);
    if (i < items.length && !this.siftUp(i)) this.siftDown(i);
  }

  /** Moves the item at i up while it comes before its parent; true when it moved. */
  private siftUp(i: number): boolean {
    const items = this.items;
    const item = items[i];
    const start = i;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(item, items[parent])) break;
      items[i] = items[parent];
      this.slot.set(items[i], i);
      i = parent;
    }
    items[i] = item;
    this.slot.set(item, i);
    return i !== start;
  }

  private siftDown(i: number): void {
    const items = this.items;
    const n = items.length;
    const item = items[i];
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && this.before(items[right], items[left]) ? right : left;
      if (!this.before(items[child], item)) break;
      items[i] = items[child];
      this.slot.set(items[i], i);
      i = child;
    }
    items[i] = item;
    this.slot.set(item, i);
  }
}
