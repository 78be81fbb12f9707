import { describe, expect, it } from 'vitest';
import { KvRendezvous, type HeldPrefill, type PullResult } from '../../../src/sim/replay/kv-rendezvous.js';

function held(promptTokens = 64, expired = false): HeldPrefill & { released: number } {
  const h = { promptTokens, released: 0, release: () => (h.released++, !expired) };
  return h;
}

describe('KvRendezvous', () => {
  it('hands a finished prefill to one pull, which releases its blocks', () => {
    const r = new KvRendezvous();
    expect(r.open('a')).toBe(true);
    expect(r.open('a')).toBe(false); // a key is one handoff
    const h = held();
    r.ready('a', h);
    const got: PullResult[] = [];
    r.pull('a', false, (x) => got.push(x));
    expect(got).toEqual([{ ok: true, held: h }]);
    expect(h.released).toBe(1);
    r.pull('a', false, (x) => got.push(x));
    expect(got[1]).toMatchObject({ ok: false, reason: expect.stringMatching(/nothing is held/) });
    expect(r.stats()).toEqual({ pulled: 1, failed: 1, open: 0 });
  });

  it('a pull that does not wait fails while the prefill runs; one that waits gets it when it finishes', () => {
    const r = new KvRendezvous();
    r.open('a');
    const got: PullResult[] = [];
    r.pull('a', false, (x) => got.push(x));
    expect(got[0]).toMatchObject({ ok: false, reason: expect.stringMatching(/has not finished/) });
    r.pull('a', true, (x) => got.push(x));
    expect(got).toHaveLength(1);
    r.ready('a', held(32));
    expect(got[1]).toMatchObject({ ok: true, held: { promptTokens: 32 } });
    expect(r.size).toBe(0);
  });

  it('a decode may come first and wait for the room to open and finish (SGLang)', () => {
    const r = new KvRendezvous();
    const got: PullResult[] = [];
    r.pull('room', true, (x) => got.push(x));
    expect(r.open('room')).toBe(true);
    expect(r.open('room')).toBe(false);
    r.ready('room', held());
    expect(got).toMatchObject([{ ok: true }]);
  });

  it('a failed prefill fails the waiting pull and unpins held blocks; a cancelled pull hears nothing', () => {
    const r = new KvRendezvous();
    const got: PullResult[] = [];
    r.open('a');
    r.pull('a', true, (x) => got.push(x));
    r.fail('a', 'the prefill was aborted');
    expect(got).toEqual([{ ok: false, reason: 'the prefill was aborted' }]);
    const h = held();
    r.open('b');
    r.ready('b', h);
    r.fail('b', 'gone');
    expect(h.released).toBe(1);
    const cancel = r.pull('c', true, (x) => got.push(x));
    cancel();
    expect(r.size).toBe(0); // the room a lone decode waited at is free again
    r.open('c');
    r.ready('c', held());
    expect(got).toHaveLength(1);
  });

  it('a hold that expired on the prefill engine fails the pull', () => {
    const r = new KvRendezvous();
    r.open('a');
    r.ready('a', held(64, true));
    const got: PullResult[] = [];
    r.pull('a', false, (x) => got.push(x));
    expect(got).toEqual([{ ok: false, reason: 'the prefill hold expired' }]);
  });
});
