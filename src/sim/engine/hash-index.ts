// The prefix cache's index from a block's content hash to the block holding it: open addressing
// with linear probing, sized once for the cache (at most half full), each slot a hash's low half
// and its block side by side in one Int32Array, the high halves beside the blocks. A probe reads
// one cache line: a replay runs millions of lookups per policy over several engines' tables, so
// the table's size, not its instruction count, sets their cost. (A Map keyed by bigint hashed the
// key's digits on every lookup and chased heap objects: about a third of a trace replay's CPU
// went to its get and delete.) Deletion shifts the following entries back, so no tombstones
// accumulate.

const EMPTY = -1;

// A slot's fields at these offsets from slot * SLOT_FIELDS.
const KEY_LO = 0;
const VALUE = 1;
const SLOT_FIELDS = 2;

export class BlockHashIndex {
  private readonly slots: Int32Array;
  /** The high half of the key stored with each value (a value has at most one key). */
  private readonly hiOfValue: Int32Array;
  private readonly mask: number;
  private count = 0;

  /** An index of at most `capacity` entries whose values are distinct integers in [0, capacity). */
  constructor(readonly capacity: number) {
    let n = 16;
    while (n < 2 * capacity) n *= 2;
    this.slots = new Int32Array(n * SLOT_FIELDS);
    for (let i = 0; i < n; i++) this.slots[i * SLOT_FIELDS + VALUE] = EMPTY;
    this.hiOfValue = new Int32Array(capacity);
    this.mask = n - 1;
  }

  get size(): number {
    return this.count;
  }

  /** The value stored under (hi, lo), or -1. */
  get(hi: number, lo: number): number {
    const h = hi | 0;
    const l = lo | 0;
    const { slots, mask } = this;
    for (let i = l & mask; ; i = (i + 1) & mask) {
      const at = i * SLOT_FIELDS;
      const v = slots[at + VALUE];
      if (v === EMPTY || (slots[at + KEY_LO] === l && this.hiOfValue[v] === h)) return v;
    }
  }

  /** Stores a value in [0, capacity), not stored yet, under a key that is not in the index. */
  add(hi: number, lo: number, value: number): void {
    if (!Number.isInteger(value) || value < 0 || value >= this.capacity) throw new RangeError(`a value must be an integer in [0, ${this.capacity}), got ${value}`);
    if (this.count === this.capacity) throw new RangeError(`the index holds ${this.capacity} entries already`);
    const l = lo | 0;
    const { slots, mask } = this;
    let i = l & mask;
    while (slots[i * SLOT_FIELDS + VALUE] !== EMPTY) i = (i + 1) & mask;
    slots[i * SLOT_FIELDS + KEY_LO] = l;
    slots[i * SLOT_FIELDS + VALUE] = value;
    this.hiOfValue[value] = hi | 0;
    this.count++;
  }

  /** Removes a key; false when it was not there. */
  delete(hi: number, lo: number): boolean {
    const h = hi | 0;
    const l = lo | 0;
    const { slots, mask } = this;
    let i = l & mask;
    for (;;) {
      const at = i * SLOT_FIELDS;
      const v = slots[at + VALUE];
      if (v === EMPTY) return false;
      if (slots[at + KEY_LO] === l && this.hiOfValue[v] === h) break;
      i = (i + 1) & mask;
    }
    // Backward shift: an entry after the hole moves into it unless its home slot lies
    // (cyclically) after the hole, up to where it is.
    for (let j = (i + 1) & mask; slots[j * SLOT_FIELDS + VALUE] !== EMPTY; j = (j + 1) & mask) {
      const from = j * SLOT_FIELDS;
      const home = slots[from + KEY_LO] & mask;
      const stays = i <= j ? home > i && home <= j : home > i || home <= j;
      if (stays) continue;
      const to = i * SLOT_FIELDS;
      slots[to + KEY_LO] = slots[from + KEY_LO];
      slots[to + VALUE] = slots[from + VALUE];
      i = j;
    }
    slots[i * SLOT_FIELDS + VALUE] = EMPTY;
    this.count--;
    return true;
  }

  clear(): void {
    for (let i = 0; i <= this.mask; i++) this.slots[i * SLOT_FIELDS + VALUE] = EMPTY;
    this.count = 0;
  }
}
