import { describe, expect, it } from 'vitest';
import { SequenceTracker } from '../../src/events/sequence.js';

describe('SequenceTracker', () => {
  it('expects 0 first, then each next number', () => {
    const t = new SequenceTracker();
    expect(t.lastApplied).toBeNull();
    expect(t.classify(0n)).toEqual({ kind: 'next' });
    t.applied(0n);
    expect(t.classify(1n)).toEqual({ kind: 'next' });
    t.applied(1n);
    expect(t.lastApplied).toBe(1n);
    expect(t.expected).toBe(2n);
  });

  it('reports a gap with the missing range', () => {
    const t = new SequenceTracker();
    t.applied(0n);
    expect(t.classify(5n)).toEqual({ kind: 'gap', from: 1n, to: 4n });
  });

  it('treats joining a running publisher as a gap from 0', () => {
    expect(new SequenceTracker().classify(42n)).toEqual({ kind: 'gap', from: 0n, to: 41n });
  });

  it('treats a lower or repeated number as a restart', () => {
    const t = new SequenceTracker();
    t.applied(0n);
    t.applied(1n);
    t.applied(2n);
    expect(t.classify(0n)).toEqual({ kind: 'restart' });
    expect(t.classify(2n)).toEqual({ kind: 'restart' });
    t.reset();
    expect(t.classify(0n)).toEqual({ kind: 'next' });
  });

  it('handles numbers above 2^63 exactly', () => {
    const t = new SequenceTracker();
    t.resumeAt(2n ** 63n);
    expect(t.classify(2n ** 63n + 1n)).toEqual({ kind: 'next' });
    expect(t.classify(2n ** 63n + 3n)).toEqual({ kind: 'gap', from: 2n ** 63n + 1n, to: 2n ** 63n + 2n });
  });

  it('drops live batches a replay already applied, but still sees a restart', () => {
    const t = new SequenceTracker();
    t.applied(0n);
    // Live batch 4 revealed a gap; the replay applied 1..7 (it overtook the live feed).
    for (let s = 1n; s <= 7n; s++) t.applied(s);
    t.replayedThrough(4n);
    expect(t.classify(5n)).toEqual({ kind: 'duplicate' });
    expect(t.classify(7n)).toEqual({ kind: 'duplicate' });
    expect(t.classify(8n)).toEqual({ kind: 'next' });
    expect(t.classify(0n)).toEqual({ kind: 'restart' });
    t.applied(8n);
    // Once past the window, an old number is a restart again.
    expect(t.classify(6n)).toEqual({ kind: 'restart' });
  });

  it('resumes after an unrecoverable gap as if everything before had been applied', () => {
    const t = new SequenceTracker();
    t.applied(0n);
    t.resumeAt(10n);
    expect(t.lastApplied).toBe(10n);
    expect(t.classify(11n)).toEqual({ kind: 'next' });
  });
});
