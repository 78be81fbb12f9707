// Snapshots written by the per-block tree (format version 1, before the compressed tree) still
// load, and the restored index answers as the one that wrote them did. The fixture and the script
// that wrote it: test/fixtures/indexer-snapshot-v1/.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { computeBlockHashes } from '../../src/core/hashing.js';
import { KvIndexer, type OverlapMatch } from '../../src/core/indexer.js';

interface Expected {
  mode: string;
  clockMs?: number;
  stats: { blocks: number; workers: number };
  workers: Array<{ worker: number; dpRank: number; blocks: number }>;
  queries: Array<{ blocks: number[]; matches: OverlapMatch[] }>;
}

const BS = 4;
const dir = new URL('../fixtures/indexer-snapshot-v1/', import.meta.url);
const tokensOf = (blocks: readonly number[]) => Uint32Array.from(blocks.flatMap((v) => [v, v + 1, v + 2, v + 3]));
const localOf = (blocks: readonly number[]) => computeBlockHashes(tokensOf(blocks), BS);

function load(name: string): { bytes: Uint8Array; expected: Expected } {
  return {
    bytes: new Uint8Array(readFileSync(new URL(`${name}.snapshot`, dir))),
    expected: JSON.parse(readFileSync(new URL(`${name}.expected.json`, dir), 'utf8')) as Expected,
  };
}

function answersAsRecorded(ix: KvIndexer, expected: Expected): void {
  expect(ix.mode).toBe(expected.mode);
  expect(ix.stats().blocks).toBe(expected.stats.blocks);
  expect(ix.stats().workers).toBe(expected.stats.workers);
  expect(ix.workers().map((w) => ({ ...w, blocks: ix.blocksOf(w.worker, w.dpRank) }))).toEqual(expected.workers);
  for (const q of expected.queries) expect(ix.findMatches(localOf(q.blocks)), `query ${q.blocks.join(',')}`).toEqual(q.matches);
}

describe('version 1 snapshots', () => {
  for (const name of ['events', 'events-capped', 'approximate']) {
    it(`${name}: restores and answers as the index that wrote it, also after a new snapshot`, () => {
      const { bytes, expected } = load(name);
      expect(new DataView(bytes.buffer, bytes.byteOffset).getUint32(8, true)).toBe(1);
      const clock = () => expected.clockMs ?? 0;
      const a = KvIndexer.restore(bytes, { clock });
      answersAsRecorded(a, expected);
      // Written again in the current version, it still answers the same.
      const again = a.snapshot();
      expect(new DataView(again.buffer, again.byteOffset).getUint32(8, true)).toBe(2);
      answersAsRecorded(KvIndexer.restore(again, { clock }), expected);
    });
  }

  it('the engine keys survive: a restored index keeps taking events', () => {
    const { bytes, expected } = load('events');
    const ix = KvIndexer.restore(bytes);
    // The fixture's engine keys are 1, 2, 3, ... in storing order; removing every key each worker
    // might hold empties the index exactly.
    const all = BigUint64Array.from({ length: 2_000 }, (_, i) => BigInt(i + 1));
    let removed = 0;
    for (const w of expected.workers) removed += ix.applyRemoved(w.worker, w.dpRank, all);
    expect(removed).toBeGreaterThanOrEqual(expected.stats.blocks);
    expect(ix.stats().blocks).toBe(0);
    expect(ix.stats().nodes).toBe(0);
    // And new events build on a restored index as on any other.
    const fresh = KvIndexer.restore(bytes);
    expect(fresh.applyStored(500, 0, null, BigUint64Array.of(9_001n, 9_002n), tokensOf([1, 2]))).toBe(true);
    expect(fresh.findMatches(localOf([1, 2, 3])).find((m) => m.worker === 500)).toEqual({ worker: 500, dpRank: 0, blocks: 2 });
  });
});
