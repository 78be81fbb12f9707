import { describe, expect, it } from 'vitest';
import { batchesOf, EventCursor, hasBatches } from '../../src/engines/event-batch.js';
import type { SseEvent } from '../../src/engines/types.js';

const ev = (i: number): SseEvent => ({ data: String(i) });

function scripted(batches: SseEvent[][]) {
  let pulls = 0;
  const cursor = new EventCursor(async () => (pulls < batches.length ? batches[pulls++] : null));
  return { cursor, pulls: () => pulls };
}

describe('EventCursor', () => {
  it('hands out a batch whole, or its events one at a time, pulling once per batch', async () => {
    const { cursor, pulls } = scripted([[ev(1), ev(2), ev(3)], [ev(4)]]);
    expect(await cursor.next()).toEqual({ value: ev(1), done: false });
    expect(pulls()).toBe(1);
    // The rest of the first batch comes before anything new is read.
    expect(await cursor.nextBatch()).toEqual([ev(2), ev(3)]);
    expect(pulls()).toBe(1);
    expect(await cursor.nextBatch()).toEqual([ev(4)]);
    expect(await cursor.nextBatch()).toBeNull();
    expect(await cursor.next()).toEqual({ value: undefined, done: true });
  });

  it('clear() drops what was read and not handed out', async () => {
    const { cursor } = scripted([[ev(1), ev(2)], [ev(3)]]);
    await cursor.next();
    cursor.clear();
    expect(await cursor.next()).toEqual({ value: ev(3), done: false });
  });

  it('a pull failure reaches the caller, whichever way it reads', async () => {
    const cursor = new EventCursor(async () => {
      throw new Error('socket closed');
    });
    await expect(cursor.next()).rejects.toThrow('socket closed');
    await expect(cursor.nextBatch()).rejects.toThrow('socket closed');
  });
});

describe('batchesOf', () => {
  it('keeps a batch source as it is', () => {
    const { cursor } = scripted([]);
    expect(hasBatches(cursor)).toBe(true);
    expect(batchesOf(cursor)).toBe(cursor);
  });

  it('reads a plain iterator one event per batch and passes return() on', async () => {
    let returned = 0;
    async function* gen(): AsyncGenerator<SseEvent> {
      try {
        yield ev(1);
        yield ev(2);
      } finally {
        returned++;
      }
    }
    const b = batchesOf(gen());
    expect(await b.nextBatch()).toEqual([ev(1)]);
    await b.return?.();
    expect(returned).toBe(1);
    expect(await b.nextBatch()).toBeNull();
  });
});
