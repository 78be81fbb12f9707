import { describe, expect, it } from 'vitest';
import { nestsDeeperThan } from '../../src/util/json-depth.js';

const nested = (n: number): unknown => (n === 0 ? 1 : [nested(n - 1)]);

describe('nestsDeeperThan', () => {
  it('counts arrays and objects, the top one included', () => {
    expect(nestsDeeperThan(1, 0)).toBe(false);
    expect(nestsDeeperThan({}, 1)).toBe(false);
    expect(nestsDeeperThan({ a: [1, 2] }, 1)).toBe(true);
    expect(nestsDeeperThan({ a: [1, 2] }, 2)).toBe(false);
    expect(nestsDeeperThan({ a: 'x', b: [{ c: [] }] }, 3)).toBe(true);
    expect(nestsDeeperThan({ a: 'x', b: [{ c: [] }] }, 4)).toBe(false);
    expect(nestsDeeperThan(nested(64), 64)).toBe(false);
    expect(nestsDeeperThan(nested(65), 64)).toBe(true);
  });

  it('finds a deep branch after shallow ones, and stops at the limit on a very deep value', () => {
    expect(nestsDeeperThan([1, 2, { a: 'b' }, [[[[]]]]], 4)).toBe(true);
    const deep = JSON.parse(`${'['.repeat(200_000)}${']'.repeat(200_000)}`) as unknown;
    expect(nestsDeeperThan(deep, 64)).toBe(true); // no stack overflow: the walk never goes past 64
  });
});
