import { describe, expect, it } from 'vitest';
import { bindingOf, bindingValue, sessionIdOf, sessionKey, SessionSync } from '../../../src/server/replicas/session-sync.js';
import type { SharedBucket } from '../../../src/server/replicas/bucket.js';
import type { SessionBinding } from '../../../src/routing/session-affinity.js';

describe('SessionSync', () => {
  it('keys any session id as a valid NATS key and back', () => {
    for (const id of ['conv-1', 'a.b/c d', 'ünïcödé', '*>']) {
      expect(sessionKey(id)).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(sessionIdOf(sessionKey(id))).toBe(id);
    }
  });

  it('writes what bind() stored and adopts what another replica wrote', () => {
    const puts: Array<[string, unknown]> = [];
    const adopted: Array<[string, SessionBinding]> = [];
    let invalid = 0;
    const bucket = { put: (k: string, v: unknown) => puts.push([k, v]) } as unknown as SharedBucket;
    const s = new SessionSync(bucket, { adopt: (id, b) => adopted.push([id, b]) }, () => invalid++);
    const binding = { decode: { worker: 3, dpRank: 1 }, prefill: { worker: 0, dpRank: 0 } };
    s.bound('conv', binding);
    expect(puts).toEqual([[sessionKey('conv'), { decode: [3, 1], prefill: [0, 0] }]]);
    s.received(sessionKey('conv'), bindingValue(binding));
    expect(adopted).toEqual([['conv', binding]]);
    s.received(sessionKey('gone'), null);
    expect(adopted).toHaveLength(1);
    for (const bad of [{}, { decode: [1] }, { decode: [-1, 0] }, { decode: 'w1' }, { decode: [1, 0], prefill: [0.5, 0] }]) s.received(sessionKey('x'), bad);
    expect(invalid).toBe(5);
    expect(adopted).toHaveLength(1);
    expect(bindingOf({ prefill: [2, 0] })).toEqual({ prefill: { worker: 2, dpRank: 0 } });
  });
});
