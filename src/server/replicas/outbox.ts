// Booking events waiting to be sent: a batch leaves when it holds maxEvents, or maxDelayMs after
// its first event (0: at the end of the current event loop turn), whichever comes first. One
// message per batch keeps NATS's per-message cost off the request path under load.
import type { BookingEvent } from './protocol.js';

export interface OutboxOptions {
  maxEvents: number;
  maxDelayMs: number;
  send(events: BookingEvent[]): void;
}

export class Outbox {
  private pending: BookingEvent[] = [];
  private timer?: NodeJS.Timeout;
  private immediate?: NodeJS.Immediate;

  constructor(private readonly o: OutboxOptions) {}

  get size(): number {
    return this.pending.length;
  }

  push(e: BookingEvent): void {
    this.pending.push(e);
    if (this.pending.length >= this.o.maxEvents) {
      this.flush();
      return;
    }
    if (this.pending.length > 1) return;
    if (this.o.maxDelayMs === 0) this.immediate = setImmediate(() => this.flush());
    else this.timer = setTimeout(() => this.flush(), this.o.maxDelayMs);
  }

  /** Sends what is pending now. */
  flush(): void {
    this.cancelTimers();
    if (this.pending.length === 0) return;
    const events = this.pending;
    this.pending = [];
    this.o.send(events);
  }

  /** Forgets what is pending (an announcement will carry the state instead). */
  clear(): void {
    this.cancelTimers();
    this.pending = [];
  }

  private cancelTimers(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.immediate !== undefined) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }
}
