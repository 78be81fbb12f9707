import { afterEach, describe, expect, it, vi } from 'vitest';
import { realTimers } from '../../src/util/timers.js';

describe('realTimers', () => {
  afterEach(() => vi.restoreAllMocks());

  it('fires at the time of its clock, never keeps the process alive, and cancels', async () => {
    let now = 5000;
    const spy = vi.spyOn(globalThis, 'setTimeout');
    const fired: string[] = [];
    const timers = realTimers(() => now);
    timers.at(5020, () => fired.push('a'));
    expect(spy).toHaveBeenLastCalledWith(expect.any(Function), 20);
    const timer = spy.mock.results.at(-1)!.value as NodeJS.Timeout;
    expect(timer.hasRef()).toBe(false);
    const cancel = timers.at(5001, () => fired.push('b'));
    cancel();
    // A deadline already past still waits a tick (at least 1 ms), never fires synchronously.
    now = 6000;
    timers.at(10, () => fired.push('c'));
    expect(spy).toHaveBeenLastCalledWith(expect.any(Function), 1);
    expect(fired).toEqual([]);
    await new Promise((r) => setTimeout(r, 40));
    expect(fired.sort()).toEqual(['a', 'c']);
  });
});
