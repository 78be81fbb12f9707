import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { isAbortError } from '../../src/engines/errors.js';
import { EventCursor } from '../../src/engines/event-batch.js';
import type { SseEvent } from '../../src/engines/types.js';
import { BookingGuard, type FreeReason, GuardedStream, MappedStream, StreamAbandonedError } from '../../src/routing/booking-guard.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Counts frees per id, as RoutingCore.free would (false when unknown or already freed). */
class CountingCore {
  readonly frees = new Map<string, number>();
  free(id: string): boolean {
    const n = this.frees.get(id) ?? 0;
    this.frees.set(id, n + 1);
    return n === 0;
  }
}

/** An engine-like source: events pushed by the test, pending next() until then, cancel observable. */
class ScriptedSource implements AsyncIterator<SseEvent> {
  cancelled = 0;
  private queue: Array<SseEvent | 'end' | Error> = [];
  private waiting: ((v: SseEvent | 'end' | Error) => void) | undefined;

  push(item: SseEvent | 'end' | Error) {
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = undefined;
      w(item);
    } else this.queue.push(item);
  }

  async next(): Promise<IteratorResult<SseEvent>> {
    const item = this.queue.shift() ?? (await new Promise<SseEvent | 'end' | Error>((r) => (this.waiting = r)));
    if (item === 'end') return { value: undefined, done: true };
    if (item instanceof Error) throw item;
    return { value: item, done: false };
  }

  cancel = () => {
    this.cancelled++;
    this.push(new Error('cancelled by the guard'));
  };
}

function setup(opts: { abandonAfterMs?: number; signal?: AbortSignal } = {}) {
  const core = new CountingCore();
  const source = new ScriptedSource();
  const finishes: FreeReason[] = [];
  const guard = new BookingGuard(core, 'req');
  const stream = new GuardedStream({
    source,
    cancel: source.cancel,
    guard,
    abandonAfterMs: opts.abandonAfterMs ?? 60_000,
    signal: opts.signal,
    onFinish: (r) => finishes.push(r),
  });
  return { core, source, guard, stream, finishes };
}

const ev = (i: number): SseEvent => ({ data: `{"i":${i}}`, json: { i } });

describe('BookingGuard', () => {
  it('frees exactly once and reports the first reason', () => {
    const core = new CountingCore();
    const reasons: FreeReason[] = [];
    const g = new BookingGuard(core, 'a', (r) => reasons.push(r));
    expect(g.freed).toBe(false);
    expect(g.free('end')).toBe(true);
    expect(g.free('error')).toBe(false);
    expect(g.free('abort')).toBe(false);
    expect(core.frees.get('a')).toBe(1);
    expect(g.reason).toBe('end');
    expect(reasons).toEqual(['end']);
  });
});

