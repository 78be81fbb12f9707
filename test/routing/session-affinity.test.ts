import { describe, expect, it } from 'vitest';
import { SessionAffinity } from '../../src/routing/session-affinity.js';

const all = () => true;

describe('SessionAffinity', () => {
  it('remembers where a session went and sends it there again, counted', () => {
    const s = new SessionAffinity();
    expect(s.resolve('a', all)).toEqual({});
    s.bind('a', { decode: { worker: 2, dpRank: 1 }, prefill: { worker: 7, dpRank: 0 } });
    expect(s.resolve('a', all)).toEqual({ decode: { worker: 2, dpRank: 1 }, prefill: { worker: 7, dpRank: 0 } });
    expect(s.stats()).toMatchObject({ sessions: 1, bound: 1, hits: 1, rebound: 0 });
  });

  it('leaves a worker that cannot serve to routing, and a later bind replaces it', () => {
    const s = new SessionAffinity();
    s.bind('a', { decode: { worker: 2, dpRank: 0 }, prefill: { worker: 7, dpRank: 0 } });
    expect(s.resolve('a', (pool, w) => !(pool === 'decode' && w === 2))).toEqual({ prefill: { worker: 7, dpRank: 0 } });
    expect(s.stats().rebound).toBe(1);
    s.bind('a', { decode: { worker: 3, dpRank: 0 } }); // an aggregated or fallback answer: prefill kept
    expect(s.peek('a')).toEqual({ decode: { worker: 3, dpRank: 0 }, prefill: { worker: 7, dpRank: 0 } });
  });

  it('forgets a session idle for ttlMs', () => {
    let now = 1_000;
    const s = new SessionAffinity({ ttlMs: 100, clock: () => now });
    s.bind('a', { decode: { worker: 1, dpRank: 0 } });
    now += 99;
    expect(s.peek('a')).toBeDefined();
    s.bind('a', { prefill: { worker: 5, dpRank: 0 } }); // touched: lives another 100 ms, decode kept
    now += 99;
    expect(s.peek('a')).toEqual({ decode: { worker: 1, dpRank: 0 }, prefill: { worker: 5, dpRank: 0 } });
    now += 1;
    expect(s.peek('a')).toBeUndefined();
    expect(s.resolve('a', all)).toEqual({});
    s.bind('b', { decode: { worker: 1, dpRank: 0 } }); // trims the expired one
    expect(s.stats()).toMatchObject({ sessions: 1, expired: 1 });
  });

  it('keeps at most maxSessions, dropping the least recently used', () => {
    const s = new SessionAffinity({ maxSessions: 2 });
    s.bind('a', { decode: { worker: 1, dpRank: 0 } });
    s.bind('b', { decode: { worker: 2, dpRank: 0 } });
    s.bind('a', { decode: { worker: 1, dpRank: 0 } }); // a is now the most recent
    s.bind('c', { decode: { worker: 3, dpRank: 0 } });
    expect(s.peek('b')).toBeUndefined();
    expect(s.peek('a')).toBeDefined();
    expect(s.peek('c')).toBeDefined();
    expect(s.stats()).toMatchObject({ sessions: 2, evicted: 1 });
  });

  it('reports what bind() stores, and adopts bindings learnt elsewhere without counting or reporting them', () => {
    const seen: Array<[string, unknown]> = [];
    const s = new SessionAffinity({ onBind: (id, b) => seen.push([id, b]) });
    s.bind('a', { decode: { worker: 1, dpRank: 0 }, prefill: { worker: 4, dpRank: 0 } });
    s.bind('a', { decode: { worker: 2, dpRank: 0 } });
    expect(seen).toEqual([
      ['a', { decode: { worker: 1, dpRank: 0 }, prefill: { worker: 4, dpRank: 0 } }],
      ['a', { decode: { worker: 2, dpRank: 0 }, prefill: { worker: 4, dpRank: 0 } }],
    ]);
    s.adopt('b', { decode: { worker: 3, dpRank: 1 } });
    expect(seen).toHaveLength(2);
    expect(s.resolve('b', all)).toEqual({ decode: { worker: 3, dpRank: 1 }, prefill: undefined });
    expect(s.stats()).toMatchObject({ sessions: 2, hits: 1, bound: 0 });
    expect(() => s.adopt('', {})).toThrow(TypeError);
    expect(() => new SessionAffinity({ onBind: 1 as never })).toThrow(TypeError);
  });

  it('refuses bad options', () => {
    expect(() => new SessionAffinity({ ttlMs: 0 })).toThrow(RangeError);
    expect(() => new SessionAffinity({ maxSessions: 1.5 })).toThrow(RangeError);
    expect(() => new SessionAffinity({ clock: 5 as unknown as () => number })).toThrow(TypeError);
    expect(() => new SessionAffinity(null as unknown as object)).toThrow(TypeError);
  });
});
