// Sequence tracking for one publisher (one engine process and dp rank), pure. A publisher numbers
// its batches from 0; the subscriber expects last + 1. More is a gap (batches were lost: replay
// them); less, or the same again, means the engine restarted (ZeroMQ never duplicates a message).
// A new tracker expects 0, so joining a publisher that is already running is a gap from 0: the
// replay buffer then supplies the history (vLLM's reference subscriber does the same).

export type SeqVerdict =
  | { kind: 'next' }
  | { kind: 'gap'; from: bigint; to: bigint } // missing: [from, to] inclusive
  | { kind: 'restart' }
  | { kind: 'duplicate' }; // already applied through a replay

export class SequenceTracker {
  /** The last sequence number applied; -1 before any. */
  private last = -1n;
  /** Live batches in (dupFrom, dupTo] were already applied by a replay that overtook the live feed. */
  private dupFrom = 0n;
  private dupTo = -1n;

  get lastApplied(): bigint | null {
    return this.last < 0n ? null : this.last;
  }

  /** The first sequence number still missing. */
  get expected(): bigint {
    return this.last + 1n;
  }

  /** Classifies a live batch's sequence number (does not record it: see `applied`). */
  classify(seq: bigint): SeqVerdict {
    if (seq > this.dupFrom && seq <= this.dupTo) return { kind: 'duplicate' };
    if (seq === this.last + 1n) return { kind: 'next' };
    if (seq > this.last + 1n) return { kind: 'gap', from: this.last + 1n, to: seq - 1n };
    return { kind: 'restart' };
  }

  /** Records that the batch `seq` has been applied (live or replayed). */
  applied(seq: bigint): void {
    this.last = seq;
    if (seq > this.dupTo) this.dupTo = -1n;
  }

  /**
   * After a replay asked because of the live batch `liveSeq` and applied batches up to
   * `lastApplied`: live batches after `liveSeq` up to there, queued while the replay ran, are
   * duplicates rather than a restart.
   */
  replayedThrough(liveSeq: bigint): void {
    if (this.last <= liveSeq) return;
    // A window still open (a restarted engine's whole replay) is widened, never narrowed.
    this.dupFrom = this.dupTo >= 0n && this.dupFrom < liveSeq ? this.dupFrom : liveSeq;
    this.dupTo = this.last;
  }

  /** Forgets everything: the next batch is expected to be 0 (after a restart or a cleared index). */
  reset(): void {
    this.last = -1n;
    this.dupFrom = 0n;
    this.dupTo = -1n;
  }

  /** Starts over from `seq` as if everything before it had been applied (an unrecoverable gap). */
  resumeAt(seq: bigint): void {
    this.reset();
    this.last = seq;
  }
}
