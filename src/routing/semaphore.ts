// A FIFO counting semaphore whose permits are objects released at most once, so a permit can be
// handed to a background task and released there (or dropped on any path) without double counting.
import type { SignalLike } from '../util/cancellation.js';
import { abortError } from '../engines/errors.js';

export class Permit {
  private released = false;
  constructor(private readonly onRelease: () => void) {}

  get isReleased(): boolean {
    return this.released;
  }

  /** Returns the permit (idempotent). */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.onRelease();
  }
}

interface Waiter {
  grant(p: Permit): void;
}

export class Semaphore {
  private available: number;
  private readonly waiters: Waiter[] = [];

  constructor(readonly permits: number) {
    if (!Number.isInteger(permits) || permits < 1) throw new RangeError(`permits must be a positive integer, got ${permits}`);
    this.available = permits;
  }

  get free(): number {
    return this.available;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  /** A permit now, or undefined when none is free. */
  tryAcquire(): Permit | undefined {
    if (this.available === 0 || this.waiters.length > 0) return undefined;
    this.available--;
    return this.permit();
  }

  /** Waits for a permit in arrival order; rejects with an AbortError if `signal` fires first. */
  acquire(signal?: SignalLike): Promise<Permit> {
    const now = this.tryAcquire();
    if (now) return Promise.resolve(now);
    if (signal?.aborted) return Promise.reject(abortError(signal));
    return new Promise<Permit>((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(abortError(signal));
      };
      const waiter: Waiter = {
        grant: (p) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(p);
        },
      };
      this.waiters.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private permit(): Permit {
    return new Permit(() => {
      const next = this.waiters.shift();
      if (next) next.grant(this.permit());
      else this.available++;
    });
  }
}
