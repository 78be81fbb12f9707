// The KV event stream is exact: replaying it reproduces the model's set of cached blocks after every
// step, through evictions, preemptions, transfers, holds, aborts and resets. Checked as a property
// over random workloads on tiny caches, with the chain of every BlockStored verified by content.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ROOT_HI, ROOT_LO, hashBlock, loraSeed, toU64 } from '../../../src/sim/engine/block-hash.js';
import { computeBlockHashes } from '../../../src/core/hashing.js';
import { KvIndexer } from '../../../src/core/indexer.js';
import { applyEventsToSet, EngineModel, type KvEvent, type TokenOutput } from '../../../src/sim/engine/index.js';

/**
 * The consumer's view, refusing anything a strict indexer would reject: the GPU's blocks and the
 * CPU tier's. A GPU block's parent is on the GPU; a CPU block's may be on either (offloading moves
 * a sequence's tail first).
 */
class ReferenceIndex {
  readonly blocks = new Set<bigint>();
  readonly offloaded = new Set<bigint>();

  apply(events: readonly KvEvent[]): void {
    const scratch = new Uint32Array(2);
    for (const ev of events) {
      if (ev.type === 'AllBlocksCleared') {
        this.blocks.clear();
        this.offloaded.clear();
      } else if (ev.type === 'BlockRemoved') {
        const tier = ev.medium === 'CPU' ? this.offloaded : this.blocks;
        for (const h of ev.blockHashes) {
          expect(tier.has(h), `removal of unknown ${ev.medium} block ${h}`).toBe(true);
          tier.delete(h);
        }
      } else {
        expect(ev.tokenIds).toHaveLength(ev.blockHashes.length * ev.blockSize);
        const tier = ev.medium === 'CPU' ? this.offloaded : this.blocks;
        let parent = ev.parentBlockHash;
        const known = (h: bigint) => this.blocks.has(h) || (ev.medium === 'CPU' && this.offloaded.has(h));
        if (parent !== null) expect(known(parent), `unknown parent ${parent}`).toBe(true);
        ev.blockHashes.forEach((h, i) => {
          expect(tier.has(h), `duplicate store of ${h}`).toBe(false);
          // Content addressing: the hash is that of the block's tokens chained to its parent.
          const hi = parent === null ? ROOT_HI : Number(parent >> 32n);
          const lo = parent === null ? ROOT_LO : Number(parent & 0xffffffffn);
          hashBlock(Uint32Array.from(ev.tokenIds), i * ev.blockSize, ev.blockSize, hi, lo, loraSeed(ev.loraName), scratch);
          expect(toU64(scratch[0], scratch[1])).toBe(h);
          tier.add(h);
          parent = h;
        });
      }
    }
  }
}

/** Leading blocks of `tokens` in the engine's cache, by the engine's own chained hashes. */
function engineOverlap(tokens: Uint32Array, blockSize: number, lora: string | null, cached: Set<bigint>): number {
  const out = new Uint32Array(2);
  let hi = ROOT_HI;
  let lo = ROOT_LO;
  let n = 0;
  for (; (n + 1) * blockSize <= tokens.length; n++) {
    hashBlock(tokens, n * blockSize, blockSize, hi, lo, loraSeed(lora), out);
    if (!cached.has(toU64(out[0], out[1]))) break;
    [hi, lo] = [out[0], out[1]];
  }
  return n;
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
  // No CPU tier, a small one (its own evictions all the time) or a roomy one.
  offloadBlocks: fc.constantFrom(0, 0, 3, 24),
});

type Cfg = {
  blockSize: number;
  kvBlocks: number;
  maxNumBatchedTokens: number;
  maxNumSeqs: number;
  eosProbability: number;
  prefillHoldMs: number;
  seed: number;
  offloadBlocks: number;
};
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

/** Family prompts: the first `divergeAt` tokens are shared by every prompt of the family. */
function familyPrompt(family: number, length: number, divergeAt: number, salt: number): Uint32Array {
  return Uint32Array.from({ length }, (_, i) => (i < divergeAt ? family * 1000 + i : 90_000 + salt * 100 + i));
}

/**
 * Plays a random workload, checking after every step, abort and reset that the replayed events
 * give exactly the model's cached set; then drains it and checks that nothing leaks, and that the
 * whole stream, replayed again at the end, still verifies: an event's arrays are views of the
 * engine's buffers, which must never change under it.
 */
