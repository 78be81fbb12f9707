import { describe, expect, it } from 'vitest';
import { KvIndexer } from '../../../../src/core/indexer.js';
import type { TraceRequest } from '../../../../src/sim/replay/trace.js';
import { FLEET_MAGIC, encodeFleetOps } from '../../../../bench/peers/fleet-scale/ops-file.js';
import { prepare, replayKvroute } from '../../../../bench/peers/fleet-scale/kvroute-replay.js';
import {
  COPY_STRIDE,
  fleetWorkload,
  localHashesOf,
  OP_QUERY,
  OP_REMOVED,
  OP_STORED,
  type FleetWorkloadOptions,
} from '../../../../bench/peers/fleet-scale/workload.js';

/** A conversation-like trace: every request shares block 0, then its session's growing prefix. */
function trace(requests: number): TraceRequest[] {
  const out: TraceRequest[] = [];
  let next = 1;
  const sessions: number[][] = [];
  for (let i = 0; i < requests; i++) {
    const s = i % 7;
    sessions[s] ??= [0];
    const grown = [...sessions[s], next++, next++];
    sessions[s] = grown;
    out.push({ timestamp: i * 100, inputLength: grown.length * 512, outputLength: 700, hashIds: grown });
  }
  return out;
}

const OPTIONS: FleetWorkloadOptions = { uniqueWorkers: 5, duplication: 3, capacityBlocks: 6, simulationMs: 1000, msPerOutputToken: 1, blockSize: 4, seed: 7 };

describe('the fleet-scale workload', () => {
  it('is the same for the same seed and differs for another', () => {
    const a = fleetWorkload(trace(40), OPTIONS);
    const b = fleetWorkload(trace(40), OPTIONS);
    expect(b.ops.map((o) => [o.kind, o.worker, o.atMs, [...o.blocks]])).toEqual(a.ops.map((o) => [o.kind, o.worker, o.atMs, [...o.blocks]]));
    const c = fleetWorkload(trace(40), { ...OPTIONS, seed: 8 });
    expect(c.ops.map((o) => o.worker)).not.toEqual(a.ops.map((o) => o.worker));
  });

  it('orders ops by time, with a query per request per copy, and counts what it holds', () => {
    const w = fleetWorkload(trace(40), OPTIONS);
    for (let i = 1; i < w.ops.length; i++) expect(w.ops[i].atMs).toBeGreaterThanOrEqual(w.ops[i - 1].atMs);
    expect(w.counts.queries).toBe(40 * OPTIONS.duplication);
    expect(w.counts.stored).toBe(w.ops.filter((o) => o.kind === OP_STORED).length);
    expect(w.counts.removed).toBeGreaterThan(0); // 6-block caches must evict
    expect(w.workers).toBe(OPTIONS.uniqueWorkers * OPTIONS.duplication);
  });

  it('keeps each copy in its own workers and its own hash space', () => {
    const w = fleetWorkload(trace(40), OPTIONS);
    for (const op of w.ops) {
      const copy = Math.floor(op.worker / OPTIONS.uniqueWorkers);
      for (const b of op.blocks) expect(Math.floor(b / COPY_STRIDE)).toBe(copy);
    }
  });

  it('produces events an indexer applies whole: caches stay prefix-closed through evictions', () => {
    const w = fleetWorkload(trace(60), OPTIONS);
    const ix = new KvIndexer({ blockSize: OPTIONS.blockSize });
    const held = new Map<number, Set<number>>();
    for (const op of prepare(w)) {
      if (op.kind === OP_STORED) {
        expect(ix.applyStored(op.worker, 0, op.parent, op.hashes, op.tokens)).toBe(true);
        for (const h of op.hashes) (held.get(op.worker) ?? held.set(op.worker, new Set()).get(op.worker)!).add(Number(h));
      } else if (op.kind === OP_REMOVED) {
        expect(ix.applyRemoved(op.worker, 0, op.hashes)).toBe(op.hashes.length);
        for (const h of op.hashes) held.get(op.worker)!.delete(Number(h));
      }
    }
    for (const [worker, blocks] of held) expect(ix.blocksOf(worker)).toBe(blocks.size);
    // A cache holds its capacity, or a single request's blocks when they alone are more.
    const longest = Math.max(...w.ops.filter((o) => o.kind !== OP_REMOVED).map((o) => o.blocks.length)) + Math.max(...trace(60).map((r) => r.hashIds.length));
    for (const set of held.values()) expect(set.size).toBeLessThanOrEqual(Math.max(OPTIONS.capacityBlocks, longest));
  });

  it('replays on kvroute with every event applied and a find_matches per query', () => {
    const w = fleetWorkload(trace(30), OPTIONS);
    const r = replayKvroute(w, prepare(w), 0);
    expect(r.rejected).toBe(0);
    expect(r.ops).toBe(w.ops.length);
    expect(r.findP99Ns).toBeGreaterThan(0);
    expect(r.blocksAtEnd).toBeGreaterThan(0);
  });

  it('writes the timeline for the Dynamo peer in its documented layout', () => {
    const w = fleetWorkload(trace(10), OPTIONS);
    const buf = encodeFleetOps(w);
    expect(buf.toString('latin1', 0, 8)).toBe(FLEET_MAGIC);
    expect([buf.readUInt32LE(8), buf.readUInt32LE(12), buf.readUInt32LE(16), buf.readUInt32LE(20)]).toEqual([1, OPTIONS.blockSize, w.ops.length, w.workers]);
    let at = 24;
    for (const op of w.ops) {
      expect(buf.readUInt32LE(at)).toBe(op.kind);
      expect(buf.readUInt32LE(at + 4)).toBe(op.worker);
      const n = buf.readUInt32LE(at + 16);
      expect(n).toBe(op.blocks.length);
      expect(buf.readUInt32LE(at + 20)).toBe(op.parent >= 0 ? 1 : 0);
      at += 32;
      const first = Array.from({ length: n }, (_, i) => buf.readBigUInt64LE(at + 8 * i));
      if (op.kind === OP_QUERY) expect(first).toEqual([...localHashesOf(op.blocks, OPTIONS.blockSize)]);
      else expect(first).toEqual([...op.blocks].map(BigInt));
      at += 8 * n * (op.kind === OP_STORED ? 2 : 1);
    }
    expect(at).toBe(buf.length);
  });

  it('refuses options that make no fleet', () => {
    expect(() => fleetWorkload(trace(5), { ...OPTIONS, uniqueWorkers: 0 })).toThrow(RangeError);
    expect(() => fleetWorkload(trace(5), { ...OPTIONS, capacityBlocks: 1.5 })).toThrow(RangeError);
    expect(() => fleetWorkload([], OPTIONS)).toThrow(RangeError);
  });
});
