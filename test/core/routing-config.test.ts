// Bad input to RoutingCore: a TypeError or RangeError naming the field, and no state change.
import { describe, expect, it } from 'vitest';
import { KvIndexer } from '../../src/core/indexer.js';
import { RoutingCore, type RoutingConfig } from '../../src/core/routing-core.js';

const BS = 4;
const tokens = Uint32Array.from({ length: 16 }, (_, i) => i);

function make(config: Partial<RoutingConfig> = {}) {
  const indexer = new KvIndexer({ blockSize: BS });
  return new RoutingCore(indexer, { blockSize: BS, seed: 1, ...config });
}

describe('RoutingCore configuration', () => {
  it('fills defaults and shows the seed it uses', () => {
    const core = make({ seed: undefined });
    expect(core.config).toMatchObject({
      blockSize: BS,
      policy: 'kv',
      overlapScoreCredit: 1,
      prefillLoadScale: 1,
      temperature: 0,
      staleBookingMs: 600_000,
      approximate: false,
    });
    expect(Number.isInteger(core.config.seed)).toBe(true);
    expect(Object.isFrozen(core.config)).toBe(true);
  });

  it('refuses bad configurations', () => {
    const indexer = new KvIndexer({ blockSize: BS });
    const bad: Array<[unknown, RegExp, ErrorConstructor]> = [
      [{ blockSize: 8 }, /differs from the indexer/, RangeError],
      [{ blockSize: BS, policy: 'fastest' }, /policy must be one of/, RangeError],
      [{ blockSize: BS, policy: 3 }, /policy must be a string/, TypeError],
      [{ blockSize: BS, temperature: -1 }, /temperature/, RangeError],
      [{ blockSize: BS, overlapScoreCredit: Number.NaN }, /overlapScoreCredit/, RangeError],
      [{ blockSize: BS, prefillLoadScale: '1' }, /prefillLoadScale/, TypeError],
      [{ blockSize: BS, busyDecodeFraction: 0 }, /busyDecodeFraction/, RangeError],
      [{ blockSize: BS, busyPrefillTokens: 1.5 }, /busyPrefillTokens/, RangeError],
      [{ blockSize: BS, maxQueuedPrefillTokens: 0 }, /maxQueuedPrefillTokens/, RangeError],
      [{ blockSize: BS, staleBookingMs: -5 }, /staleBookingMs/, RangeError],
      [{ blockSize: BS, seed: -1 }, /seed/, RangeError],
      [{ blockSize: BS, clock: 5 }, /clock/, TypeError],
      [{ blockSize: BS, approximate: true }, /approximate/, RangeError],
      [null, /config is required/, TypeError],
    ];
    for (const [config, message, type] of bad) {
      expect(() => new RoutingCore(indexer, config as RoutingConfig), JSON.stringify(config)).toThrow(type);
      expect(() => new RoutingCore(indexer, config as RoutingConfig)).toThrow(message);
    }
    expect(() => new RoutingCore({} as KvIndexer, { blockSize: BS })).toThrow(TypeError);
    expect(() => make({ staleBookingMs: Number.POSITIVE_INFINITY })).not.toThrow();
  });

  it('refuses bad worker specs whole', () => {
    const core = make();
    core.setWorkers([{ worker: 1 }]);
    expect(() => core.setWorkers([{ worker: 2 }, { worker: 2 }])).toThrow(RangeError);
    expect(() => core.setWorkers([{ worker: -1 }])).toThrow(RangeError);
    expect(() => core.setWorkers([{ worker: 2 ** 53 }])).toThrow(RangeError);
    expect(() => core.setWorkers([{ worker: 2, dpSize: 0 }])).toThrow(/dpSize/);
    expect(() => core.setWorkers([{ worker: 2, dpSize: 65_537 }])).toThrow(RangeError);
    expect(() => core.setWorkers([{ worker: 2, kvCapacityBlocks: 0 }])).toThrow(/kvCapacityBlocks/);
    expect(() => core.setWorkers([{ worker: 1, dpSize: 65_536 }, { worker: 2 }])).toThrow(/at most/);
    expect(() => core.setWorkers('x' as never)).toThrow(TypeError);
    expect(() => core.setWorkers([null as never])).toThrow(TypeError);
    expect(() => core.addWorker({ worker: '1' as never })).toThrow(TypeError);
    expect(() => core.removeWorker(Number.NaN)).toThrow(RangeError);
    expect(core.workers()).toEqual([{ worker: 1, dpSize: 1 }]);
  });
});

