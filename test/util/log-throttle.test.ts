import { describe, expect, it } from 'vitest';
import { LogThrottle } from '../../src/util/log-throttle.js';

describe('LogThrottle', () => {
  it('admits one line per kind per window and counts those left out', () => {
    let now = 0;
    const t = new LogThrottle(1000, () => now);
    expect(t.admit('a')).toBe(0);
    expect(t.admit('a')).toBeUndefined();
    expect(t.admit('b')).toBe(0);
    now = 999;
    expect(t.admit('a')).toBeUndefined();
    now = 1000;
    expect(t.admit('a')).toBe(2);
    expect(t.admit('a')).toBeUndefined();
    now = 5000;
    expect(t.admit('a')).toBe(1);
    expect(t.admit('b')).toBe(0);
  });
});
