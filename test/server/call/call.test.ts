import { describe, expect, it } from 'vitest';
import { FrameBatcher, framesOf, isLoopback, type FrameStream } from '../../../src/server/call/call.js';

/** A stream whose frames arrive when the test pushes them. */
function pushed() {
  const queue: Array<string | null> = [];
  const waiting: Array<(f: string | null) => void> = [];
  let pulls = 0;
  const stream: FrameStream = {
    next() {
      pulls++;
      const f = queue.shift();
      if (f !== undefined) return Promise.resolve(f);
      return new Promise((r) => waiting.push(r));
    },
    cancel() {},
  };
  const push = (f: string | null) => {
    const w = waiting.shift();
    if (w) w(f);
    else queue.push(f);
  };
  return { stream, push, pulls: () => pulls };
}

describe('FrameBatcher', () => {
  it('hands out the frames ready in one turn of the event loop together', async () => {
    const b = new FrameBatcher(framesOf(['a', 'b', 'c']));
    expect(await b.nextBatch()).toEqual({ text: 'abc', done: true });
    expect(await b.nextBatch()).toEqual({ text: '', done: true });
  });

  it('ends a batch at the end of the turn and keeps the pending pull for the next one', async () => {
    const s = pushed();
    const b = new FrameBatcher(s.stream);
    s.push('1');
    s.push('2');
    expect(await b.nextBatch()).toEqual({ text: '12', done: false });
    const pullsAfterFirst = s.pulls();
    const second = b.nextBatch();
    await new Promise((r) => setTimeout(r, 5));
    expect(s.pulls()).toBe(pullsAfterFirst); // the pending pull was reused, not doubled
    s.push('3');
    expect(await second).toEqual({ text: '3', done: false });
    s.push(null);
    expect(await b.nextBatch()).toEqual({ text: '', done: true });
  });

  it('batchers of the same turn each end their batch at its end, and start afresh in the next', async () => {
    const s1 = pushed();
    const s2 = pushed();
    const b1 = new FrameBatcher(s1.stream);
    const b2 = new FrameBatcher(s2.stream);
    s1.push('a');
    s2.push('b');
    s2.push('c');
    expect(await Promise.all([b1.nextBatch(), b2.nextBatch()])).toEqual([
      { text: 'a', done: false },
      { text: 'bc', done: false },
    ]);
    const next1 = b1.nextBatch();
    const next2 = b2.nextBatch();
    await new Promise((r) => setImmediate(r));
    s1.push('d');
    s1.push('e');
    s2.push(null);
    expect(await next1).toEqual({ text: 'de', done: false });
    expect(await next2).toEqual({ text: '', done: true });
  });

  it('pulls nothing while nobody asks for a batch (backpressure)', async () => {
    const s = pushed();
    const b = new FrameBatcher(s.stream);
    s.push('x');
    await b.nextBatch();
    const pulls = s.pulls();
    await new Promise((r) => setTimeout(r, 10));
    expect(s.pulls()).toBe(pulls);
  });
});

describe('isLoopback', () => {
  it('recognises loopback peers in their usual spellings', () => {
    for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) expect(isLoopback(a)).toBe(true);
    for (const a of ['10.0.0.1', '::ffff:10.0.0.1', '', undefined]) expect(isLoopback(a)).toBe(false);
  });
});
