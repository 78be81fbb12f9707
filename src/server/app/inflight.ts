// The requests a router is serving, for a graceful drain: each registers when it starts and leaves
// when its answer is complete (a stream when it ended, whatever ended it). A drain waits until none
// is left; when its time runs out it cuts those still running (each knows how to end itself:
// an error frame for a stream, a 503 for a request still waiting for its engine).
//
// The entries live in a SlotTable, not a Set: a churned Set's old hash tables kept every request
// alive through its scavenges once a full GC had run (src/util/slot-table.ts says how).

import { SlotTable } from '../../util/slot-table.js';

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
  private readonly entries = new SlotTable<Entry>();
  private waiters: Array<() => void> = [];

  get size(): number {
    return this.entries.size;
  }

  begin(): InFlightEntry {
    const entry: Entry = { cut: undefined };
    const slot = this.entries.add(entry);
    return {
      done: () => {
        // Done already: the slot is free, or another request's since.
        if (!this.entries.release(slot, entry)) return;
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
    const entries = this.entries.values();
    for (const e of entries) e.cut?.();
    return entries.length;
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
