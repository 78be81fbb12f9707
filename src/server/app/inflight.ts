// The requests a router is serving, for a graceful drain: each registers when it starts and leaves
// when its answer is complete (a stream when it ended, whatever ended it). A drain waits until none
// is left; when its time runs out it cuts those still running (each knows how to end itself:
// an error frame for a stream, a 503 for a request still waiting for its engine).

export interface InFlightEntry {
  /** The request's answer is complete. Idempotent. */
  done(): void;
  /** How to end the request at once (set once it knows how). */
  onCut(cut: () => void): void;
}

interface Entry {
  cut?: () => void;
}

export class InFlight {
  private readonly active = new Set<Entry>();
  private waiters: Array<() => void> = [];

  get size(): number {
    return this.active.size;
  }

  begin(): InFlightEntry {
    const entry: Entry = {};
    this.active.add(entry);
    return {
      done: () => {
        if (this.active.delete(entry) && this.active.size === 0) this.wake();
      },
      onCut: (cut) => {
        entry.cut = cut;
      },
    };
  }

  /** Resolves when nothing is in flight (at once when nothing is). */
  idle(): Promise<void> {
    if (this.active.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Ends every request still in flight; returns how many there were. */
  cutAll(): number {
    const entries = [...this.active];
    for (const e of entries) e.cut?.();
    return entries.length;
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
