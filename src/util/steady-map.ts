// A string-keyed map for entries that come and go by the thousand (one per request), whose storage
// stays put: open addressing with linear probing in flat arrays, deletion by shifting the entries
// after a hole back (no tombstones), so nothing is ever rehashed while the number of entries holds
// steady; the arrays only double when the entries outgrow them, and never shrink.
//
// Why not a Map: a churned Map's old hash tables keep the entries they held reachable once a full
// GC has run (src/util/slot-table.ts says how; SlotTable serves numbered slots, this, string keys).
// Here a removed entry's slots are cleared, and the old arrays of a growth are emptied, so an old
// array never holds a dead entry.

import { randomBytes } from 'node:crypto';

const MIN_CAPACITY = 16;
// Keys may come from clients (X-Request-Id): a seed of this process's own keeps them from
// choosing keys that all land in one run of slots.
const SEED = randomBytes(4).readInt32LE(0);

export class SteadyMap<V> {
  private keys: Array<string | undefined> = new Array<string | undefined>(MIN_CAPACITY).fill(undefined);
  private vals: Array<V | undefined> = new Array<V | undefined>(MIN_CAPACITY).fill(undefined);
  // Each occupied slot's key hash, so that growing and shifting never hash a key again.
  private hashes = new Int32Array(MIN_CAPACITY);
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Slots (a power of two; at least twice the entries once they have grown it). */
  get capacity(): number {
    return this.keys.length;
  }

  get(key: string): V | undefined {
    const i = this.find(checkKey(key));
    return i < 0 ? undefined : this.vals[i];
  }

  has(key: string): boolean {
    return this.find(checkKey(key)) >= 0;
  }

  set(key: string, value: V): this {
    const h = hash(checkKey(key));
    const mask = this.keys.length - 1;
    let i = h & mask;
    for (let k = this.keys[i]; k !== undefined; k = this.keys[i]) {
      if (k === key) {
        this.vals[i] = value;
        return this;
      }
      i = (i + 1) & mask;
    }
    this.keys[i] = key;
    this.vals[i] = value;
    this.hashes[i] = h;
    // At most half full, so that probes stay short.
    if (++this.count * 2 > this.keys.length) this.grow();
    return this;
  }

  /** Removes `key`'s entry; false when there was none. */
  delete(key: string): boolean {
    let hole = this.find(checkKey(key));
    if (hole < 0) return false;
    const mask = this.keys.length - 1;
    // Each entry after the hole, up to the next empty slot, moves back into it unless its home
    // slot lies between the hole and where it is (it would then no longer be found).
    for (let j = (hole + 1) & mask; this.keys[j] !== undefined; j = (j + 1) & mask) {
      const home = this.hashes[j] & mask;
      const staysPut = hole <= j ? hole < home && home <= j : hole < home || home <= j;
      if (staysPut) continue;
      this.keys[hole] = this.keys[j];
      this.vals[hole] = this.vals[j];
      this.hashes[hole] = this.hashes[j];
      hole = j;
    }
    this.keys[hole] = undefined;
    this.vals[hole] = undefined;
    this.count--;
    return true;
  }

  /** The values, in no particular order (a snapshot: the map may change while it is read). */
  values(): V[] {
    const out: V[] = [];
    for (let i = 0; i < this.keys.length; i++) if (this.keys[i] !== undefined) out.push(this.vals[i] as V);
    return out;
  }

  clear(): void {
    this.keys.fill(undefined);
    this.vals.fill(undefined);
    this.count = 0;
  }

  private find(key: string): number {
    const mask = this.keys.length - 1;
    for (let i = hash(key) & mask, k = this.keys[i]; k !== undefined; i = (i + 1) & mask, k = this.keys[i]) {
      if (k === key) return i;
    }
    return -1;
  }

  private grow(): void {
    const { keys, vals, hashes } = this;
    const capacity = keys.length * 2;
    this.keys = new Array<string | undefined>(capacity).fill(undefined);
    this.vals = new Array<V | undefined>(capacity).fill(undefined);
    this.hashes = new Int32Array(capacity);
    const mask = capacity - 1;
    for (let j = 0; j < keys.length; j++) {
      const key = keys[j];
      if (key === undefined) continue;
      let i = hashes[j] & mask;
      while (this.keys[i] !== undefined) i = (i + 1) & mask;
      this.keys[i] = key;
      this.vals[i] = vals[j];
      this.hashes[i] = hashes[j];
    }
    // The old arrays may be in the old generation: emptied, they keep no entry alive.
    keys.fill(undefined);
    vals.fill(undefined);
  }
}

function checkKey(key: string): string {
  if (typeof key !== 'string') throw new TypeError(`a SteadyMap key must be a string, got ${typeof key}`);
  return key;
}

/** FNV-1a over the UTF-16 code units from a seeded basis, then mixed so that the low bits (the slot) vary. */
function hash(key: string): number {
  let h = 0x811c9dc5 ^ SEED;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  return h ^ (h >>> 13);
}
