// A ring-buffer double-ended queue: the waiting queue takes arrivals at the back and preempted
// or transfer-completed requests at the front, both in O(1).

export class Deque<T> {
  private buf: (T | undefined)[] = new Array(16);
  private head = 0;
  private count = 0;

  get size(): number {
    return this.count;
  }

  peek(): T | undefined {
    return this.count === 0 ? undefined : this.buf[this.head];
  }

  at(i: number): T {
    return this.buf[(this.head + i) & (this.buf.length - 1)]!;
  }

  pushBack(item: T): void {
    if (this.count === this.buf.length) this.grow();
    this.buf[(this.head + this.count) & (this.buf.length - 1)] = item;
    this.count++;
  }

  pushFront(item: T): void {
    if (this.count === this.buf.length) this.grow();
    this.head = (this.head - 1) & (this.buf.length - 1);
    this.buf[this.head] = item;
    this.count++;
  }

  shift(): T | undefined {
    if (this.count === 0) return undefined;
    const item = this.buf[this.head];
    this.buf[this.head] = undefined;
    this.head = (this.head + 1) & (this.buf.length - 1);
    this.count--;
    return item;
  }

  /** Inserts `item` before the item at `index` (at the back when index >= size): O(n). */
  insert(index: number, item: T): void {
    if (index >= this.count) return this.pushBack(item);
    if (index <= 0) return this.pushFront(item);
    const items = this.toArray();
    items.splice(index, 0, item);
    this.buf = new Array(this.buf.length);
    this.head = 0;
    this.count = 0;
    for (const x of items) this.pushBack(x);
  }

  /** Removes the first item equal to `item` (O(n)); false when absent. */
  remove(item: T): boolean {
    const items = this.toArray();
    const i = items.indexOf(item);
    if (i < 0) return false;
    items.splice(i, 1);
    this.buf = new Array(this.buf.length);
    this.head = 0;
    this.count = 0;
    for (const x of items) this.pushBack(x);
    return true;
  }

  toArray(): T[] {
    const out: T[] = [];
    for (let i = 0; i < this.count; i++) out.push(this.at(i));
    return out;
  }

  private grow(): void {
    const items = this.toArray();
    this.buf = new Array(this.buf.length * 2);
    for (let i = 0; i < items.length; i++) this.buf[i] = items[i];
    this.head = 0;
  }
}
