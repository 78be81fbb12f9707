import { describe, expect, it } from 'vitest';
import { TokenBucket } from '../../../src/server/access/rate-limit.js';

describe('TokenBucket', () => {
  it('starts full, refills continuously up to one minute of units, and says how long to wait', () => {
    const b = new TokenBucket(60, 0); // one a second
    expect(b.waitFor(60, 0)).toBe(0);
    b.take(60, 0);
    expect(b.waitFor(1, 0)).toBe(1000);
    expect(b.waitFor(1, 500)).toBe(500);
    expect(b.waitFor(1, 1000)).toBe(0);
    b.take(1, 1000);
    // Never more than a minute's worth, however long it rested.
    expect(b.waitFor(60, 1_000_000)).toBe(0);
    expect(b.waitFor(61, 1_000_000)).toBe(Infinity);
  });
});
