import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Outbox } from '../../../src/server/replicas/outbox.js';
import type { BookingEvent } from '../../../src/server/replicas/protocol.js';

const free = (i: number): BookingEvent => ({ kind: 'free', pool: 'decode', requestId: `r${i}` });

describe('Outbox', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('sends a batch as soon as it holds maxEvents', () => {
    const sent: BookingEvent[][] = [];
    const o = new Outbox({ maxEvents: 3, maxDelayMs: 50, send: (e) => sent.push(e) });
    for (let i = 0; i < 7; i++) o.push(free(i));
    expect(sent.map((b) => b.length)).toEqual([3, 3]);
    expect(o.size).toBe(1);
    vi.advanceTimersByTime(50);
    expect(sent.map((b) => b.length)).toEqual([3, 3, 1]);
  });

  it('sends a partial batch maxDelayMs after its first event', () => {
    const sent: BookingEvent[][] = [];
    const o = new Outbox({ maxEvents: 100, maxDelayMs: 5, send: (e) => sent.push(e) });
    o.push(free(1));
    vi.advanceTimersByTime(3);
    o.push(free(2));
    expect(sent).toEqual([]);
    vi.advanceTimersByTime(2);
    expect(sent).toEqual([[free(1), free(2)]]);
  });

  it('with maxDelayMs 0 sends at the end of the event loop turn', () => {
    const sent: BookingEvent[][] = [];
    const o = new Outbox({ maxEvents: 100, maxDelayMs: 0, send: (e) => sent.push(e) });
    o.push(free(1));
    o.push(free(2));
    expect(sent).toEqual([]);
    vi.runAllTicks();
    vi.advanceTimersToNextTimer();
    expect(sent).toEqual([[free(1), free(2)]]);
  });

  it('clear() drops what is pending and its timer', () => {
    const sent: BookingEvent[][] = [];
    const o = new Outbox({ maxEvents: 100, maxDelayMs: 5, send: (e) => sent.push(e) });
    o.push(free(1));
    o.clear();
    vi.advanceTimersByTime(10);
    o.flush();
    expect(sent).toEqual([]);
  });
});