describe('RoutingCore request checks', () => {
  it('refuses bad requests with TypeError or RangeError and books nothing', () => {
    const core = make();
    core.setWorkers([{ worker: 0 }, { worker: 1 }]);
    const bad: Array<[() => unknown, ErrorConstructor, RegExp]> = [
      [() => core.route([1, 2, 3] as never, { requestId: 'a' }), TypeError, /tokens must be a Uint32Array/],
      [() => core.route(Int32Array.of(1) as never, { requestId: 'a' }), TypeError, /Uint32Array/],
      [() => core.route(tokens, undefined as never), TypeError, /requestId/],
      [() => core.route(tokens, { requestId: 5 as never }), TypeError, /requestId/],
      [() => core.route(tokens, { requestId: '' }), RangeError, /requestId/],
      [() => core.route(tokens, { requestId: 'x'.repeat(2000) }), RangeError, /requestId/],
      [() => core.route(tokens, { requestId: 'a', pinnedWorker: -1 }), RangeError, /pinnedWorker/],
      [() => core.route(tokens, { requestId: 'a', pinnedWorker: 1.5 }), RangeError, /pinnedWorker/],
      [() => core.route(tokens, { requestId: 'a', pinnedDpRank: 70_000 }), RangeError, /pinnedDpRank/],
      [() => core.route(tokens, { requestId: 'a', allowedWorkers: 3 as never }), TypeError, /allowedWorkers/],
      [() => core.route(tokens, { requestId: 'a', allowedWorkers: [0, Number.NaN] }), RangeError, /allowedWorkers\[1\]/],
      [() => core.route(tokens, { requestId: 'a', expectedOutputTokens: -1 }), RangeError, /expectedOutputTokens/],
      [() => core.route(tokens, { requestId: 'a', temperature: Number.POSITIVE_INFINITY }), RangeError, /temperature/],
      [() => core.route(tokens, { requestId: 'a', overlapScoreCredit: -0.5 }), RangeError, /overlapScoreCredit/],
      [() => core.route(tokens, { requestId: 'a', prefillLoadScale: '2' as never }), TypeError, /prefillLoadScale/],
      [() => core.route(tokens, { requestId: 'a', loraName: 3 as never }), TypeError, /loraName/],
      [() => core.route(tokens, { requestId: 'a', mmHashes: 'x' as never }), TypeError, /mmHashes/],
      [() => core.route(tokens, { requestId: 'a', mmHashes: [[-1n]] }), RangeError, /multimodal/],
      [() => core.query(tokens, 7 as never), TypeError, /req/],
      [() => core.markPrefillCompleted(3 as never), TypeError, /requestId/],
      [() => core.addOutputTokens('a', -1), RangeError, /tokens/],
      [() => core.addOutputTokens('a', 0.5), RangeError, /tokens/],
      [() => core.free(undefined as never), TypeError, /requestId/],
    ];
    for (const [call, type, message] of bad) {
      expect(call).toThrow(type);
      expect(call).toThrow(message);
    }
    expect(core.stats()).toEqual({ booked: 0, freed: 0, expired: 0, active: 0 });
    expect(core.route(tokens, { requestId: 'a', pinnedWorker: null as never }).requestId).toBe('a');
  });

  it('refuses a clock that returns no number', () => {
    const indexer = new KvIndexer({ blockSize: BS });
    const core = new RoutingCore(indexer, { blockSize: BS, clock: () => Number.NaN });
    core.setWorkers([{ worker: 0 }]);
    expect(() => core.route(tokens, { requestId: 'a' })).toThrow(TypeError);
    expect(core.stats().booked).toBe(0);
  });
});
