// KvIndexer against a reference model written here (maps of sets), on long random sequences of
// stored events (parents picked from what exists), removals, clears and worker removals.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KvIndexer, type OverlapMatch } from '../../src/core/indexer.js';
import { BS, localOf, tokensOf } from './indexer-fixtures.js';

/** Per (worker, dpRank): engine hash -> the block path it names (block values joined). */
class ReferenceIndex {
  readonly held = new Map<string, Map<bigint, string>>();

  stored(worker: number, dpRank: number, parent: bigint | null, engine: bigint[], blocks: number[]): boolean {
    const key = `${worker}:${dpRank}`;
    const map = this.held.get(key) ?? new Map<bigint, string>();
    if (parent !== null && engine.includes(parent)) return false;
    if (new Set(engine).size !== engine.length) return false;
    let path = '';
    if (parent !== null) {
      const p = map.get(parent);
      if (p === undefined) return false;
      path = p;
    }
    const paths: string[] = [];
    for (let i = 0; i < engine.length; i++) {
      path += `/${blocks[i]}`;
      const named = map.get(engine[i]);
      if (named !== undefined && named !== path) return false;
      paths.push(path);
    }
    engine.forEach((e, i) => map.set(e, paths[i]));
    if (map.size > 0) this.held.set(key, map);
    return true;
  }

  removed(worker: number, dpRank: number, engine: bigint[]): number {
    const key = `${worker}:${dpRank}`;
    const map = this.held.get(key);
    if (!map) return 0;
    let n = 0;
    for (const e of new Set(engine)) if (map.delete(e)) n++;
    if (map.size === 0) this.held.delete(key);
    return n;
  }

  matches(blocks: number[]): OverlapMatch[] {
    const out: OverlapMatch[] = [];
    for (const [key, map] of this.held) {
      const paths = new Set(map.values());
      let n = 0;
      let path = '';
      while (n < blocks.length && paths.has((path += `/${blocks[n]}`))) n++;
      const [worker, dpRank] = key.split(':').map(Number);
      if (n > 0) out.push({ worker, dpRank, blocks: n });
    }
    return out.sort((a, b) => b.blocks - a.blocks || a.worker - b.worker || a.dpRank - b.dpRank);
  }

  blocks(): number {
    let n = 0;
    for (const map of this.held.values()) n += new Set(map.values()).size;
    return n;
  }
}

type Op =
  | { kind: 'stored'; worker: number; dpRank: number; parentPick: number; engine: number[]; blocks: number[] }
  | { kind: 'removed'; worker: number; dpRank: number; picks: number[] }
  | { kind: 'cleared'; worker: number; dpRank: number }
  | { kind: 'removeWorker'; worker: number }
  | { kind: 'match'; blocks: number[]; earlyExit: boolean };

const worker = fc.oneof(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 100, max: 180 }));
const dpRank = fc.integer({ min: 0, max: 1 });
const block = fc.integer({ min: 0, max: 2 });
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant('stored' as const),
      worker,
      dpRank,
      parentPick: fc.nat(),
      engine: fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 5 }),
      blocks: fc.array(block, { minLength: 5, maxLength: 5 }),
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('removed' as const), worker, dpRank, picks: fc.array(fc.nat(), { minLength: 1, maxLength: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cleared' as const), worker, dpRank }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('removeWorker' as const), worker }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('match' as const), blocks: fc.array(block, { maxLength: 6 }), earlyExit: fc.boolean() }) },
);

describe('KvIndexer against a reference model', () => {
  it('agrees on long random event sequences', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 50, maxLength: 400 }), (ops) => {
        const ix = new KvIndexer({ blockSize: BS });
        const model = new ReferenceIndex();
        for (const o of ops) {
          switch (o.kind) {
            case 'stored': {
              // Parents from what exists (mostly), the root, or an unknown hash.
              const known = [...(model.held.get(`${o.worker}:${o.dpRank}`)?.keys() ?? [])];
              const pick = o.parentPick % (known.length + 3);
              const parent = pick < known.length ? known[pick] : pick === known.length ? 999n : null;
              const engine = o.engine.map(BigInt);
              const blocks = o.blocks.slice(0, engine.length);
              const want = model.stored(o.worker, o.dpRank, parent, engine, blocks);
              expect(ix.applyStored(o.worker, o.dpRank, parent, BigUint64Array.from(engine), tokensOf(blocks))).toBe(want);
              break;
            }
            case 'removed': {
              const known = [...(model.held.get(`${o.worker}:${o.dpRank}`)?.keys() ?? [])];
              const engine = o.picks.map((p) => (p % 4 === 0 || known.length === 0 ? BigInt(p % 50) : known[p % known.length]));
              const unique = [...new Set(engine)];
              expect(ix.applyRemoved(o.worker, o.dpRank, BigUint64Array.from(unique))).toBe(model.removed(o.worker, o.dpRank, unique));
              break;
            }
            case 'cleared':
              ix.applyCleared(o.worker, o.dpRank);
              model.held.delete(`${o.worker}:${o.dpRank}`);
              break;
            case 'removeWorker':
              ix.removeWorker(o.worker);
              for (const k of [...model.held.keys()]) if (k.startsWith(`${o.worker}:`)) model.held.delete(k);
              break;
            case 'match': {
              const want = model.matches(o.blocks);
              const got = ix.findMatches(localOf(o.blocks), { earlyExit: o.earlyExit });
              if (o.earlyExit) {
                // Same candidates; counts exact except at most one lower bound, the best one.
                expect(got.map((m) => [m.worker, m.dpRank]).sort()).toEqual(want.map((m) => [m.worker, m.dpRank]).sort());
                const exact = new Map(want.map((m) => [`${m.worker}:${m.dpRank}`, m.blocks]));
                const off = got.filter((m) => m.blocks !== exact.get(`${m.worker}:${m.dpRank}`));
                expect(off.length).toBeLessThanOrEqual(1);
                for (const m of off) expect(exact.get(`${m.worker}:${m.dpRank}`)).toBe(want[0].blocks);
              } else {
                expect(got).toEqual(want);
              }
              break;
            }
          }
        }
        expect(ix.stats().blocks).toBe(model.blocks());
        // The final state survives a snapshot.
        const copy = KvIndexer.restore(ix.snapshot());
        for (const q of [
          [0, 1, 2],
          [1, 0],
          [2, 2, 2, 2],
        ])
          expect(copy.findMatches(localOf(q))).toEqual(model.matches(q));
      }),
      { numRuns: 60 },
    );
  });
});
