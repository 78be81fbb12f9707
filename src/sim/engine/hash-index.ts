// The prefix cache's index from a block's content hash to the block holding it: open addressing
// with linear probing, sized once for the cache (at most half full). Each slot is 8 bytes, the
// hash's low half and its value side by side in one Int32Array (8 slots per cache line). The high
// half is not in the index: it is read from the owner's record of the value (the block's record,
// whose line the caller reads anyway: a hit acquires the block, an eviction reads its hash), and
// only when a slot's low half matches. A replay runs millions of lookups per policy over several
// engines' tables of megabytes: each probe is a cache miss, so a lookup, an insertion or a
// deletion reads one slot's line and nothing else of the index. Halving the slots (they were 16
// bytes, both halves inline) halved the table and made a deletion's backward shift cross a line
// half as often. (A Map keyed by bigint hashed the key's digits on every lookup and
// chased heap objects: about a third of a trace replay's CPU went to its get and delete.) Deletion
// shifts the following entries back, so no tombstones accumulate.

const EMPTY = -1;

// A slot's fields at these offsets from slot * SLOT_FIELDS.
const KEY_LO = 0;
const VALUE = 1;
const SLOT_FIELDS = 2;

/** Where the owner keeps the high half of the key stored under a value: `records[value * stride + offset]`. */
export interface HighHalves {
  records: Int32Array;
  stride: number;
  offset: number;
}

export class BlockHashIndex {
  private readonly slots: Int32Array;
  private readonly mask: number;
  private readonly his: Int32Array;
  private readonly stride: number;
  private readonly hiAt: number;
  private count = 0;

  /**
   * An index of at most `capacity` entries whose values are distinct integers in [0, capacity).
   * The owner writes a key's high half to its value's record (`high`) before adding it, and leaves
   * it there until the key is deleted.
   */
  constructor(
    readonly capacity: number,
    high: HighHalves,
  ) {
    let n = 16;
    while (n < 2 * capacity) n *= 2;
    this.slots = new Int32Array(n * SLOT_FIELDS);
    for (let i = 0; i < n; i++) this.slots[i * SLOT_FIELDS + VALUE] = EMPTY;
    this.mask = n - 1;
    if (
      !(
        Number.isInteger(high.stride) &&
        Number.isInteger(high.offset) &&
        high.stride >= 1 &&
        high.offset >= 0 &&
        high.offset < high.stride &&
        high.records.length >= capacity * high.stride
      )
    ) {
      throw new RangeError(
        `the high halves' records must hold ${capacity} records of stride ${high.stride} (offset ${high.offset}), got ${high.records.length} entries`,
      );
    }
    this.his = high.records;
    this.stride = high.stride;
    this.hiAt = high.offset;
  }

  get size(): number {
    return this.count;
  }

  /** The value stored under (hi, lo), or -1. */
  get(hi: number, lo: number): number {
    return this.slots[this.slotOf(hi, lo) * SLOT_FIELDS + VALUE];
  }

  /** The slot holding the key, or the empty slot that ends its probe sequence (where it would go). */
  private slotOf(hi: number, lo: number): number {
    const h = hi | 0;
    const l = lo | 0;
    const { slots, mask, his, stride, hiAt } = this;
    for (let i = l & mask; ; i = (i + 1) & mask) {
      const at = i * SLOT_FIELDS;
      const v = slots[at + VALUE];
      if (v === EMPTY || (slots[at + KEY_LO] === l && his[v * stride + hiAt] === h)) return i;
    }
  }

  /**
   * Reads the key's home slot and returns something of it: a prefetch (JavaScript has none).
   * Touching a run of keys before probing them lets their cache misses overlap; the caller keeps
   * the result so that the load is not optimised away.
   */
  touch(lo: number): number {
    return this.slots[((lo | 0) & this.mask) * SLOT_FIELDS + VALUE];
  }

  /** Stores a value in [0, capacity), stored under no other key, under a key that is not in the index (its record holding `hi`). */
  add(hi: number, lo: number, value: number): void {
    if (this.addIfAbsent(hi, lo, value) !== EMPTY) throw new RangeError(`the key (${hi}, ${lo}) is in the index already`);
  }

  /**
   * The value stored under (hi, lo) if there is one (nothing changes), otherwise -1 after storing
   * `value` (in [0, capacity), stored under no other key) under it: a lookup and an insertion in
   * one probe sequence.
   */
  addIfAbsent(hi: number, lo: number, value: number): number {
    if (!Number.isInteger(value) || value < 0 || value >= this.capacity)
      throw new RangeError(`a value must be an integer in [0, ${this.capacity}), got ${value}`);
    const { slots } = this;
    const at = this.slotOf(hi, lo) * SLOT_FIELDS;
    const v = slots[at + VALUE];
    if (v !== EMPTY) return v;
    if (this.count === this.capacity) throw new RangeError(`the index holds ${this.capacity} entries already`);
    if (this.his[value * this.stride + this.hiAt] !== (hi | 0))
      throw new RangeError(`the record of value ${value} does not hold the key's high half ${hi | 0}`);
    slots[at + KEY_LO] = lo | 0;
    slots[at + VALUE] = value;
    this.count++;
    return EMPTY;
  }

  /** Removes a key; false when it was not there. */
  delete(hi: number, lo: number): boolean {
    const { slots, mask } = this;
    let i = this.slotOf(hi, lo);
    if (slots[i * SLOT_FIELDS + VALUE] === EMPTY) return false;
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
