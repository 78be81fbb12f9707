// Timers in virtual time (src/util/timers.ts's `Timers`): the replay loop fires them when its
// clock reaches them, in the order they are due (ties in the order they were set), so a
// router queue's wait limit sheds a request at its deadline even when nothing else happens.
import type { Timers } from '../../util/timers.js';
import { EventQueue } from './event-queue.js';

interface Pending {
  fn: () => void;
  cancelled: boolean;
}

export class VirtualTimers implements Timers {
  private readonly due = new EventQueue<Pending>();

  at(atMs: number, fn: () => void): () => void {
    const p: Pending = { fn, cancelled: false };
    this.due.push(atMs, p);
    return () => void (p.cancelled = true);
  }

  /** When the next live timer is due (Infinity: none). */
  nextTime(): number {
    this.dropCancelled();
    return this.due.peekTime();
  }

  /** Fires the next live timer (the caller has set its clock to nextTime()). */
  fireNext(): void {
    this.dropCancelled();
    const p = this.due.popItem();
    if (p) p.fn();
  }

  // Cancelled timers are dropped lazily, when they reach the front.
  private dropCancelled(): void {
    while (this.due.peekItem()?.cancelled) this.due.popItem();
  }
}
