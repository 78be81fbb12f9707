import { describe, expect, it } from 'vitest';
import { VirtualTimers } from '../../../src/sim/replay/virtual-timers.js';

describe('VirtualTimers', () => {
  it('fires in the order due (ties in the order set), skipping cancelled ones', () => {
    const t = new VirtualTimers();
    const fired: string[] = [];
    expect(t.nextTime()).toBe(Infinity);
    t.at(30, () => fired.push('c'));
    const cancelB = t.at(10, () => fired.push('b'));
    t.at(20, () => fired.push('d1'));
    t.at(20, () => fired.push('d2'));
    cancelB();
    expect(t.nextTime()).toBe(20);
    t.fireNext();
    t.fireNext();
    expect(t.nextTime()).toBe(30);
    const cancelC2 = t.at(40, () => fired.push('never'));
    t.fireNext();
    cancelC2();
    expect(t.nextTime()).toBe(Infinity);
    t.fireNext(); // nothing left: no-op
    expect(fired).toEqual(['d1', 'd2', 'c']);
  });
});
