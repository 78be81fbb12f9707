// SessionControl alone, over a recorded host: states, expiry, bounds, a failed open, closeAll.
import { describe, expect, it } from 'vitest';
import type { SessionCall } from '../../src/engines/transport.js';
import type { WorkerInfo } from '../../src/engines/types.js';
import { SessionControl } from '../../src/routing/session-control.js';
import type { RoutingHints } from '../../src/routing/hints.js';
import { request } from './harness.js';

const worker: WorkerInfo = { id: 7, role: 'decode', kind: 'sglang', baseUrl: 'http://w.invalid', dpSize: 2 };

function setup(o: { failOpen?: boolean; maxSessions?: number } = {}) {
  let now = 0;
  const calls: string[] = [];
  const control = new SessionControl(
    {
      choose: () => ({ worker, dpRank: 1 }),
      call: async (c: SessionCall) => {
        calls.push(`${c.action} ${c.sessionId}`);
        if (o.failOpen && c.action === 'open') throw new Error('engine refused');
      },
      clock: () => now,
    },
    { maxSessions: o.maxSessions, defaultTimeoutS: 10 },
  );
  const turn = (sessionControl: RoutingHints['sessionControl'], hints: RoutingHints = {}) => control.begin(request({ hints: { ...hints, sessionControl } }));
  return { control, calls, turn, advance: (ms: number) => void (now += ms) };
}

describe('SessionControl', () => {
  it('opens on the engine, pins turns to its worker and rank, closes once the closing request is over', async () => {
    const s = setup();
    expect((await s.turn({ sessionId: 's', action: 'open' })).hints).toMatchObject({ workerId: 7, dpRank: 1 });
    expect((await s.turn({ sessionId: 's' }, { workerId: 3 })).hints).toMatchObject({ workerId: 7, dpRank: 1 });
    const closing = await s.turn({ sessionId: 's', action: 'close' });
    // Closing: no other turn, no second close, and nothing sent until the request is over.
    await expect(s.turn({ sessionId: 's' })).rejects.toThrow(/is not open/);
    await expect(s.turn({ sessionId: 's', action: 'close' })).rejects.toThrow(/is not open/);
    expect(s.calls).toEqual(['open s']);
    closing.over!();
    closing.over!();
    await s.control.idle();
    expect(s.calls).toEqual(['open s', 'close s']);
    expect(s.control.stats()).toMatchObject({ open: 0, opened: 1, closed: 1 });
  });

  it('binds nothing when the engine refuses the open', async () => {
    const s = setup({ failOpen: true });
    await expect(s.turn({ sessionId: 's', action: 'open' })).rejects.toThrow('engine refused');
    await expect(s.turn({ sessionId: 's' })).rejects.toThrow(/is not open/);
    expect(s.control.stats().open).toBe(0);
  });

  it('closes an idle session on its engine after its timeout, and refuses opens beyond the bound', async () => {
    const s = setup({ maxSessions: 2 });
    await s.turn({ sessionId: 'a', action: 'open', timeoutS: 1 });
    await s.turn({ sessionId: 'b', action: 'open' });
    await expect(s.turn({ sessionId: 'c', action: 'open' })).rejects.toMatchObject({ code: 'too_many_sessions' });
    s.advance(1500);
    await s.turn({ sessionId: 'c', action: 'open' }); // a expired first, making room
    await s.control.idle();
    expect(s.calls).toEqual(['open a', 'open b', 'close a', 'open c']);
    expect(s.control.stats()).toMatchObject({ open: 2, expired: 1 });
    await s.control.closeAll();
    expect(s.calls.slice(-2).sort()).toEqual(['close b', 'close c']);
    expect(s.control.stats().open).toBe(0);
  });
});
