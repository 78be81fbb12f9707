// The KV event stream is exact: replaying it reproduces the model's set of cached blocks after every
// step, through evictions, preemptions, transfers, holds, aborts and resets. Checked as a property
// over random workloads on tiny caches, with the chain of every BlockStored verified by content.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ROOT_HI, ROOT_LO, hashBlock, loraSeed, toU64 } from '../../../src/sim/engine/block-hash.js';
import { applyEventsToSet, EngineModel, type KvEvent, type TokenOutput } from '../../../src/sim/engine/index.js';

/** The consumer's view, refusing anything a strict indexer would reject. */
class ReferenceIndex {
  readonly blocks = new Set<bigint>();

  apply(events: readonly KvEvent[]): void {
    const scratch = new Uint32Array(2);
    for (const ev of events) {
      if (ev.type === 'AllBlocksCleared') {
        this.blocks.clear();
      } else if (ev.type === 'BlockRemoved') {
        for (const h of ev.blockHashes) {
          expect(this.blocks.has(h), `removal of unknown block ${h}`).toBe(true);
          this.blocks.delete(h);
        }
      } else {
        expect(ev.tokenIds).toHaveLength(ev.blockHashes.length * ev.blockSize);
        let parent = ev.parentBlockHash;
        if (parent !== null) expect(this.blocks.has(parent), `unknown parent ${parent}`).toBe(true);
        ev.blockHashes.forEach((h, i) => {
          expect(this.blocks.has(h), `duplicate store of ${h}`).toBe(false);
          // Content addressing: the hash is that of the block's tokens chained to its parent.
          const hi = parent === null ? ROOT_HI : Number(parent >> 32n);
          const lo = parent === null ? ROOT_LO : Number(parent & 0xffffffffn);
          hashBlock(Uint32Array.from(ev.tokenIds), i * ev.blockSize, ev.blockSize, hi, lo, loraSeed(ev.loraName), scratch);
          expect(toU64(scratch[0], scratch[1])).toBe(h);
          this.blocks.add(h);
          parent = h;
        });
      }
    }
  }
}

const op = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('submit' as const),
      family: fc.integer({ min: 0, max: 3 }),
      length: fc.integer({ min: 1, max: 60 }),
      divergeAt: fc.integer({ min: 0, max: 60 }),
      maxTokens: fc.integer({ min: 1, max: 12 }),
      lora: fc.constantFrom(undefined, 'a'),
      hold: fc.boolean(),
      transfer: fc.integer({ min: 0, max: 60 }),
    }),
  },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('step' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('abort' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 40 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reset' as const) }) },
);

const engine = fc.record({
  blockSize: fc.constantFrom(2, 4),
  kvBlocks: fc.integer({ min: 6, max: 40 }),
  maxNumBatchedTokens: fc.integer({ min: 1, max: 48 }),
  maxNumSeqs: fc.integer({ min: 1, max: 6 }),
  eosProbability: fc.constantFrom(0, 0.1),
  prefillHoldMs: fc.integer({ min: 0, max: 60 }),
  seed: fc.nat(),
});

describe('KV events', () => {
  it('replaying the events reproduces exactly the cached block set, and nothing leaks', () => {
    fc.assert(
      fc.property(engine, fc.array(op, { minLength: 1, maxLength: 80 }), (cfg, ops) => {
        const m = new EngineModel({ ...cfg, speedup: 10, kvTransfer: { bytesPerToken: 1e4, bandwidthBytesPerS: 1e7 } });
        const capacity = cfg.blockSize * cfg.kvBlocks;
        const index = new ReferenceIndex();
        const outputs = new Map<string, TokenOutput[]>();
        const ids: string[] = [];
        let now = 0;
        const check = (events: KvEvent[]) => {
          index.apply(events);
          expect(index.blocks).toEqual(m.cachedBlockHashes());
          const x = m.metrics();
          expect(x.usedBlocks).toBeLessThanOrEqual(x.totalBlocks);
          expect(x.cachedBlocks).toBe(index.blocks.size);
        };
        for (const o of ops) {
          if (o.kind === 'submit') {
            const length = Math.min(o.length, capacity - 1);
            const p = Uint32Array.from({ length }, (_, i) => (i < o.divergeAt ? o.family * 1000 + i : 90_000 + ids.length * 100 + i));
            const id = `r${ids.length}`;
            ids.push(id);
            outputs.set(id, []);
            const transfer = Math.min(o.transfer, length);
            m.submit({ id, promptTokens: p, maxTokens: o.maxTokens, loraName: o.lora, holdBlocksAfterFinish: o.hold, kvTransferredTokens: transfer }, now);
          } else if (o.kind === 'step') {
            const r = m.step(now);
            if (r === null) continue;
            expect(r.startMs).toBe(now);
            expect(r.durationMs).toBeGreaterThan(0);
            now += r.durationMs;
            for (const out of r.outputs) outputs.get(out.id)!.push(out);
            check(r.events);
          } else if (o.kind === 'abort' && ids.length > 0) {
            m.abort(ids[o.pick % ids.length], now);
            check([]);
          } else if (o.kind === 'release' && ids.length > 0) {
            m.release(ids[o.pick % ids.length]);
          } else if (o.kind === 'advance') {
            now += o.ms;
          } else if (o.kind === 'reset') {
            check(m.reset());
          }
        }
        // Drain: everything finishes (holds released), then no block is referenced.
        for (let i = 0; i < 50_000 && m.hasWork(); i++) {
          const r = m.step(now)!;
          now += r.durationMs;
          for (const out of r.outputs) outputs.get(out.id)!.push(out);
          check(r.events);
        }
        expect(m.hasWork()).toBe(false);
        for (const id of ids) m.release(id);
        expect(m.metrics()).toMatchObject({ usedBlocks: 0, running: 0, waiting: 0, heldRequests: 0 });
        // Each request's tokens come in order, and nothing follows its finish.
        for (const outs of outputs.values()) {
          outs.forEach((out, i) => expect(out.index).toBe(i));
          expect(outs.slice(0, -1).every((out) => out.finishReason === undefined)).toBe(true);
        }
      }),
      { numRuns: Number(process.env.KVROUTE_PROPERTY_RUNS ?? 150) },
    );
  });

  it('applyEventsToSet follows stores, removals and clears in order', () => {
    const set = new Set<bigint>([9n]);
    applyEventsToSet(set, [
      { type: 'AllBlocksCleared' },
      { type: 'BlockStored', blockHashes: [1n, 2n], parentBlockHash: null, tokenIds: [0, 0], blockSize: 1, loraName: null, medium: 'GPU' },
      { type: 'BlockRemoved', blockHashes: [1n], medium: 'GPU' },
    ]);
    expect([...set]).toEqual([2n]);
  });
});
