// A booking is freed exactly once, whatever happens to its request. BookingGuard is the once;
// GuardedStream ties it to an engine stream handed to a consumer and frees it when the stream
// ends, fails, is aborted (the client's signal), is closed by its consumer (return()), is not read
// for too long (never read at all, or stopped mid-stream), or is garbage-collected unfinished. The
// last two also close the engine leg, so an abandoned stream cannot hold an engine slot either.
import type { SignalLike } from '../util/cancellation.js';
import { abortError } from '../engines/errors.js';
import { batchesOf, EventCursor, type EventBatchSource } from '../engines/event-batch.js';
import type { SseEvent } from '../engines/types.js';
import { SlotTable } from '../util/slot-table.js';

export type FreeReason =
  | 'end' // the engine ended the stream / answered
  | 'error' // the engine leg failed
  | 'abort' // the client's signal fired
  | 'disconnect' // the consumer closed the stream (return())
  | 'abandoned' // the consumer stopped pulling for longer than allowed
  | 'collected' // the stream object was garbage-collected unfinished
  | 'cancelled'; // the router gave the leg up (peer leg failed, fallback)

export interface Freeable {
  free(requestId: string): boolean;
}

export class BookingGuard {
  private freedBy: FreeReason | undefined;

  constructor(
    private readonly core: Freeable,
    readonly requestId: string,
    private readonly onFree?: (reason: FreeReason) => void,
  ) {}

  get freed(): boolean {
    return this.freedBy !== undefined;
  }

  get reason(): FreeReason | undefined {
    return this.freedBy;
  }

  /** Frees the booking the first time; later calls change nothing and return false. */
  free(reason: FreeReason): boolean {
    if (this.freedBy !== undefined) return false;
    this.freedBy = reason;
    try {
      this.core.free(this.requestId);
    } finally {
      this.onFree?.(reason);
    }
    return true;
  }
}

export class StreamAbandonedError extends Error {
  override name = 'StreamAbandonedError';
  readonly code = 'stream_abandoned';
}

export interface GuardedStreamOptions {
  /** The engine's events. */
  source: AsyncIterator<SseEvent> | EventBatchSource;
  /**
   * Closes the engine leg (idempotent). When it returns a promise (a leg that must run a little
   * longer before it can be closed safely), the booking is freed once that promise settles.
   */
  cancel(): void | Promise<void>;
  guard: BookingGuard;
  /** A consumer that does not pull for this long (from creation, or since the last event) abandons the stream. */
  abandonAfterMs: number;
  /** The client's signal: aborting frees the booking and closes the leg. */
  signal?: SignalLike;
  /** Sees each event before the consumer does (first-token marking, metrics). */
  onEvent?(ev: SseEvent): void;
  /** Called once when the stream finishes, with why (and the error for 'error'). */
  onFinish?(reason: FreeReason, err?: unknown): void;
}

/**
 * Everything the finishing paths need, kept apart from the GuardedStream object itself: the timer,
 * the abort listener and the `unfinished` table reference this, never the stream, so an
 * unreferenced stream can really be collected.
 */
class StreamState {
  finished: FreeReason | undefined;
  // Abandonment: one timer per stream, re-aimed only when it fires (a timer set and cleared per
  // event cost an allocation each, the largest per-request garbage in a short stream). While
  // `pulling`, the consumer is waiting for the engine, which never counts as abandonment.
  private timer: NodeJS.Timeout | undefined;
  private pulling = false;
  private idleSince = 0;

  /** The stream's slot in `unfinished`, its finalization registration's holdings (see GuardedStream). */
  readonly key: number;

  constructor(
    private readonly o: GuardedStreamOptions,
    readonly unregisterToken: object,
  ) {
    this.key = unfinished.add(this);
  }

  readonly onAbort = (): void => {
    this.finish('abort');
  };

  finish(reason: FreeReason, err?: unknown): boolean {
    if (this.finished !== undefined) return false;
    this.finished = reason;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.o.signal?.removeEventListener('abort', this.onAbort);
    unfinished.release(this.key, this);
    collected.unregister(this.unregisterToken);
    const closing = reason === 'end' ? undefined : this.o.cancel();
    if (closing instanceof Promise) {
      void closing.catch(() => {}).finally(() => this.free(reason, err));
    } else {
      this.free(reason, err);
    }
    return true;
  }

  private free(reason: FreeReason, err: unknown): void {
    this.o.guard.free(reason);
    this.o.onFinish?.(reason, err);
  }

  /** The consumer asked for the next event. */
  pullStarted(): void {
    this.pulling = true;
  }

  /** An event was handed over (or the stream was created): the consumer's clock starts. */
  pullEnded(): void {
    this.pulling = false;
    this.idleSince = performance.now();
    if (this.timer === undefined && this.finished === undefined) this.schedule(this.o.abandonAfterMs);
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(this.check, ms);
    this.timer.unref();
  }

  private readonly check = (): void => {
    this.timer = undefined;
    if (this.finished !== undefined || this.pulling) return; // the next pullEnded() re-arms
    const left = this.idleSince + this.o.abandonAfterMs - performance.now();
    // Timers may fire up to a millisecond early: only a whole remaining millisecond re-aims.
    if (left >= 1) this.schedule(left);
    else this.finish('abandoned');
  };
}

