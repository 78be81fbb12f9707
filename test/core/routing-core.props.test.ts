// Exactly-once load accounting: whatever mix of routes, first tokens, output growth, frees,
// expiry and worker changes happens, freeing what remains brings every counter back to zero.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KvIndexer } from '../../src/core/indexer.js';
import { RoutingCore, type PolicyName } from '../../src/core/routing-core.js';
import { RoutingError } from '../../src/core/routing-errors.js';

const BS = 4;

type Op =
  | { kind: 'route'; prefix: number; length: number; expected: number; pin: number | null }
  | { kind: 'first'; pick: number }
  | { kind: 'output'; pick: number; tokens: number }
  | { kind: 'free'; pick: number }
  | { kind: 'tick'; ms: number }
  | { kind: 'expire' }
  | { kind: 'addWorker'; worker: number; dpSize: number }
  | { kind: 'removeWorker'; worker: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ kind: fc.constant('route' as const), prefix: fc.nat(3), length: fc.nat(120), expected: fc.nat(40), pin: fc.option(fc.nat(5)) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('first' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('output' as const), pick: fc.nat(), tokens: fc.nat(30) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('free' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.nat(400) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'expire' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('addWorker' as const), worker: fc.nat(5), dpSize: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('removeWorker' as const), worker: fc.nat(5) }) },
);

function run(policy: PolicyName, ops: Op[]) {
  let now = 0;
  const clock = () => now;
  const indexer = new KvIndexer({ blockSize: BS, clock });
  const core = new RoutingCore(indexer, {
    blockSize: BS,
    policy,
    seed: 3,
    clock,
    staleBookingMs: 2_000,
    busyPrefillTokens: 300,
    maxQueuedPrefillTokens: 900,
  });
  core.setWorkers([{ worker: 0 }, { worker: 1, dpSize: 2 }, { worker: 2 }]);
  const live: string[] = [];
  let next = 0;
  const pickLive = (i: number) => live[i % live.length];
  for (const o of ops) {
    switch (o.kind) {
      case 'route': {
        const id = `r${next++}`;
        const tokens = Uint32Array.from({ length: o.length }, (_, i) => o.prefix * 10_000 + i);
        try {
          core.route(tokens, { requestId: id, expectedOutputTokens: o.expected, pinnedWorker: o.pin ?? undefined });
          live.push(id);
        } catch (err) {
          if (!(err instanceof RoutingError)) throw err;
        }
        break;
      }
      case 'first':
        if (live.length) core.markPrefillCompleted(pickLive(o.pick));
        break;
      case 'output':
        if (live.length) core.addOutputTokens(pickLive(o.pick), o.tokens);
        break;
      case 'free':
        if (live.length) {
          const [id] = live.splice(o.pick % live.length, 1);
          core.free(id);
        }
        break;
      case 'tick':
        now += o.ms;
        break;
      case 'expire':
        core.expireStale();
        break;
      case 'addWorker':
        core.addWorker({ worker: o.worker, dpSize: o.dpSize });
        break;
      case 'removeWorker':
        core.removeWorker(o.worker);
        break;
    }
    const t = core.totals();
    expect(t.prefillTokens).toBeGreaterThanOrEqual(0);
    expect(t.decodeBlocks).toBeGreaterThanOrEqual(0);
  }
  for (const id of live) core.free(id); // expired ones answer false, the rest true
  expect(core.totals()).toEqual({ prefillTokens: 0, decodeBlocks: 0, requests: 0 });
  for (const l of core.load()) expect(l).toMatchObject({ prefillTokens: 0, decodeBlocks: 0, activeBlocks: 0, requests: 0 });
  const s = core.stats();
  expect(s.active).toBe(0);
  expect(s.booked).toBe(s.freed + s.expired);
  for (const id of live) expect(core.free(id)).toBe(false);
}

describe('RoutingCore load accounting', () => {
  for (const policy of ['kv', 'round_robin', 'least_loaded'] as const) {
    it(`returns to exactly zero after random operations (${policy})`, () => {
      fc.assert(
        fc.property(fc.array(op, { minLength: 1, maxLength: 400 }), (ops) => run(policy, ops)),
        { numRuns: 30, seed: 11 },
      );
    });
  }

  it('returns to zero after thousands of operations in one run', () => {
    const ops = fc.sample(op, { numRuns: 5_000, seed: 5 });
    run('kv', ops);
  });
});
