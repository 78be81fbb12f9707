// The simulated worker's SGLang session API: open (given or generated ids, timeout), close, bad bodies.
import { describe, expect, it } from 'vitest';
import { EngineSessions } from '../../../src/sim/worker/sessions.js';

describe('EngineSessions', () => {
  it('opens with a given or a generated id, expires idle sessions, closes', () => {
    let now = 0;
    const s = new EngineSessions(() => now);
    expect(s.openFrom({ capacity_of_str_len: 100, session_id: 'a', timeout: 2 })).toBe('a');
    const generated = s.openFrom({ capacity_of_str_len: 100 });
    expect(s.ids()).toEqual(['a', generated]);
    now = 2500;
    expect(s.ids()).toEqual([generated]);
    s.closeFrom({ session_id: generated });
    expect(s.ids()).toEqual([]);
  });

  it('refuses bad bodies, a duplicate id and an unknown one with a 400', () => {
    const s = new EngineSessions(() => 0);
    s.openFrom({ capacity_of_str_len: 1, session_id: 'a' });
    for (const body of [
      {},
      { capacity_of_str_len: 0 },
      { capacity_of_str_len: 1, session_id: 5 },
      { capacity_of_str_len: 1, timeout: -1 },
      { capacity_of_str_len: 1, session_id: 'a' },
    ]) {
      expect(() => s.openFrom(body)).toThrow(expect.objectContaining({ status: 400, code: 'invalid_session' }));
    }
    expect(() => s.closeFrom({ session_id: 'zz' })).toThrow(/does not exist/);
    expect(() => s.closeFrom({})).toThrow(/session_id must be a string/);
    expect(s.ids()).toEqual(['a']);
  });
});
