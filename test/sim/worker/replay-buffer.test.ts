import { describe, expect, it } from 'vitest';
import { ReplayBuffer } from '../../../src/sim/worker/replay-buffer.js';

const payload = (n: number) => Buffer.from([n]);

describe('ReplayBuffer', () => {
  it('returns the batches at or after a sequence number, oldest first', () => {
    const b = new ReplayBuffer(10);
    for (const s of [0, 1, 2, 5, 6]) b.push(s, payload(s));
    expect(b.since(2).map((x) => x.seq)).toEqual([2, 5, 6]);
    expect(b.since(3).map((x) => x.seq)).toEqual([5, 6]);
    expect(b.since(7)).toEqual([]);
    expect(b.since(0)[0].payload).toEqual(payload(0));
  });

  it('keeps only the newest `capacity` batches', () => {
    const b = new ReplayBuffer(3);
    for (let s = 0; s < 8; s++) b.push(s, payload(s));
    expect(b.size).toBe(3);
    expect(b.oldestSeq()).toBe(5);
    expect(b.since(0).map((x) => x.seq)).toEqual([5, 6, 7]);
  });

  it('refuses non-increasing sequence numbers and bad capacities', () => {
    const b = new ReplayBuffer(2);
    b.push(4, payload(4));
    expect(() => b.push(4, payload(4))).toThrow(RangeError);
    expect(() => new ReplayBuffer(0)).toThrow(RangeError);
    expect(() => new ReplayBuffer(1.5)).toThrow(/replayBufferSteps/);
  });

  it('clears', () => {
    const b = new ReplayBuffer(2);
    b.push(1, payload(1));
    b.clear();
    expect(b.size).toBe(0);
    expect(b.oldestSeq()).toBeUndefined();
    b.push(0, payload(0));
    expect(b.since(0)).toHaveLength(1);
  });
});
