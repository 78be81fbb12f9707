import { describe, expect, it } from 'vitest';
import { BlockTables } from '../../../src/sim/engine/block-table.js';
import { EventLog } from '../../../src/sim/engine/events.js';
import { KvCache } from '../../../src/sim/engine/kv-cache.js';
import { Sequence } from '../../../src/sim/engine/request.js';
import { model, prompt, runToIdle, storedHashes } from './helpers.js';

function seq(id: string, tokens: Uint32Array): Sequence {
  return new Sequence({ id, promptTokens: tokens, maxTokens: 4, loraName: null, kvTransferredTokens: 0, holdBlocksAfterFinish: false, ignoreEos: false }, 0);
}

/** Admits a sequence with its prefix hit and computes its whole prompt. */
function computePrompt(tables: BlockTables, s: Sequence, events: EventLog): void {
  tables.adoptPrefix(s, tables.matchPrefix(s));
  expect(tables.grow(s, s.numTokens, events)).toBe(true);
  s.numComputed = s.numTokens;
  tables.commitFull(s, events);
}

describe('BlockTables', () => {
  it('announces full blocks once, chained to their parent, and reuses them as a prefix', () => {
    const cache = new KvCache(16);
    const tables = new BlockTables(cache, 4);
    const log = new EventLog();
    const a = seq('a', prompt(10));
    computePrompt(tables, a, log);
    const events = log.take();
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'BlockStored', parentBlockHash: null, blockHashes: a.hashes.slice(0, 2), tokenIds: prompt(8) });
    expect(a.blocks).toHaveLength(3); // the third block holds 2 tokens and is not cached
    // The next chunk completes block 2: its event names block 1 as parent.
    a.appendToken(7);
    a.appendToken(8);
    a.numComputed = 12;
    tables.commitFull(a, log);
    expect(log.take()).toMatchObject([{ parentBlockHash: a.hashes[1], blockHashes: a.hashes.slice(2, 3), tokenIds: Uint32Array.of(1008, 1009, 7, 8) }]);
    const b = seq('b', prompt(9));
    expect(tables.matchPrefix(b)).toEqual(a.blocks.slice(0, 2));
    // Never the last token: an 8-token prompt may reuse only its first block.
    expect(tables.matchPrefix(seq('c', prompt(8)))).toEqual(a.blocks.slice(0, 1));
  });

  it('deduplicates a block that fills while the same content is already cached', () => {
    const cache = new KvCache(16);
    const tables = new BlockTables(cache, 4);
    const log = new EventLog();
    const a = seq('a', prompt(8));
    const b = seq('b', prompt(8));
    // Both admitted before either is cached (same step): no prefix hit for b.
    tables.adoptPrefix(a, tables.matchPrefix(a));
    tables.adoptPrefix(b, tables.matchPrefix(b));
    tables.grow(a, 8, log);
    tables.grow(b, 8, log);
    expect(cache.usedBlocks).toBe(4);
    for (const s of [a, b]) {
      s.numComputed = 8;
      tables.commitFull(s, log);
    }
    expect(storedHashes(log.take())).toEqual([...a.hashes.subarray(0, a.hashCount)]);
    expect(b.blocks).toEqual(a.blocks);
    expect(cache.usedBlocks).toBe(2);
    tables.free(a);
    tables.free(b);
    expect(cache.usedBlocks).toBe(0);
    expect(cache.cachedBlocks).toBe(2);
  });

  it('through the model: identical prompts in one step share blocks and are announced once', () => {
    const m = model({ blockSize: 4, kvBlocks: 64 });
    m.submit({ id: 'a', promptTokens: prompt(16), maxTokens: 3 }, 0);
    m.submit({ id: 'b', promptTokens: prompt(16), maxTokens: 3 }, 0);
    const first = m.step(0)!;
    expect(first.outputs.map((o) => [o.id, o.cachedTokens])).toEqual([
      ['a', 0],
      ['b', 0],
    ]);
    expect(storedHashes(first.events)).toHaveLength(4);
    expect(m.metrics().usedBlocks).toBe(4);
    const rest = runToIdle(m, first.durationMs);
    expect(new Set(storedHashes(rest.events)).size).toBe(storedHashes(rest.events).length);
  });
});
