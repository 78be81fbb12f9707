import { describe, expect, it } from 'vitest';
import { attributePrefillWorker } from '../../src/routing/attribution.js';

const sizes = (w: number) => (w === 7 ? 4 : w === 8 ? 1 : undefined);

describe('attributePrefillWorker', () => {
  it('prefers the booking, then the direct target, then the payload', () => {
    const payload = { worker_id: { prefill_worker_id: 7, prefill_dp_rank: 2 } };
    expect(attributePrefillWorker({ worker: 1, dpRank: 0 }, { worker: 2 }, payload, sizes)).toEqual({ worker: 1, dpRank: 0 });
    expect(attributePrefillWorker(undefined, { worker: 2, dpRank: 1 }, payload, sizes)).toEqual({ worker: 2, dpRank: 1 });
    expect(attributePrefillWorker(undefined, undefined, payload, sizes)).toEqual({ worker: 7, dpRank: 2 });
    expect(attributePrefillWorker(undefined, undefined, { nvext: { worker_id: { prefill_worker_id: 8 } } }, sizes)).toEqual({ worker: 8 });
  });

  it('ignores out-of-range ranks and malformed payloads', () => {
    expect(attributePrefillWorker(undefined, undefined, { worker_id: { prefill_worker_id: 7, prefill_dp_rank: 4 } }, sizes)).toEqual({ worker: 7 });
    expect(attributePrefillWorker(undefined, undefined, { worker_id: { prefill_worker_id: 9, prefill_dp_rank: 0 } }, sizes)).toEqual({ worker: 9 });
    expect(attributePrefillWorker(undefined, undefined, { worker_id: { prefill_worker_id: -1 } }, sizes)).toBeUndefined();
    expect(attributePrefillWorker(undefined, undefined, { worker_id: { prefill_worker_id: '7' } }, sizes)).toBeUndefined();
    expect(attributePrefillWorker(undefined, undefined, { worker_id: 7 }, sizes)).toBeUndefined();
    expect(attributePrefillWorker(undefined, undefined, 'x', sizes)).toBeUndefined();
  });
});
