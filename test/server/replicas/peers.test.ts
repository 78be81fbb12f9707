import { describe, expect, it } from 'vitest';
import { Peers } from '../../../src/server/replicas/peers.js';

describe('Peers', () => {
  it('tells a new replica, a known one and a restarted one apart', () => {
    const p = new Peers(1000);
    expect(p.heard('a', 'e1', 0)).toBe('new');
    expect(p.heard('a', 'e1', 10)).toBe('known');
    expect(p.heard('a', 'e2', 20)).toBe('restarted');
    expect(p.heard('a', 'e2', 30)).toBe('known');
    expect(p.size).toBe(1);
  });

  it('forgets replicas silent for the TTL, and knows them as new when they return', () => {
    const p = new Peers(1000);
    p.heard('a', 'e', 0);
    p.heard('b', 'e', 500);
    expect(p.expire(999)).toEqual([]);
    expect(p.expire(1000)).toEqual(['a']);
    expect(p.list(1200)).toEqual([{ replica: 'b', epoch: 'e', silentMs: 700 }]);
    expect(p.heard('a', 'e', 1300)).toBe('new');
  });

  it('detects lost batches by sequence; an announcement or a restart starts afresh', () => {
    const p = new Peers(1000);
    p.heard('a', 'e', 0);
    expect(p.sequence('a', 5, false)).toBe(true);
    expect(p.sequence('a', 6, false)).toBe(true);
    expect(p.sequence('a', 8, false)).toBe(false);
    expect(p.sequence('a', 20, true)).toBe(true);
    expect(p.sequence('a', 21, false)).toBe(true);
    p.heard('a', 'e2', 1);
    expect(p.sequence('a', 1, false)).toBe(true);
  });
});
