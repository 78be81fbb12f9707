// What a prefill worker holds for decode workers: per handoff key (a vLLM request id, an SGLang
// bootstrap room, a TensorRT-LLM context request id), the finished prefill whose KV blocks stay
// pinned until a decode worker pulls them or the hold times out. A pull may arrive before the
// prefill finished (SGLang runs both legs at once): it waits, up to its own deadline.

export interface HeldPrefill {
  /** The engine request whose blocks are pinned. */
  engineRequestId: string;
  promptTokens: number;
  blockIds: number[];
}

export type PullResult = { ok: true; held: HeldPrefill } | { ok: false; status: 404 | 409 | 410; reason: string };

interface Entry {
  engineRequestId: string;
  held?: HeldPrefill;
  holdTimer?: NodeJS.Timeout;
}

interface Waiter {
  resolve(r: PullResult): void;
  timer: NodeJS.Timeout;
}

export interface KvHoldsOptions {
  /** A finished prefill nobody pulls is released after this long. */
  holdMs: number;
  /** Unpins the blocks of an engine request (EngineModel.release). */
  release(engineRequestId: string): void;
}

export class KvHolds {
  private readonly entries = new Map<string, Entry>();
  private readonly waiters = new Map<string, Set<Waiter>>();
  private stats = { held: 0, pulled: 0, expired: 0, failed: 0 };

  constructor(private readonly opts: KvHoldsOptions) {}

  /** A prefill for `key` has started; false when the key is already in use. */
  open(key: string, engineRequestId: string): boolean {
    if (this.entries.has(key)) return false;
    this.entries.set(key, { engineRequestId });
    return true;
  }

  /** The prefill finished: hold its blocks for a pull (answering any waiting one at once). */
  ready(key: string, held: HeldPrefill): void {
    const entry = this.entries.get(key);
    if (!entry || entry.held) return;
    entry.held = held;
    this.stats.held++;
    if (this.answerWaiters(key)) return;
    entry.holdTimer = setTimeout(() => {
      if (this.entries.get(key) !== entry) return;
      this.entries.delete(key);
      this.stats.expired++;
      this.opts.release(entry.engineRequestId);
    }, this.opts.holdMs);
    entry.holdTimer.unref();
  }

  /** The prefill failed or will not be handed off: unpin and tell waiting pulls. */
  fail(key: string, reason: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    clearTimeout(entry.holdTimer);
    this.stats.failed++;
    this.opts.release(entry.engineRequestId);
    this.settleWaiters(key, { ok: false, status: 410, reason });
  }

  /**
   * Takes the held prefill of `key` (unpinning its blocks: the KV now lives on the decode side),
   * waiting up to `waitMs` for it to be opened and finish.
   */
  pull(key: string, waitMs: number, signal?: AbortSignal): Promise<PullResult> {
    const entry = this.entries.get(key);
    if (entry?.held) return Promise.resolve(this.take(key, entry));
    if (waitMs <= 0) {
      return Promise.resolve({ ok: false, status: 404, reason: entry ? `the prefill of ${key} has not finished` : `nothing is held for ${key}` });
    }
    return new Promise((resolve) => {
      const set = this.waiters.get(key) ?? new Set<Waiter>();
      this.waiters.set(key, set);
      const waiter: Waiter = {
        resolve: (r) => {
          clearTimeout(waiter.timer);
          signal?.removeEventListener('abort', onAbort);
          set.delete(waiter);
          if (set.size === 0 && this.waiters.get(key) === set) this.waiters.delete(key);
          resolve(r);
        },
        timer: setTimeout(() => waiter.resolve({ ok: false, status: 404, reason: `no prefill for ${key} within ${waitMs} ms` }), waitMs),
      };
      const onAbort = () => waiter.resolve({ ok: false, status: 409, reason: 'the pull was cancelled' });
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      set.add(waiter);
    });
  }

  /** Drops everything (engine restart): held blocks are gone with the old engine state. */
  clear(reason: string): void {
    for (const [key, entry] of this.entries) {
      clearTimeout(entry.holdTimer);
      this.settleWaiters(key, { ok: false, status: 410, reason });
    }
    this.entries.clear();
    for (const key of [...this.waiters.keys()]) this.settleWaiters(key, { ok: false, status: 410, reason });
  }

  get size(): number {
    return this.entries.size;
  }

  counters(): { held: number; pulled: number; expired: number; failed: number; active: number } {
    return { ...this.stats, active: this.entries.size };
  }

  private answerWaiters(key: string): boolean {
    const set = this.waiters.get(key);
    const first = set?.values().next().value;
    if (!first) return false;
    const entry = this.entries.get(key) as Entry;
    first.resolve(this.take(key, entry));
    // One prefill feeds one decode: any other waiter for the same key learns it is gone.
    this.settleWaiters(key, { ok: false, status: 410, reason: `the prefill of ${key} was already pulled` });
    return true;
  }

  private take(key: string, entry: Entry): PullResult {
    this.entries.delete(key);
    clearTimeout(entry.holdTimer);
    this.stats.pulled++;
    this.opts.release(entry.engineRequestId);
    return { ok: true, held: entry.held as HeldPrefill };
  }

  private settleWaiters(key: string, r: PullResult): void {
    const set = this.waiters.get(key);
    if (!set) return;
    for (const w of [...set]) w.resolve(r);
  }
}
