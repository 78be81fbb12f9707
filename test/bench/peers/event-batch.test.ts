import { describe, expect, it } from 'vitest';
import { decodeEventBatch } from '../../../src/events/decode.js';
import { EVENTS_PER_BATCH, removedPayloads, storedPayloads } from '../../../bench/indexer/payloads.js';
import { measureApplyEventBatch } from '../../../bench/peers/event-batch.js';
import { removedEvents, storedEvents } from '../../../bench/indexer/workload.js';

describe('the workload as KV event payloads', () => {
  const stored = storedEvents(2);
  const removed = removedEvents(2);

  it("encodes every event once, in order, each payload one worker's, hashes exact", () => {
    const payloads = storedPayloads(stored);
    expect(payloads.reduce((n, p) => n + p.events, 0)).toBe(stored.length);
    expect(Math.max(...payloads.map((p) => p.events))).toBeLessThanOrEqual(EVENTS_PER_BATCH);
    let i = 0;
    for (const p of payloads) {
      const d = decodeEventBatch(p.bytes);
      if (!d.ok) throw d.error;
      for (const e of d.batch.events) {
        const want = stored[i++];
        expect(p.worker).toBe(want.worker);
        expect(e).toMatchObject({ kind: 'stored', parentHash: want.parent, blockHashes: want.hashes });
      }
    }
    expect(removedPayloads(removed).reduce((n, p) => n + p.events, 0)).toBe(removed.length);
  });

  it('measures applyEventBatch on them, every event applied', () => {
    const lines: string[] = [];
    const f = measureApplyEventBatch({ stored, removed }, (l) => lines.push(l));
    expect(f.storedEventsPerS).toBeGreaterThan(0);
    expect(f.removedEventsPerS).toBeGreaterThan(0);
    expect(lines[0]).toMatch(/^applyEventBatch \(32 events a payload\): \d+ stored events\/s/);
  });
});
