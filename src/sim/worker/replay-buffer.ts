// The last N published event batches, by sequence number, for the replay socket (vLLM keeps
// `buffer_steps` of them, default 10,000). A fixed ring: publishing never allocates per batch.

export interface BufferedBatch {
  seq: number;
  payload: Buffer;
}

export class ReplayBuffer {
  private readonly ring: (BufferedBatch | undefined)[];
  private start = 0;
  private count = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`replayBufferSteps must be an integer >= 1, got ${capacity}`);
    }
    this.ring = new Array(capacity);
  }

  get size(): number {
    return this.count;
  }

  /** Appends a batch; the oldest falls out when full. Sequence numbers must increase. */
  push(seq: number, payload: Buffer): void {
    const last = this.count > 0 ? this.at(this.count - 1).seq : -1;
    if (seq <= last) throw new RangeError(`replay buffer sequence numbers must increase: ${seq} after ${last}`);
    if (this.count < this.capacity) {
      this.ring[(this.start + this.count) % this.capacity] = { seq, payload };
      this.count++;
    } else {
      this.ring[this.start] = { seq, payload };
      this.start = (this.start + 1) % this.capacity;
    }
  }

  /** The buffered batches with seq >= startSeq, oldest first (a snapshot: later pushes do not show). */
  since(startSeq: number): BufferedBatch[] {
    const out: BufferedBatch[] = [];
    // Binary search for the first seq >= startSeq: sequence numbers increase along the ring.
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.at(mid).seq < startSeq) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.count; i++) out.push(this.at(i));
    return out;
  }

  /** The oldest buffered sequence number, or undefined when empty. */
  oldestSeq(): number | undefined {
    return this.count > 0 ? this.at(0).seq : undefined;
  }

  clear(): void {
    this.ring.fill(undefined);
    this.start = 0;
    this.count = 0;
  }

  private at(i: number): BufferedBatch {
    return this.ring[(this.start + i) % this.capacity] as BufferedBatch;
  }
}
