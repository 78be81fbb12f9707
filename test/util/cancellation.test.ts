import { describe, expect, it } from 'vitest';
import { Cancellation, isSignalLike } from '../../src/util/cancellation.js';
import { abortError, isAbortError } from '../../src/engines/errors.js';

describe('Cancellation', () => {
  it('aborts once: listeners run in the order added, once, and the reason stays the first', () => {
    const c = new Cancellation();
    const calls: string[] = [];
    c.signal.addEventListener('abort', () => calls.push('a'));
    c.signal.addEventListener('abort', () => calls.push('b'), { once: true });
    expect(c.signal.aborted).toBe(false);
    c.abort('first');
    c.abort('second');
    expect(calls).toEqual(['a', 'b']);
    expect(c.signal.aborted).toBe(true);
    expect(c.signal.reason).toBe('first');
  });

  it('has an AbortError reason by default, as AbortController does', () => {
    const c = new Cancellation();
    c.abort();
    expect(isAbortError(c.signal.reason)).toBe(true);
    expect(abortError(c.signal)).toBe(c.signal.reason);
  });

  it('removes listeners, ignores duplicates and listeners added after the abort', () => {
    const c = new Cancellation();
    let a = 0;
    let b = 0;
    let late = 0;
    const fa = () => a++;
    const fb = () => b++;
    c.addEventListener('abort', fa);
    c.addEventListener('abort', fa);
    c.addEventListener('abort', fb);
    c.removeEventListener('abort', fa);
    c.abort();
    c.addEventListener('abort', () => late++);
    expect([a, b, late]).toEqual([0, 1, 0]);
  });

  it('a throwing listener neither stops the others nor the abort (its error is reported asynchronously)', async () => {
    const c = new Cancellation();
    const reported: unknown[] = [];
    const onError = (err: unknown) => reported.push(err);
    process.prependListener('uncaughtException', onError);
    try {
      let after = 0;
      c.addEventListener('abort', () => {
        throw new Error('listener failed');
      });
      c.addEventListener('abort', () => after++);
      c.abort();
      expect(after).toBe(1);
      expect(c.aborted).toBe(true);
      await new Promise((r) => setTimeout(r, 0));
      expect(reported).toHaveLength(1);
    } finally {
      process.removeListener('uncaughtException', onError);
    }
  });

  it('is accepted wherever an AbortSignal is (and AbortSignal too)', () => {
    expect(isSignalLike(new Cancellation())).toBe(true);
    expect(isSignalLike(new AbortController().signal)).toBe(true);
    expect(isSignalLike({ aborted: false })).toBe(false);
    expect(isSignalLike(null)).toBe(false);
  });
});
