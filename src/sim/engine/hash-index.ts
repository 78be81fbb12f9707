// The prefix cache's index from a block's content hash to the block holding it: open addressing
// with linear probing over typed arrays, keyed by the hash's two 32-bit halves (as block-hash.ts
// computes them). A Map keyed by bigint hashed the key's digits on every lookup and chased heap
// objects: about a third of a trace replay's CPU went to its get and delete. Deletion shifts the
// following entries back, so no tombstones accumulate; the table doubles past half full.

const EMPTY = -1;
const MIN_SLOTS = 1024;

export class BlockHashIndex {
  private hi: Int32Array;
  private lo: Int32Array;
  private value: Int32Array;
  private mask: number;
  private count = 0;

  constructor() {
    this.hi = new Int32Array(MIN_SLOTS);
    this.lo = new Int32Array(MIN_SLOTS);
    this.value = new Int32Array(MIN_SLOTS).fill(EMPTY);
    this.mask = MIN_SLOTS - 1;
  }

  get size(): number {
    return this.count;
  }

  /** The value stored under (hi, lo), or -1. */
  get(hi: number, lo: number): number {
    const h = hi | 0;
    const l = lo | 0;
    const mask = this.mask;
    for (let i = l & mask; ; i = (i + 1) & mask) {
      const v = this.value[i];
      if (v === EMPTY || (this.lo[i] === l && this.hi[i] === h)) return v;
    }
  }

  /** Stores a value (>= 0) under a key that is not in the index. */
  add(hi: number, lo: number, value: number): void {
    if ((this.count + 1) * 2 > this.value.length) this.grow();
    this.place(hi | 0, lo | 0, value);
    this.count++;
  }

  /** Removes a key; false when it was not there. */
  delete(hi: number, lo: number): boolean {
    const h = hi | 0;
    const l = lo | 0;
    const mask = this.mask;
    let i = l & mask;
    for (;;) {
      const v = this.value[i];
      if (v === EMPTY) return false;
      if (this.lo[i] === l && this.hi[i] === h) break;
      i = (i + 1) & mask;
    }
    // Backward shift: an entry after the hole moves into it unless its home slot lies
    // (cyclically) after the hole, up to where it is.
    for (let j = (i + 1) & mask; this.value[j] !== EMPTY; j = (j + 1) & mask) {
      const home = this.lo[j] & mask;
      const stays = i <= j ? home > i && home <= j : home > i || home <= j;
      if (stays) continue;
      this.hi[i] = this.hi[j];
      this.lo[i] = this.lo[j];
      this.value[i] = this.value[j];
      i = j;
    }
    this.value[i] = EMPTY;
    this.count--;
    return true;
  }

  clear(): void {
    this.value.fill(EMPTY);
    this.count = 0;
  }

  private place(h: number, l: number, value: number): void {
    const mask = this.mask;
    let i = l & mask;
    while (this.value[i] !== EMPTY) i = (i + 1) & mask;
    this.hi[i] = h;
    this.lo[i] = l;
    this.value[i] = value;
  }

  private grow(): void {
    const { hi, lo, value } = this;
    const slots = value.length * 2;
    this.hi = new Int32Array(slots);
    this.lo = new Int32Array(slots);
    this.value = new Int32Array(slots).fill(EMPTY);
    this.mask = slots - 1;
    for (let i = 0; i < value.length; i++) if (value[i] !== EMPTY) this.place(hi[i], lo[i], value[i]);
  }
}
