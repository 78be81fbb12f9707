// Entries that come and go by the thousand (one per request), kept in an array of slots with a
// free list instead of a Set or a Map.
//
// A Set or Map whose entries come and go is rehashed into a new table every few dozen operations,
// and V8 leaves the old table pointing to the new one and to the entries it held. Once a full GC
// has moved the live table to the old generation, every later table (and whatever each entry
// references: a whole request) is reachable from a dead old table, so it survives its scavenges
// and is promoted, for good: +30-50 us of router CPU per request and a mark-compact every few
// seconds (2026-11-28; bench/PERFORMANCE.md, "The router after its first full GC"). A slot is
// cleared the moment its entry leaves, and the array only grows to the most entries held at once.

export class SlotTable<T> {
  private readonly slots: Array<T | undefined> = [];
  private readonly freeSlots: number[] = [];

  /** Entries held. */
  get size(): number {
    return this.slots.length - this.freeSlots.length;
  }

  /** Stores `value` in a free slot (a new one when none is free) and returns the slot. */
  add(value: T): number {
    const slot = this.freeSlots.length > 0 ? this.freeSlots.pop()! : this.slots.length;
    this.slots[slot] = value;
    return slot;
  }

  /** The entry in `slot`, undefined when the slot is free. */
  get(slot: number): T | undefined {
    return this.slots[slot];
  }

  /**
   * Frees `slot` if it still holds `value`; false when it does not (freed already, or reused by
   * another entry since), so a second release cannot free another entry's slot.
   */
  release(slot: number, value: T): boolean {
    if (value === undefined || this.slots[slot] !== value) return false;
    this.slots[slot] = undefined;
    this.freeSlots.push(slot);
    return true;
  }

  /** The entries held, in slot order (a copy: releasing while iterating it is safe). */
  values(): T[] {
    return this.slots.filter((v): v is T => v !== undefined);
  }
}
