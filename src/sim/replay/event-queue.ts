// A binary min-heap of timed events for the discrete-event simulation. Ties are broken by
// insertion order so that a replay is deterministic.

export class EventQueue<T> {
  private readonly times: number[] = [];
  private readonly orders: number[] = [];
  private readonly items: T[] = [];
  private counter = 0;

  get size(): number {
    return this.items.length;
  }

  push(time: number, item: T): void {
    this.times.push(time);
    this.orders.push(this.counter++);
    this.items.push(item);
    this.siftUp(this.items.length - 1);
  }

  peekTime(): number {
    return this.items.length === 0 ? Infinity : this.times[0];
  }

  /** The earliest item, left in place. */
  peekItem(): T | undefined {
    return this.items[0];
  }

  pop(): { time: number; item: T } | undefined {
    if (this.items.length === 0) return undefined;
    const time = this.times[0];
    return { time, item: this.popItem()! };
  }

  /** The earliest item, removed (its time is peekTime() before the call); nothing allocated. */
  popItem(): T | undefined {
    const n = this.items.length;
    if (n === 0) return undefined;
    const top = this.items[0];
    this.swap(0, n - 1);
    this.times.pop();
    this.orders.pop();
    this.items.pop();
    if (n > 1) this.siftDown(0);
    return top;
  }

  private less(a: number, b: number): boolean {
    return this.times[a] < this.times[b] || (this.times[a] === this.times[b] && this.orders[a] < this.orders[b]);
  }

  // Plain temporaries: destructuring swaps allocated arrays on every sift step.
  private swap(a: number, b: number): void {
    const { times, orders, items } = this;
    const t = times[a];
    times[a] = times[b];
    times[b] = t;
    const o = orders[a];
    orders[a] = orders[b];
    orders[b] = o;
    const x = items[a];
    items[a] = items[b];
    items[b] = x;
  }

  private siftUp(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(i, parent)) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private siftDown(i: number): void {
    const n = this.items.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.less(l, m)) m = l;
      if (r < n && this.less(r, m)) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }
}
