// The buffers between Rust and TypeScript round trip by field name: the addon's layoutProbe calls
// write a distinct value into every field through the real writers (native/src/bindings/
// layout_probe.rs), and the real readers here must find each value under its own name. An offset
// changed on one side only (layout.rs without regenerating, or generated/layout.ts by hand) fails.
import { describe, expect, it } from 'vitest';
import { native } from '../../src/core/binding.js';
import { readDecision } from '../../src/core/decision-buffer.js';
import { EventBatchCounts, eventBatchResult } from '../../src/core/event-batch.js';
import { BatchCounts, Candidate, DECISION_LEN, Decision, Match, MAX_CANDIDATES } from '../../src/core/generated/layout.js';
import { copyMatchTriples, readMatches } from '../../src/core/match-buffer.js';

describe('buffer layouts (native/src/bindings/layout.rs, src/core/generated/layout.ts)', () => {
  it('the decision and its candidates', () => {
    const out = new Float64Array(DECISION_LEN);
    const n = native.layoutProbeDecision(out);
    expect(n).toBe(2);
    const d = readDecision(out, n, 'r', 'kv');
    expect(d).toEqual({
      requestId: 'r',
      worker: 1,
      dpRank: 2,
      overlapBlocks: 3,
      promptTokens: 4,
      cachedTokens: 5,
      prefillTokens: 6,
      timingsUs: { hash: 7, match: 8, select: 9, total: 10 },
      lowerTierBlocks: { host: 11, disk: 12, external: 13 },
      predictedTtftMs: 14.5,
      policy: 'kv',
      candidates: [100, 200].map((v) => ({
        worker: v + 1,
        dpRank: v + 2,
        overlapBlocks: v + 3,
        lowerTierBlocks: { host: v + 4, disk: v + 5, external: v + 6 },
        prefillBlocks: v + 7,
        decodeBlocks: v + 8,
        cost: v + 9.5,
      })),
    });
    // The candidate count is a field of its own (the readers take the call's return value).
    expect(out[Decision.CANDIDATES]).toBe(2);
    expect(DECISION_LEN).toBe(Decision.LEN + MAX_CANDIDATES * Candidate.LEN);
  });

  it('a batch of KV events counts', () => {
    const counts = new EventBatchCounts();
    expect(counts.array.length).toBe(BatchCounts.LEN);
    native.layoutProbeBatchCounts(counts.array);
    expect(counts.result(null)).toEqual({
      events: 1,
      stored: 2,
      removed: 3,
      cleared: 4,
      refused: {
        blockSize: 5,
        tokenCount: 6,
        unknownParent: 7,
        duplicateHash: 8,
        selfParent: 9,
        hashCollision: 10,
        indexFull: 11,
        malformed: 12,
        invalid: 13,
        unknownRemoval: 14,
      },
      unknownTypes: 15,
      otherGroups: 16,
      lowerTiers: [],
      otherMedia: [],
      ts: 17.5,
      dpRank: 18,
      cancelled: false,
    });
    expect(eventBatchResult(counts.array, null, true).cancelled).toBe(true);
  });

  it('the matches of a prefix lookup', () => {
    const out = new Int32Array(2 * Match.LEN);
    const r = native.layoutProbeMatches(out);
    const wide = 7 * 2 ** 32 + 5;
    expect(readMatches(out, r)).toEqual([
      { worker: wide, dpRank: 3, blocks: 4 },
      { worker: 9, dpRank: 10, blocks: 11 },
    ]);
    const triples = new Float64Array(6);
    copyMatchTriples(out, 2, triples);
    expect([...triples]).toEqual([wide, 3, 4, 9, 10, 11]);
  });

  it('the probes refuse a buffer too small', () => {
    expect(() => native.layoutProbeDecision(new Float64Array(DECISION_LEN - 1))).toThrow(/needs 87 entries/);
    expect(() => native.layoutProbeBatchCounts(new Float64Array(BatchCounts.LEN - 1))).toThrow(/needs 18 entries/);
    expect(() => native.layoutProbeMatches(new Int32Array(7))).toThrow(/needs 8 entries/);
  });
});
