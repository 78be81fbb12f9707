// computeBlockHashes against vectors computed by NVIDIA Dynamo 1.6.1 itself
// (dynamo._core.compute_block_hash_for_seq): plain and EAGLE windows, LoRA and namespace seeds,
// multimodal items. The fixture and the script that made it: test/fixtures/dynamo-hashes/.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { computeBlockHashes } from '../../src/core/hashing.js';

interface Case {
  tokens: number[];
  blockSize: number;
  eagle: boolean;
  loraName: string | null;
  cacheNamespace: string | null;
  mmHashes?: Array<string[] | null>;
  hashes: string[];
}

const fixture = JSON.parse(readFileSync(new URL('../fixtures/dynamo-hashes/vectors.json', import.meta.url), 'utf8')) as { cases: Case[] };

describe('computeBlockHashes equals Dynamo 1.6.1 byte for byte', () => {
  it('has vectors for both windows, seeds and multimodal blocks', () => {
    const cases = fixture.cases;
    expect(cases.filter((c) => c.eagle).length).toBeGreaterThan(20);
    expect(cases.filter((c) => c.eagle && c.loraName).length).toBeGreaterThan(5);
    expect(cases.filter((c) => c.eagle && c.mmHashes).length).toBe(1);
  });

  it.each(fixture.cases.map((c, i) => [i, c] as const))('case %i', (_i, c) => {
    const got = computeBlockHashes(Uint32Array.from(c.tokens), c.blockSize, {
      eagle: c.eagle,
      loraName: c.loraName ?? undefined,
      cacheNamespace: c.cacheNamespace ?? undefined,
      mmHashes: c.mmHashes?.map((items) => items?.map(BigInt) ?? null),
    });
    expect([...got].map(String)).toEqual(c.hashes);
  });
});
