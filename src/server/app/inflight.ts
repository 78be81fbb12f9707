// The requests a router is serving, for a graceful drain: each registers when it starts and leaves
// when its answer is complete (a stream when it ended, whatever ended it). A drain waits until none
// is left; when its time runs out it cuts those still running (each knows how to end itself:
// an error frame for a stream, a 503 for a request still waiting for its engine).
//
// The entries live in an array of slots with a free list, not in a Set. A Set whose entries come
// and go is rehashed into a new table every few dozen requests, and V8 leaves the old table
// pointing to the new one and to the entries it held. Once a full GC had moved the live table to
// the old generation, every later table (and the whole request behind each entry) was reachable
// from a dead old table, so each scavenge promoted ~1.6 MB instead of ~0.5: +30-50 us of router
// CPU per request for good, and a mark-compact every few seconds (2026-11-28; bench/PERFORMANCE.md,
// "The router after its first full GC").

export interface InFlightEntry {
  /** The request's answer is complete. Idempotent. */
  done(): void;
  /** How to end the request at once (set once it knows how). */
  onCut(cut: () => void): void;
}

interface Entry {
  cut: (() => void) | undefined;
}

export class InFlight {
  private readonly slots: Array<Entry | undefined> = [];
  private readonly freeSlots: number[] = [];
  private waiters: Array<() => void> = [];

  get size(): number {
    return this.slots.length - this.freeSlots.length;
  }

  begin(): InFlightEntry {
    const slot = this.freeSlots.length > 0 ? this.freeSlots.pop()! : this.slots.length;
    const entry: Entry = { cut: undefined };
    this.slots[slot] = entry;
    return {
      done: () => {
        // Done already: the slot is free, or another request's since.
        if (this.slots[slot] !== entry) return;
        this.slots[slot] = undefined;
        this.freeSlots.push(slot);
        if (this.size === 0) this.wake();
      },
      onCut: (cut) => {
        entry.cut = cut;
      },
    };
  }

  /** Resolves when nothing is in flight (at once when nothing is). */
  idle(): Promise<void> {
    if (this.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Ends every request still in flight; returns how many there were. */
  cutAll(): number {
    const entries = this.slots.filter((e): e is Entry => e !== undefined);
    for (const e of entries) e.cut?.();
    return entries.length;
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