function playWorkload(cfg: Cfg, ops: Op[], onEvents?: (m: EngineModel, events: KvEvent[]) => void): void {
  const m = new EngineModel({ ...cfg, speedup: 10, kvTransfer: { bytesPerToken: 1e4, bandwidthBytesPerS: 1e7 } });
  const capacity = cfg.blockSize * cfg.kvBlocks;
  const index = new ReferenceIndex();
  const outputs = new Map<string, TokenOutput[]>();
  const ids: string[] = [];
  let now = 0;
  const history: KvEvent[] = [];
  const check = (events: KvEvent[]) => {
    history.push(...events);
    index.apply(events);
    expect(index.blocks).toEqual(m.cachedBlockHashes());
    expect(index.offloaded).toEqual(m.offloadedBlockHashes());
    const x = m.metrics();
    expect(x.usedBlocks).toBeLessThanOrEqual(x.totalBlocks);
    expect(x.cachedBlocks).toBe(index.blocks.size);
    expect(x.offloadedBlocks).toBeLessThanOrEqual(cfg.offloadBlocks);
    onEvents?.(m, events);
  };
  for (const o of ops) {
    if (o.kind === 'submit') {
      const length = Math.min(o.length, capacity - 1);
      const p = familyPrompt(o.family, length, o.divergeAt, ids.length);
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
  const late = new ReferenceIndex();
  late.apply(history);
  expect(late.blocks).toEqual(m.cachedBlockHashes());
  expect(late.offloaded).toEqual(m.offloadedBlockHashes());
  // Each request's tokens come in order, and nothing follows its finish.
  for (const outs of outputs.values()) {
    outs.forEach((out, i) => expect(out.index).toBe(i));
    expect(outs.slice(0, -1).every((out) => out.finishReason === undefined)).toBe(true);
  }
}

describe('KV events', () => {
  it('replaying the events reproduces exactly the cached block set, and nothing leaks', () => {
    fc.assert(
      fc.property(engine, fc.array(op, { minLength: 1, maxLength: 80 }), (cfg, ops) => playWorkload(cfg, ops)),
      { numRuns: Number(process.env.KVROUTE_PROPERTY_RUNS ?? 150) },
    );
  });

  it("the router's KvIndexer, fed the events, accepts every one and matches prompts like the engine's own cache", () => {
    const probes = [0, 1, 2, 3].flatMap((family) => [undefined, 'a'].map((lora) => ({ tokens: familyPrompt(family, 60, 60, 0), lora })));
    fc.assert(
      fc.property(engine, fc.array(op, { minLength: 1, maxLength: 60 }), (cfg, ops) => {
        const indexer = new KvIndexer({ blockSize: cfg.blockSize, clock: () => 0, lowerTiers: true });
        const local = probes.map((p) => computeBlockHashes(p.tokens, cfg.blockSize, { loraName: p.lora }));
        playWorkload(cfg, ops, (m, events) => {
          for (const ev of events) {
            if (ev.type === 'BlockStored') {
              // The event's own arrays (views of the sequence's buffers), as the replay feeds them.
              const ok = indexer.applyStored(0, 0, ev.parentBlockHash, ev.blockHashes, ev.tokenIds, { loraName: ev.loraName ?? undefined, medium: ev.medium });
              expect(ok, JSON.stringify(indexer.stats().rejected)).toBe(true);
            } else if (ev.type === 'BlockRemoved') {
              // Every removal names a block the indexer holds on that medium.
              expect(indexer.applyRemoved(0, 0, ev.blockHashes, { medium: ev.medium })).toBe(ev.blockHashes.length);
            } else {
              indexer.applyCleared(0, 0);
            }
          }
          const cached = m.cachedBlockHashes();
          expect(indexer.stats().blocks).toBe(cached.size);
          probes.forEach((p, i) => {
            const overlap = indexer.findMatches(local[i]).find((x) => x.worker === 0)?.blocks ?? 0;
            expect(overlap).toBe(engineOverlap(p.tokens, cfg.blockSize, p.lora ?? null, cached));
          });
        });
        const s = indexer.stats();
        expect(Object.values(s.rejected).every((n) => n === 0)).toBe(true);
      }),
      { numRuns: Math.ceil(Number(process.env.KVROUTE_PROPERTY_RUNS ?? 150) / 3) },
    );
  });

  it('applyEventsToSet follows stores, removals and clears in order', () => {
    const set = new Set<bigint>([9n]);
    applyEventsToSet(set, [
      { type: 'AllBlocksCleared' },
      {
        type: 'BlockStored',
        blockHashes: BigUint64Array.of(1n, 2n),
        parentBlockHash: null,
        tokenIds: Uint32Array.of(0, 0),
        blockSize: 1,
        loraName: null,
        medium: 'GPU',
      },
      { type: 'BlockRemoved', blockHashes: BigUint64Array.of(1n), medium: 'GPU' },
    ]);
    expect([...set]).toEqual([2n]);
  });
});
