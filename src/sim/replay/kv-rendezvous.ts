// Where simulated prefill and decode engines meet in virtual time, as the simulated workers meet
// over their KV side channels (src/sim/worker/handoff/kv-holds.ts): a finished prefill's blocks
// stay held on its engine under a key (a vLLM request id, a TensorRT-LLM context id, an SGLang
// bootstrap room) until one decode leg pulls them, and the prefill engine then releases them.
// A pull may wait for a prefill that has not finished yet (SGLang runs both legs at once).
// Nothing here reads a clock: pulls are answered when the prefill's step completes.

/** A finished prefill whose KV blocks are held for a decode leg. */
export interface HeldPrefill {
  promptTokens: number;
  /** Unpins the blocks on the prefill engine; false when the hold already expired there. */
  release(): boolean;
}

/** A pull's answer: the held prefill, or why there is none. */
export type PullResult = { ok: true; held: HeldPrefill } | { ok: false; reason: string };

interface Entry {
  /** A prefill leg opened the key (a decode leg that came first made the entry without it). */
  opened: boolean;
  held?: HeldPrefill;
  waiter?: (r: PullResult) => void;
}

export class KvRendezvous {
  private readonly entries = new Map<string, Entry>();
  private readonly counts = { pulled: 0, failed: 0 };

  /** A prefill for `key` started; false when the key is in use. */
  open(key: string): boolean {
    const e = this.entries.get(key);
    if (e?.opened) return false;
    if (e) e.opened = true;
    else this.entries.set(key, { opened: true });
    return true;
  }

  /** The prefill finished: its blocks wait for a pull (a waiting one takes them at once). */
  ready(key: string, held: HeldPrefill): void {
    const e = this.entries.get(key);
    if (!e) return;
    if (e.waiter) {
      this.entries.delete(key);
      e.waiter(this.take(held));
    } else {
      e.held = held;
    }
  }

  /** The prefill failed or ended without a handoff: a waiting pull learns it. */
  fail(key: string, reason: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    e.held?.release();
    if (e.waiter) {
      this.counts.failed++;
      e.waiter({ ok: false, reason });
    }
  }

  /**
   * Takes the held prefill of `key`. When it has not finished, `wait` says whether to wait for it
   * (`onResult` is then called later, unless the returned cancel is called first).
   */
  pull(key: string, wait: boolean, onResult: (r: PullResult) => void): () => void {
    const e = this.entries.get(key);
    if (e?.held) {
      this.entries.delete(key);
      onResult(this.take(e.held));
      return () => {};
    }
    if (!wait || e?.waiter) {
      this.counts.failed++;
      onResult({ ok: false, reason: e ? `the prefill of ${key} has not finished` : `nothing is held for ${key}` });
      return () => {};
    }
    const entry: Entry = e ?? { opened: false };
    entry.waiter = onResult;
    this.entries.set(key, entry);
    return () => {
      if (this.entries.get(key) !== entry || entry.waiter !== onResult) return;
      entry.waiter = undefined;
      if (!entry.opened) this.entries.delete(key); // the decode came first and gave up: the room is free again
    };
  }

  /** Handoffs still open: prefills not pulled yet, and pulls waiting. */
  get size(): number {
    return this.entries.size;
  }

  stats(): { pulled: number; failed: number; open: number } {
    return { pulled: this.counts.pulled, failed: this.counts.failed, open: this.entries.size };
  }

  private take(held: HeldPrefill): PullResult {
    if (!held.release()) {
      this.counts.failed++;
      return { ok: false, reason: 'the prefill hold expired' };
    }
    this.counts.pulled++;
    return { ok: true, held };
  }
}