// The registry's holdings are a number, never the state: V8 allocates a registration's cell in
// the old generation, and a scavenge cannot tell that a cell is dead, so holdings referenced from
// it survived every young collection with the whole request behind them (about 25 KB promoted per
// request, full GCs every ~1.5 s at 1,000 req/s). The state is found through `unfinished` instead,
// whose slot is freed the moment the stream finishes. The registered target is likewise a tiny
// empty object owned by the stream (not the stream and what it references).
//
// A SlotTable, not a Map: a Map whose entries come and go is shrunk and rehashed into new tables
// as it churns (a cost per request in the profile), and its old tables can keep requests alive
// (src/util/slot-table.ts). A slot is reused only after its stream finished, which also
// unregistered it: no callback of the registry can find another stream's state there.
const unfinished = new SlotTable<StreamState>();
const collected = new FinalizationRegistry<number>((slot) => unfinished.get(slot)?.finish('collected'));

export class GuardedStream implements AsyncIterable<SseEvent>, AsyncIterator<SseEvent>, EventBatchSource {
  private readonly state: StreamState;
  private readonly o: GuardedStreamOptions;
  private readonly source: EventBatchSource;
  private readonly cursor = new EventCursor(() => this.readBatch());
  /** Collected exactly when this stream is: the finalization registry's target. */
  private readonly lifetime = {};
  private iterating = false;

  constructor(o: GuardedStreamOptions) {
    if (!Number.isFinite(o.abandonAfterMs) || o.abandonAfterMs <= 0) throw new RangeError(`abandonAfterMs must be a positive number, got ${o.abandonAfterMs}`);
    this.o = o;
    this.source = batchesOf(o.source);
    const state = new StreamState(o, {});
    this.state = state;
    collected.register(this.lifetime, state.key, state.unregisterToken);
    if (o.signal?.aborted) {
      state.finish('abort');
      return;
    }
    o.signal?.addEventListener('abort', state.onAbort, { once: true });
    state.pullEnded();
  }

  /** Why the stream finished, or undefined while it runs. */
  get finishedBy(): FreeReason | undefined {
    return this.state.finished;
  }

  [Symbol.asyncIterator](): AsyncIterator<SseEvent> {
    if (this.iterating) throw new TypeError('a routed stream can be iterated only once');
    this.iterating = true;
    return this;
  }

  // Not async functions: an async function returning the cursor's promise wraps it in one more
  // promise that takes extra microtask turns to adopt it, on every pull of every stream.
  next(): Promise<IteratorResult<SseEvent>> {
    if (this.state.finished !== undefined) return settle(() => this.afterFinish());
    return this.cursor.next();
  }

  nextBatch(): Promise<readonly SseEvent[] | null> {
    if (this.state.finished !== undefined) return settle(() => this.afterFinishBatch());
    return this.cursor.nextBatch();
  }

  /** Pulled by the cursor, only after next()/nextBatch() found the stream unfinished. */
  private async readBatch(): Promise<readonly SseEvent[] | null> {
    const s = this.state;
    let batch: readonly SseEvent[] | null;
    s.pullStarted();
    try {
      batch = await this.source.nextBatch();
    } catch (err) {
      if (s.finished !== undefined) return this.afterFinishBatch();
      s.finish('error', err);
      throw err;
    }
    if (s.finished !== undefined) return this.afterFinishBatch();
    if (batch === null) {
      s.finish('end');
      return null;
    }
    const onEvent = this.o.onEvent;
    try {
      if (onEvent) for (const ev of batch) onEvent(ev);
    } catch (err) {
      s.finish('error', err);
      throw err;
    }
    s.pullEnded();
    return batch;
  }

  async return(): Promise<IteratorResult<SseEvent>> {
    this.state.finish('disconnect');
    return { value: undefined, done: true };
  }

  private afterFinishBatch(): null {
    this.afterFinish();
    return null;
  }

  private afterFinish(): IteratorResult<SseEvent> {
    const reason = this.state.finished;
    if (reason === 'abort') throw abortError(this.o.signal);
    if (reason === 'abandoned' || reason === 'collected') {
      throw new StreamAbandonedError(`the stream was not read for ${this.o.abandonAfterMs} ms and was closed; its booking is freed`);
    }
    return { value: undefined, done: true };
  }
}

/** `fn()`'s value as a promise, or its exception as a rejected one (what an async function returns). */
function settle<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err);
  }
}

/** A stream whose events pass through `map` (sync or async); return() reaches the source at once. */
export class MappedStream implements AsyncIterable<SseEvent>, AsyncIterator<SseEvent>, EventBatchSource {
  private iterating = false;
  private readonly source: EventBatchSource;
  private readonly cursor = new EventCursor(() => this.readBatch());

  constructor(
    source: AsyncIterator<SseEvent> | EventBatchSource,
    private readonly map: (ev: SseEvent) => SseEvent | Promise<SseEvent>,
  ) {
    this.source = batchesOf(source);
  }

  [Symbol.asyncIterator](): AsyncIterator<SseEvent> {
    if (this.iterating) throw new TypeError('a routed stream can be iterated only once');
    this.iterating = true;
    return this;
  }

  next(): Promise<IteratorResult<SseEvent>> {
    return this.cursor.next();
  }

  nextBatch(): Promise<readonly SseEvent[] | null> {
    return this.cursor.nextBatch();
  }

  private async readBatch(): Promise<readonly SseEvent[] | null> {
    const batch = await this.source.nextBatch();
    if (batch === null) return null;
    let mapped: SseEvent[] | undefined; // copied on the first event the map changes
    for (let i = 0; i < batch.length; i++) {
      const m = this.map(batch[i]);
      const ev = m instanceof Promise ? await m : m;
      if (ev !== batch[i]) (mapped ??= batch.slice())[i] = ev;
    }
    return mapped ?? batch;
  }

  async return(): Promise<IteratorResult<SseEvent>> {
    this.cursor.clear();
    await this.source.return?.();
    return { value: undefined, done: true };
  }
}