describe('GuardedStream frees exactly once on every path', () => {
  it('end: the engine finished', async () => {
    const { core, source, stream, finishes } = setup();
    source.push(ev(0));
    source.push('end');
    const got = [];
    for await (const e of stream) got.push(e);
    expect(got).toEqual([ev(0)]);
    expect(core.frees.get('req')).toBe(1);
    expect(finishes).toEqual(['end']);
    expect(source.cancelled).toBe(0);
    await expect(stream.next()).resolves.toEqual({ value: undefined, done: true });
  });

  it('error: the engine failed mid-stream', async () => {
    const { core, source, stream, finishes } = setup();
    source.push(ev(0));
    source.push(new Error('engine died'));
    await expect(async () => {
      for await (const _ of stream) void _;
    }).rejects.toThrow('engine died');
    expect(core.frees.get('req')).toBe(1);
    expect(finishes).toEqual(['error']);
  });

  it('abort: the client signal fires while a read is pending, and before creation', async () => {
    const ac = new AbortController();
    const { core, source, stream, finishes } = setup({ signal: ac.signal });
    const pending = stream.next();
    ac.abort();
    await expect(pending).rejects.toSatisfy(isAbortError);
    expect(source.cancelled).toBe(1);
    expect(core.frees.get('req')).toBe(1);
    expect(finishes).toEqual(['abort']);

    const early = setup({ signal: AbortSignal.abort() });
    expect(early.core.frees.get('req')).toBe(1);
    expect(early.source.cancelled).toBe(1);
    await expect(early.stream.next()).rejects.toSatisfy(isAbortError);
  });

  it('disconnect: the consumer breaks out, even while a read is pending', async () => {
    const { core, source, stream, finishes } = setup();
    source.push(ev(0));
    for await (const _ of stream) break;
    expect(finishes).toEqual(['disconnect']);
    expect(source.cancelled).toBe(1);

    const b = setup();
    const pending = b.stream.next();
    await b.stream.return();
    await expect(pending).resolves.toEqual({ value: undefined, done: true });
    expect(b.core.frees.get('req')).toBe(1);
    expect(core.frees.get('req')).toBe(1);
  });

  it('abandoned: a stream never read, or one whose reader stopped, is closed after the limit', async () => {
    const never = setup({ abandonAfterMs: 30 });
    await new Promise((r) => setTimeout(r, 80));
    expect(never.finishes).toEqual(['abandoned']);
    expect(never.source.cancelled).toBe(1);
    expect(never.core.frees.get('req')).toBe(1);
    await expect(never.stream.next()).rejects.toThrow(StreamAbandonedError);

    const stopped = setup({ abandonAfterMs: 30 });
    stopped.source.push(ev(0));
    stopped.source.push(ev(1));
    await stopped.stream.next();
    await new Promise((r) => setTimeout(r, 80));
    expect(stopped.finishes).toEqual(['abandoned']);
    expect(stopped.core.frees.get('req')).toBe(1);
  });

  it('a consumer that keeps pulling is never abandoned, however slow the engine', async () => {
    const { source, stream, finishes } = setup({ abandonAfterMs: 30 });
    const pending = stream.next(); // the engine is slow: the timer does not run while we wait on it
    await new Promise((r) => setTimeout(r, 80));
    source.push(ev(0));
    await expect(pending).resolves.toEqual({ value: ev(0), done: false });
    source.push('end');
    await expect(stream.next()).resolves.toMatchObject({ done: true });
    expect(finishes).toEqual(['end']);
  });

  it('collected: an unfinished stream dropped without a reference is freed by the finalizer', async () => {
    const core = new CountingCore();
    const cancelled: string[] = [];
    const make = (id: string) => {
      const source = new ScriptedSource();
      // Nothing outside keeps the GuardedStream: only the (long) timer and the registry know its state.
      new GuardedStream({ source, cancel: () => void cancelled.push(id), guard: new BookingGuard(core, id), abandonAfterMs: 3_600_000 });
    };
    for (let i = 0; i < 20; i++) make(`c${i}`);
    for (let round = 0; round < 50 && core.frees.size < 20; round++) {
      gc();
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(core.frees.size).toBe(20);
    expect([...core.frees.values()].every((n) => n === 1)).toBe(true);
    expect(cancelled.sort()).toEqual(Array.from({ length: 20 }, (_, i) => `c${i}`).sort());
  });

  it('a finished stream is not freed again by the finalizer', async () => {
    const core = new CountingCore();
    (() => {
      const source = new ScriptedSource();
      const g = new GuardedStream({ source, cancel: source.cancel, guard: new BookingGuard(core, 'x'), abandonAfterMs: 3_600_000 });
      void g.return();
    })();
    for (let i = 0; i < 5; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(core.frees.get('x')).toBe(1);
  });

  it('every path together: each finishing combination frees once', async () => {
    const ac = new AbortController();
    const { core, source, stream } = setup({ signal: ac.signal, abandonAfterMs: 20 });
    source.push(ev(0));
    await stream.next();
    ac.abort();
    await stream.return();
    source.push('end');
    await new Promise((r) => setTimeout(r, 50));
    expect(core.frees.get('req')).toBe(1);
  });

  it('an asynchronous cancel frees the booking only once the leg is really closed', async () => {
    const core = new CountingCore();
    const source = new ScriptedSource();
    let close!: () => void;
    const closed = new Promise<void>((r) => (close = r));
    const finishes: FreeReason[] = [];
    const stream = new GuardedStream({
      source,
      cancel: () => closed,
      guard: new BookingGuard(core, 'slow'),
      abandonAfterMs: 60_000,
      onFinish: (r) => finishes.push(r),
    });
    await stream.return();
    await new Promise((r) => setTimeout(r, 20));
    expect(core.frees.get('slow')).toBeUndefined();
    expect(stream.finishedBy).toBe('disconnect');
    close();
    await new Promise((r) => setTimeout(r, 0));
    expect(core.frees.get('slow')).toBe(1);
    expect(finishes).toEqual(['disconnect']);
  });

  it('batches: the events of one engine read pass in one pull, each seen by onEvent, and the end frees', async () => {
    const core = new CountingCore();
    const batches: SseEvent[][] = [[ev(1), ev(2), ev(3)], [ev(4)]];
    let reads = 0;
    const source = new EventCursor(async () => (reads < batches.length ? batches[reads++] : null));
    const seen: SseEvent[] = [];
    const finishes: FreeReason[] = [];
    const stream = new GuardedStream({
      source,
      cancel: () => {},
      guard: new BookingGuard(core, 'b'),
      abandonAfterMs: 60_000,
      onEvent: (e) => seen.push(e),
      onFinish: (r) => finishes.push(r),
    });
    expect(await stream.nextBatch()).toEqual([ev(1), ev(2), ev(3)]);
    expect(seen).toEqual([ev(1), ev(2), ev(3)]);
    expect(await stream.next()).toEqual({ value: ev(4), done: false });
    expect(await stream.nextBatch()).toBeNull();
    expect(core.frees.get('b')).toBe(1);
    expect(finishes).toEqual(['end']);
    expect(await stream.nextBatch()).toBeNull();
  });

  it('batches: an abort while a batch read is pending rejects it with an AbortError', async () => {
    const ac = new AbortController();
    const { core, stream } = setup({ signal: ac.signal });
    const pending = stream.nextBatch();
    ac.abort();
    await expect(pending).rejects.toSatisfy(isAbortError);
    await expect(stream.nextBatch()).rejects.toSatisfy(isAbortError);
    expect(core.frees.get('req')).toBe(1);
  });

  it('iterates once and validates its limit', () => {
    const { stream } = setup();
    stream[Symbol.asyncIterator]();
    expect(() => stream[Symbol.asyncIterator]()).toThrow(/only once/);
    void stream.return();
    const source = new ScriptedSource();
    expect(() => new GuardedStream({ source, cancel: source.cancel, guard: new BookingGuard(new CountingCore(), 'y'), abandonAfterMs: 0 })).toThrow(RangeError);
  });
});

describe('MappedStream', () => {
  it('maps events and forwards return() at once', async () => {
    const { core, source, stream } = setup();
    const mapped = new MappedStream(stream, async (e) => ({ data: `${e.data}!` }));
    source.push(ev(1));
    expect(await mapped.next()).toEqual({ value: { data: '{"i":1}!' }, done: false });
    const pending = mapped.next();
    await mapped.return();
    await expect(pending).resolves.toMatchObject({ done: true });
    expect(core.frees.get('req')).toBe(1);
  });

  it('maps a whole batch, copying it only when an event changes, sync maps included', async () => {
    const batch = [ev(1), ev(2), ev(3)];
    let served = false;
    const source = new EventCursor(async () => (served ? null : ((served = true), batch)));
    const same = new MappedStream(source, (e) => e);
    expect(await same.nextBatch()).toBe(batch);
    served = false;
    const changed = new MappedStream(source, (e) => (e.data === '{"i":2}' ? Promise.resolve({ data: 'two' }) : e));
    expect(await changed.nextBatch()).toEqual([ev(1), { data: 'two' }, ev(3)]);
    expect(batch[1]).toEqual(ev(2)); // the source's batch is untouched
  });
});
