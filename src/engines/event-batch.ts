// Engine events travel a batch at a time: all the events one socket read produced. A short answer
// (a few tokens, the usage chunk, [DONE]) usually arrives in one read, so each layer between the
// engine and the client (first-event watch, booking guard, usage mapping, relay) awaits once per
// read instead of once per event; a promise hop per event and layer was most of the streaming
// path's cost. Layers keep their one-event-at-a-time iterator (EventCursor) for other callers.
import type { SseEvent } from './types.js';

export interface EventBatchSource {
  /** The next batch (never empty), or null at the end. */
  nextBatch(): Promise<readonly SseEvent[] | null>;
  /** Stops early (closes the engine leg), as on an iterator. */
  return?(): Promise<unknown>;
}

export function hasBatches(source: object): source is EventBatchSource {
  return typeof (source as Partial<EventBatchSource>).nextBatch === 'function';
}

/** A source's batches: its own when it has them, else one event per batch from its iterator. */
export function batchesOf(source: AsyncIterator<SseEvent> | EventBatchSource): EventBatchSource {
  if (hasBatches(source)) return source;
  const it = source;
  return {
    async nextBatch() {
      const r = await it.next();
      return r.done ? null : [r.value];
    },
    return: it.return ? () => it.return!() : undefined,
  };
}

/**
 * Reads batches with `pull` and hands them out either whole (nextBatch) or one event at a time
 * (next, AsyncIterator semantics); mixing the two loses and repeats nothing.
 */
export class EventCursor implements EventBatchSource {
  private batch: readonly SseEvent[] = [];
  private index = 0;

  constructor(private readonly pull: () => Promise<readonly SseEvent[] | null>) {}

  async next(): Promise<IteratorResult<SseEvent>> {
    while (this.index >= this.batch.length) {
      const b = await this.pull();
      if (b === null) return { value: undefined, done: true };
      this.batch = b;
      this.index = 0;
    }
    return { value: this.batch[this.index++], done: false };
  }

  nextBatch(): Promise<readonly SseEvent[] | null> {
    if (this.index >= this.batch.length) return this.pull();
    const rest = this.index === 0 ? this.batch : this.batch.slice(this.index);
    this.clear();
    return Promise.resolve(rest);
  }

  /** Drops what was read and not handed out (the stream is being closed). */
  clear(): void {
    this.batch = [];
    this.index = 0;
  }
}
