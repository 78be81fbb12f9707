import { describe, expect, it } from 'vitest';
import { Deque } from '../../../src/sim/engine/deque.js';

describe('Deque', () => {
  it('keeps order through pushes at both ends, growth and removals', () => {
    const d = new Deque<number>();
    const ref: number[] = [];
    for (let i = 0; i < 100; i++) {
      if (i % 3 === 0) {
        d.pushFront(i);
        ref.unshift(i);
      } else {
        d.pushBack(i);
        ref.push(i);
      }
      if (i % 7 === 0) expect(d.shift()).toBe(ref.shift());
    }
    expect(d.size).toBe(ref.length);
    expect(d.toArray()).toEqual(ref);
    expect(d.remove(50)).toBe(true);
    expect(d.remove(50)).toBe(false);
    ref.splice(ref.indexOf(50), 1);
    expect(d.toArray()).toEqual(ref);
    expect(d.peek()).toBe(ref[0]);
    while (d.size > 0) expect(d.shift()).toBe(ref.shift());
    expect(d.shift()).toBeUndefined();
    expect(d.peek()).toBeUndefined();
  });

  it('inserts at any index, past a wrapped head and through growth, as an array splice does', () => {
    const d = new Deque<number>();
    const ref: number[] = [];
    for (let i = 0; i < 60; i++) {
      // Wrap the head first, then insert at the front, the back, past the end and in between.
      if (i < 10) {
        d.pushFront(i);
        ref.unshift(i);
        continue;
      }
      const at = [0, ref.length, ref.length + 5, (i * 7) % (ref.length + 1), -1][i % 5];
      d.insert(at, i);
      ref.splice(Math.max(0, Math.min(at, ref.length)), 0, i);
      expect(d.toArray()).toEqual(ref);
    }
    while (d.size > 0) expect(d.shift()).toBe(ref.shift());
  });
});
