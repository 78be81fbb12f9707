// Reusable SharedArrayBuffers for the hashing pool's token batches. A fresh buffer costs a page
// fault per 4 KiB on first write (about 0.4 ms per MiB here, more than copying the tokens), so
// buffers are recycled: acquired for one batch, released once every thread has finished with it.

const MIN_BYTES = 1 << 20;

export class SharedScratch {
  readonly #free: SharedArrayBuffer[] = [];
  readonly #maxKept: number;
  readonly #maxKeptBytes: number;

  /** Keeps at most `maxKept` idle buffers, none larger than `maxKeptBytes`. */
  constructor(maxKept: number, maxKeptBytes: number) {
    this.#maxKept = maxKept;
    this.#maxKeptBytes = maxKeptBytes;
  }

  /** A buffer of at least `bytes` bytes, exclusively the caller's until release(). */
  acquire(bytes: number): SharedArrayBuffer {
    let best = -1;
    for (let i = 0; i < this.#free.length; i++) {
      const len = this.#free[i].byteLength;
      if (len >= bytes && (best < 0 || len < this.#free[best].byteLength)) best = i;
    }
    if (best >= 0) return this.#free.splice(best, 1)[0];
    // Powers of two, so that batches of similar sizes share buffers.
    const size = Math.max(MIN_BYTES, 2 ** Math.ceil(Math.log2(Math.max(1, bytes))));
    return new SharedArrayBuffer(size);
  }

  release(buffer: SharedArrayBuffer): void {
    if (buffer.byteLength > this.#maxKeptBytes) return;
    this.#free.push(buffer);
    if (this.#free.length > this.#maxKept) {
      // Drop the smallest: the big ones are the expensive ones to fault in again.
      let smallest = 0;
      for (let i = 1; i < this.#free.length; i++) {
        if (this.#free[i].byteLength < this.#free[smallest].byteLength) smallest = i;
      }
      this.#free.splice(smallest, 1);
    }
  }

  clear(): void {
    this.#free.length = 0;
  }

  get keptBytes(): number {
    return this.#free.reduce((sum, b) => sum + b.byteLength, 0);
  }
}
