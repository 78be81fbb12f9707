// The eviction order of the prefix cache: blocks in the order they last became evictable, oldest
// first. A doubly linked list did this with a pointer chase per eviction (each block's record names
// the next one, so the cache misses of an eviction run came one after the other). Here the order is
// an array read front to back, and removal is lazy: a removed block's entry is blanked where it
// is (its position says where) and skipped later. Taking the oldest reads the array sequentially
// and only writes the block's position, so an eviction run's loads are all sequential (an entry
// recognised as stale by its block's position, as before, cost a random load per entry taken or
// skipped). When the array fills, the live entries are compacted to its front (at most `capacity`
// of them in an array of twice that, so compaction is amortised O(1) per push).

const NONE = -1;

export class LruQueue {
  private readonly entries: Int32Array;
  /** Each block's index in `entries` while it is queued, NONE otherwise. */
  private readonly position: Int32Array;
  private head = 0;
  private tail = 0;
  private count = 0;

  /** A queue of blocks in [0, capacity). */
  constructor(readonly capacity: number) {
    this.entries = new Int32Array(Math.max(2 * capacity, 2));
    this.position = new Int32Array(capacity).fill(NONE);
  }

  get size(): number {
    return this.count;
  }

  has(block: number): boolean {
    return this.position[block] !== NONE;
  }

  /** Queues a block that is not queued, as the newest. */
  push(block: number): void {
    if (this.position[block] !== NONE) throw new Error(`block ${block} is queued already`);
    if (this.tail === this.entries.length) this.compact();
    this.entries[this.tail] = block;
    this.position[block] = this.tail++;
    this.count++;
  }

  /** Takes a block out of the queue; false when it was not queued. */
  remove(block: number): boolean {
    const at = this.position[block];
    if (at === NONE) return false;
    this.entries[at] = NONE;
    this.position[block] = NONE;
    this.count--;
    return true;
  }

  /** Takes the oldest block out of the queue and returns it; NONE when empty. */
  shift(): number {
    if (this.count === 0) return NONE;
    const { entries, position } = this;
    let at = this.head;
    while (entries[at] === NONE) at++;
    const block = entries[at];
    position[block] = NONE;
    this.head = at + 1;
    this.count--;
    return block;
  }

  private compact(): void {
    const { entries, position } = this;
    let to = 0;
    for (let at = this.head; at < this.tail; at++) {
      const block = entries[at];
      // Live entries only (removed ones are blank).
      if (block === NONE) continue;
      entries[to] = block;
      position[block] = to++;
    }
    this.head = 0;
    this.tail = to;
  }
}
