// The public API of `kvroute/hash-pool`.
import type { BatchHashes } from 'kvroute';
import { describe, expectTypeOf, it } from 'vitest';
import * as hashPool from 'kvroute/hash-pool';
import { HashPool, type BatchHashResult, type PromptHashes } from 'kvroute/hash-pool';

describe('kvroute/hash-pool', () => {
  it('hashes batches off the calling thread', () => {
    const pool = new HashPool({ threads: 2 });
    expectTypeOf(pool.hashBatch(new Uint32Array(4), Uint32Array.of(0, 4), 4)).toEqualTypeOf<Promise<BatchHashResult>>();
    expectTypeOf(pool.hashPrompts([new Uint32Array(4)], 4)).toEqualTypeOf<Promise<PromptHashes[]>>();
    expectTypeOf<BatchHashResult>().toExtend<BatchHashes>();
    expectTypeOf<BatchHashResult['placement']>().toEqualTypeOf<'inline' | 'pool'>();
  });

  it('keeps its splitting internal', () => {
    expectTypeOf(hashPool).not.toHaveProperty('splitByTokens');
  });
});
