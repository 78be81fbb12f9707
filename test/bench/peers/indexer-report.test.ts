import { describe, expect, it } from 'vitest';
import type { IndexerComparison } from '../../../bench/peers/indexer-compare.js';
import { indexerReport } from '../../../bench/peers/indexer-report.js';
import { compareScores } from '../../../bench/peers/scores.js';
import { completeFigure } from '../../../bench/lib/suite.js';

const applied = (seconds: number, blocks: number) => ({ seconds, rejected: 0, blocks });

function comparison(extra: Partial<IndexerComparison> = {}): IndexerComparison {
  const same = compareScores('Dynamo RadixTree (after the stored events)', [[[1, 0, 4]]], [[[1, 0, 4]]]);
  return {
    ready: {
      type: 'ready',
      crate: 'dynamo-kv-router 1.6.1',
      event_threads: 4,
      block_size: 16,
      stored: 1000,
      removed: 100,
      queries: 1,
      hash_check: { blocks: 5000, mismatches: 0 },
      clock_overhead_ns: 20,
    },
    stored: 1000,
    removed: 100,
    queries: 1,
    // kvroute: 1,000 events in 4 ms (250k/s) and 2 ms, removals in 1 ms; find_matches p50 4 and 5 us in two rounds.
    kvroute: [4, 2, 4].map((ms) => ({ storedSeconds: ms / 1000, removedSeconds: 0.001, blocks: 32_000, blocksAfterRemoval: 28_800, approxBytes: 32_000 * 40 })),
    dynamoBuilt: [1, 2, 1].map((ms) => ({
      type: 'built' as const,
      events: 1000,
      radix: { ...applied(ms / 1000, 32_000), heap_bytes: 32_000 * 80 },
      pool: { ...applied(0.002, 32_000), heap_bytes: 32_000 * 100 },
      rss_bytes: 0,
    })),
    dynamoRemoved: [1, 1, 1].map(() => ({ type: 'removed' as const, events: 100, radix: applied(0.0005, 28_800), pool: applied(0.002, 28_800) })),
    latencyNs: {
      kvroutePublic: [
        [4000, 4000, 4000],
        [4000, 5000, 6000],
      ],
      kvrouteBare: [[3000], [3000]],
      dynamoRadix: [[2000], [2000]],
      dynamoPool: [[1000], [1000]],
    },
    hashNs: { kvroute: [1500], dynamo: [1600], tokens: 8192 },
    scoreChecks: [same],
    eventBatch: { storedEventsPerS: 100_000, removedEventsPerS: 100_000, payloadBytes: 2600 },
    ...extra,
  };
}

const byName = (figures: ReturnType<typeof indexerReport>['figures'], start: string) => {
  const f = figures.find((x) => x.name.startsWith(start));
  if (!f) throw new Error(`no figure starting with ${start}`);
  return completeFigure(f);
};

describe('the Dynamo indexer report', () => {
  it('sets medians of rounds against the Dynamo indexer of the same run, with issue 14 targets from its figures', () => {
    const r = indexerReport(comparison());
    const p50 = byName(r.figures, 'find_matches p50, kvroute KvIndexer.findMatches (public API) vs Dynamo ConcurrentRadixTreeCompressed');
    expect(p50).toMatchObject({ value: 4.5, unit: 'us', reference: { value: 1 }, target: { op: '<=', value: 1 }, met: false, headline: true });
    const stored = byName(r.figures, 'stored events applied per second (32 blocks each)');
    expect(stored.value).toBe(250_000); // median of 250k, 500k, 250k
    expect(stored.reference).toEqual({ name: 'Dynamo RadixTree (one thread)', value: 1_000_000 });
    expect(stored.note).toBe('rounds: kvroute 250k, 500k, 250k; Dynamo 1M, 500k, 1M');
    const removed = byName(r.figures, 'removed events applied per second (32 blocks each)');
    expect(removed).toMatchObject({ value: 100_000, reference: { value: 200_000 }, target: { op: '>=', value: 200_000 }, met: false });
    const bytes = byName(r.figures, 'bytes per indexed block, kvroute (stats().approxBytes)');
    expect(bytes).toMatchObject({ value: 40, reference: { value: 80 }, better: 'lower' });
    expect(byName(r.figures, 'queries whose overlap scores differ')).toMatchObject({ value: 0, met: true });
    expect(r.sections?.[0].markdown).toContain('identical overlap scores on all 1 queries');
    expect(r.sections?.[0].markdown).toContain('| kvroute applyEventBatch (payload bytes) | 100k | 100k | |');
    expect(r.figures.some((f) => f.name.includes('applyEventBatch'))).toBe(true);
    expect(r.charts?.map((c) => c.name)).toEqual(['find-matches-cdf', 'events']);
  });

  it('reports differing scores loudly: a headline figure that misses its target, and the differences', () => {
    const differ = compareScores('Dynamo ConcurrentRadixTreeCompressed (after the removals)', [[[1, 0, 4]], [[2, 0, 3]]], [[[1, 0, 3]], [[2, 0, 3]]]);
    const r = indexerReport(comparison({ scoreChecks: [differ] }));
    const f = byName(r.figures, 'queries whose overlap scores differ');
    expect(f).toMatchObject({ value: 1, met: false, headline: true });
    expect(f.note).toMatch(/^SCORES DIFFER: Dynamo ConcurrentRadixTreeCompressed \(after the removals\) disagrees with kvroute on 1 of 2 queries/);
    expect(r.sections?.[0].markdown).toContain('**Overlap scores**: SCORES DIFFER');
  });

  it("sets the applyEventBatch figures against 1.5x Dynamo's tree", () => {
    const r = indexerReport(comparison({ eventBatch: { storedEventsPerS: 2_000_000, removedEventsPerS: 150_000, payloadBytes: 2600 } }));
    expect(byName(r.figures, 'stored events applied per second from payload bytes')).toMatchObject({
      value: 2_000_000,
      target: { op: '>=', value: 1_500_000 },
      met: true,
    });
    expect(byName(r.figures, 'removed events applied per second from payload bytes')).toMatchObject({ target: { op: '>=', value: 200_000 }, met: false });
  });
});
