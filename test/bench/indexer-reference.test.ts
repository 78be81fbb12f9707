// The benchmark's plain-TypeScript indexer must answer like the native KvIndexer, or the
// indexer suite would compare different work.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ReferenceIndexer } from '../../bench/reference/indexer.js';
import { computeBlockHashes } from '../../src/core/hashing.js';
import { KvIndexer } from '../../src/core/indexer.js';

const BLOCK = 4;

/**
 * A content tree shared by all workers: node n's block has its own tokens, and the engine names
 * it n + 1 on every worker (engines hash content, so the same block gets the same name).
 */
class Content {
  readonly parent: number[] = [];
  readonly tokens: Uint32Array[] = [];
  readonly #ids = new Map<string, number>();

  child(parent: number, index: number): number {
    const k = `${parent}/${index}`;
    let id = this.#ids.get(k);
    if (id === undefined) {
      id = this.parent.length;
      this.#ids.set(k, id);
      this.parent.push(parent);
      this.tokens.push(Uint32Array.of(parent + 1, index, id, 7));
    }
    return id;
  }

  /** Tokens of the path from the root down to `node`. */
  path(node: number): number[] {
    const out: number[] = [];
    for (let n = node; n >= 0; n = this.parent[n]) out.unshift(n);
    return out;
  }
}

type Op =
  | { kind: 'store'; worker: number; dpRank: number; from: number; choices: number[] }
  | { kind: 'remove'; worker: number; dpRank: number; pick: number }
  | { kind: 'query'; choices: number[] };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('store' as const),
      worker: fc.integer({ min: 0, max: 3 }),
      dpRank: fc.integer({ min: 0, max: 1 }),
      from: fc.nat(),
      choices: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 6 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('remove' as const),
      worker: fc.integer({ min: 0, max: 3 }),
      dpRank: fc.integer({ min: 0, max: 1 }),
      pick: fc.nat(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('query' as const), choices: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 12 }) }),
  },
);

describe('ReferenceIndexer', () => {
  it('answers findMatches like KvIndexer on random event streams', () => {
    let nonEmpty = 0;
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 200, size: 'max' }), (ops) => {
        const content = new Content();
        const native = new KvIndexer({ blockSize: BLOCK });
        const ref = new ReferenceIndexer(BLOCK);
        const held = new Map<string, Set<number>>(); // per worker: content nodes held
        const heldBy = (w: number, r: number) => {
          const k = `${w}/${r}`;
          let s = held.get(k);
          if (!s) held.set(k, (s = new Set()));
          return s;
        };
        for (const op of ops) {
          if (op.kind === 'store') {
            const mine = heldBy(op.worker, op.dpRank);
            // Extend a block this worker holds (or the root) by blocks it does not hold yet.
            const starts = [-1, ...mine];
            let parent = starts[op.from % starts.length];
            const chain: number[] = [];
            for (const c of op.choices) {
              const n = content.child(parent, c);
              if (mine.has(n)) break;
              chain.push(n);
              parent = n;
            }
            if (chain.length === 0) continue;
            const first = content.parent[chain[0]];
            const parentHash = first < 0 ? null : BigInt(first + 1);
            const hashes = BigUint64Array.from(chain.map((n) => BigInt(n + 1)));
            const tokens = new Uint32Array(chain.length * BLOCK);
            chain.forEach((n, i) => tokens.set(content.tokens[n], i * BLOCK));
            const a = native.applyStored(op.worker, op.dpRank, parentHash, hashes, tokens);
            const b = ref.applyStored(op.worker, op.dpRank, parentHash, hashes, tokens);
            expect(b).toBe(a);
            if (a) for (const n of chain) mine.add(n);
          } else if (op.kind === 'remove') {
            const mine = [...heldBy(op.worker, op.dpRank)];
            if (mine.length === 0) continue;
            const n = mine[op.pick % mine.length];
            const hashes = BigUint64Array.of(BigInt(n + 1));
            expect(ref.applyRemoved(op.worker, op.dpRank, hashes)).toBe(native.applyRemoved(op.worker, op.dpRank, hashes));
            heldBy(op.worker, op.dpRank).delete(n);
          } else {
            let node = -1;
            for (const c of op.choices) node = content.child(node, c);
            const tokens = new Uint32Array(content.path(node).flatMap((n) => [...content.tokens[n]]));
            const local = computeBlockHashes(tokens, BLOCK);
            const want = native.findMatches(local);
            expect(ref.findMatches(local)).toEqual(want);
            if (want.length > 1 && want[0].blocks > 1) nonEmpty++;
          }
        }
        const s = native.stats();
        expect(ref.stats().blocks).toBe(s.blocks);
      }),
      { numRuns: 150 },
    );
    // The streams were rich enough: many queries matched several workers over several blocks.
    expect(nonEmpty).toBeGreaterThan(100);
  });

  it('refuses events with an unknown parent or a repeated hash, applying nothing', () => {
    const ref = new ReferenceIndexer(BLOCK);
    const t = Uint32Array.of(1, 2, 3, 4, 5, 6, 7, 8);
    expect(ref.applyStored(0, 0, 99n, BigUint64Array.of(1n, 2n), t)).toBe(false);
    expect(ref.applyStored(0, 0, null, BigUint64Array.of(1n, 1n), t)).toBe(false);
    expect(ref.stats()).toMatchObject({ blocks: 0, nodes: 0, rejected: 2 });
    expect(ref.applyStored(0, 0, null, BigUint64Array.of(1n, 2n), t)).toBe(true);
    expect(ref.applyStored(0, 0, 2n, BigUint64Array.of(2n), t.subarray(0, 4))).toBe(false);
    expect(() => ref.applyStored(0, 0, null, BigUint64Array.of(3n), t)).toThrow(RangeError);
    expect(ref.findMatches(computeBlockHashes(t, BLOCK))).toEqual([{ worker: 0, dpRank: 0, blocks: 2 }]);
  });
});
