// The "hang" fault at the HTTP edge: while closed, requests are parked unanswered (a hung engine
// accepts connections and says nothing); reopening runs them in arrival order. A parked client
// that gives up is forgotten.
import type { HttpExchange } from './http-server.js';

interface Parked {
  ex: HttpExchange;
  start(): void;
  drop(): void;
}

export class RequestGate {
  private closed = false;
  private parked: Parked[] = [];

  get parkedCount(): number {
    return this.parked.length;
  }

  /** Runs `fn` now, or when the gate reopens; the promise settles with `fn`'s. */
  run(ex: HttpExchange, fn: (ex: HttpExchange) => void | Promise<void>): Promise<void> {
    if (!this.closed) return Promise.resolve().then(() => fn(ex));
    return new Promise<void>((resolve, reject) => {
      const entry: Parked = {
        ex,
        start: () => {
          Promise.resolve()
            .then(() => fn(ex))
            .then(resolve, reject);
        },
        drop: () => resolve(),
      };
      this.parked.push(entry);
      ex.onAbort(() => {
        this.parked = this.parked.filter((p) => p !== entry);
        entry.drop();
      });
    });
  }

  setClosed(closed: boolean): void {
    this.closed = closed;
    if (closed) return;
    for (const p of this.parked.splice(0)) {
      if (p.ex.finished) p.drop();
      else p.start();
    }
  }

  /** Forgets every parked request (the worker is shutting down and closes their connections). */
  closeAll(): void {
    for (const p of this.parked.splice(0)) p.drop();
  }
}
