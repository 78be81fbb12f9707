// The fleet-scale indexer workload, built the way Dynamo's mooncake_bench builds its own: the
// Mooncake conversation trace's requests partitioned among `uniqueWorkers` workers (seeded), each
// worker's KV cache simulated (an LRU of trace blocks with a capacity), the events those caches
// publish and a find_matches per request laid on one timeline, and the whole fleet copied
// `duplication` times with disjoint hash spaces (7 copies of 1,000 workers: 7,000 workers).
//
// One op list feeds both indexers: kvroute's KvIndexer (tokens, which it hashes itself) and
// Dynamo's ConcurrentRadixTreeCompressed (the same blocks' local hashes, handed to it), so both
// see exactly the same events and queries in the same order at the same times.
import { computeBlockHashes } from '../../../src/core/hashing.js';
import type { TraceRequest } from '../../../src/sim/replay/trace.js';

export interface FleetWorkloadOptions {
  uniqueWorkers: number;
  duplication: number;
  /** Blocks each worker's cache holds (trace blocks of 512 tokens). */
  capacityBlocks: number;
  /** The trace's span compressed to this many ms of simulated time (Dynamo's --trace-simulation-duration-ms). */
  simulationMs: number;
  /** Decode time per output token in the trace's own time, before compression. */
  msPerOutputToken: number;
  /** Tokens that stand for one trace block in the index (the indexers hash blocks of this size). */
  blockSize: number;
  seed: number;
}

export const OP_QUERY = 0;
export const OP_STORED = 1;
export const OP_REMOVED = 2;

/** One op of the timeline; hashes are the blocks' ids in the fleet's hash space. */
export interface FleetOp {
  kind: typeof OP_QUERY | typeof OP_STORED | typeof OP_REMOVED;
  /** Simulated time, ms from the start (0 .. simulationMs and a little past for the last decodes). */
  atMs: number;
  worker: number;
  /** Stored: the first block's parent, or -1 for a root block. */
  parent: number;
  blocks: Float64Array;
}

export interface FleetWorkload {
  options: FleetWorkloadOptions;
  /** Ordered by time (then by the order the simulation produced them). */
  ops: FleetOp[];
  counts: { queries: number; stored: number; removed: number; storedBlocks: number; removedBlocks: number; queryBlocks: number };
  workers: number;
}

/** Ids of one copy are offset by this, above any id of the trace or of generated output blocks. */
export const COPY_STRIDE = 2 ** 40;

/** mulberry32: a small seeded generator, so the partition is the same run after run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One worker's cache: blocks by id in last-use order (a Map keeps insertion order). */
class WorkerCache {
  private readonly held = new Map<number, true>();
  constructor(private readonly capacity: number) {}

  /**
   * Touches a sequence of blocks, leaf first and root last, as vLLM frees a finished request's
   * blocks in reverse so that its tail is evicted first: a parent is always used more recently
   * than its children, so the least recently used block is always a leaf and an eviction never
   * strands a child. Returns the blocks that were not held (in sequence order) and the evicted ones.
   */
  touch(blocks: readonly number[]): { stored: number[]; evicted: number[] } {
    const stored: number[] = [];
    for (const b of blocks) if (!this.held.has(b)) stored.push(b);
    for (let i = blocks.length - 1; i >= 0; i--) {
      this.held.delete(blocks[i]);
      this.held.set(blocks[i], true);
    }
    const evicted: number[] = [];
    const protectedSet = new Set(blocks);
    for (const b of this.held.keys()) {
      if (this.held.size <= this.capacity) break;
      if (protectedSet.has(b)) continue; // the request's own blocks stay while it runs
      this.held.delete(b);
      evicted.push(b);
    }
    return { stored, evicted };
  }
}

/** The timeline of one copy of the fleet (copy 0's ids); the copies differ only by ids. */
function simulateCopy(trace: readonly TraceRequest[], o: FleetWorkloadOptions): FleetOp[] {
  const random = rng(o.seed);
  const caches = Array.from({ length: o.uniqueWorkers }, () => new WorkerCache(o.capacityBlocks));
  const span = Math.max(1, trace[trace.length - 1].timestamp - trace[0].timestamp);
  const scale = o.simulationMs / span;
  let nextOutputId = 2 ** 39; // generated blocks: fresh ids above the trace's
  const ops: FleetOp[] = [];
  const pending: { atMs: number; worker: number; blocks: number[] }[] = [];
  const emit = (atMs: number, worker: number, cache: WorkerCache, sequence: number[], from: number) => {
    const { stored, evicted } = cache.touch(sequence);
    if (evicted.length > 0) ops.push({ kind: OP_REMOVED, atMs, worker, parent: -1, blocks: Float64Array.from(evicted) });
    if (stored.length === 0) return;
    // The new blocks are the sequence's tail from the first one not held (a prefix cache holds prefixes).
    const first = sequence.indexOf(stored[0], from);
    const tail = sequence.slice(first);
    // Leaf-first eviction keeps every cache prefix-closed: what is not held is the sequence's tail.
    if (tail.length !== stored.length) throw new Error(`worker ${worker}'s cache is not prefix-closed: ${stored.length} blocks new, tail of ${tail.length}`);
    ops.push({ kind: OP_STORED, atMs, worker, parent: first > 0 ? sequence[first - 1] : -1, blocks: Float64Array.from(tail) });
  };
  for (const req of trace) {
    const atMs = (req.timestamp - trace[0].timestamp) * scale;
    // Finished decodes due by now publish their output blocks first.
    pending.sort((a, b) => a.atMs - b.atMs);
    while (pending.length > 0 && pending[0].atMs <= atMs) {
      const p = pending.shift()!;
      emit(p.atMs, p.worker, caches[p.worker], p.blocks, 0);
    }
    const worker = Math.floor(random() * o.uniqueWorkers);
    ops.push({ kind: OP_QUERY, atMs, worker, parent: -1, blocks: Float64Array.from(req.hashIds) });
    emit(atMs, worker, caches[worker], req.hashIds, 0);
    const outputBlocks = Math.floor((req.inputLength + req.outputLength) / 512) - req.hashIds.length;
    if (outputBlocks > 0) {
      const full = [...req.hashIds];
      for (let i = 0; i < outputBlocks; i++) full.push(nextOutputId++);
      pending.push({ atMs: atMs + req.outputLength * o.msPerOutputToken * scale, worker, blocks: full });
    }
  }
  pending.sort((a, b) => a.atMs - b.atMs);
  for (const p of pending) emit(p.atMs, p.worker, caches[p.worker], p.blocks, 0);
  return ops;
}

/** The whole fleet's timeline: `duplication` copies of one copy's, ids and workers offset, merged by time. */
export function fleetWorkload(trace: readonly TraceRequest[], o: FleetWorkloadOptions): FleetWorkload {
  if (trace.length === 0) throw new RangeError('the trace has no requests');
  for (const [k, v] of Object.entries({
    uniqueWorkers: o.uniqueWorkers,
    duplication: o.duplication,
    capacityBlocks: o.capacityBlocks,
    blockSize: o.blockSize,
  })) {
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`${k} must be a positive integer, got ${v}`);
  }
  const base = simulateCopy(trace, o);
  const ops: FleetOp[] = [];
  // Copies interleave op by op (each copy's timeline is the same), as concurrent fleets would.
  for (const op of base) {
    for (let c = 0; c < o.duplication; c++) {
      const offset = c * COPY_STRIDE;
      ops.push({
        kind: op.kind,
        atMs: op.atMs,
        worker: c * o.uniqueWorkers + op.worker,
        parent: op.parent < 0 ? -1 : op.parent + offset,
        blocks: c === 0 ? op.blocks : op.blocks.map((b) => b + offset),
      });
    }
  }
  ops.sort((a, b) => a.atMs - b.atMs); // stable: equal times keep the simulation's order
  const counts = { queries: 0, stored: 0, removed: 0, storedBlocks: 0, removedBlocks: 0, queryBlocks: 0 };
  for (const op of ops) {
    if (op.kind === OP_QUERY) counts.queries++, (counts.queryBlocks += op.blocks.length);
    else if (op.kind === OP_STORED) counts.stored++, (counts.storedBlocks += op.blocks.length);
    else counts.removed++, (counts.removedBlocks += op.blocks.length);
  }
  return { options: o, ops, counts, workers: o.uniqueWorkers * o.duplication };
}

/** The tokens that stand for one trace block: `blockSize` ids derived from the block's id alone. */
export function blockTokens(id: number, blockSize: number, out: Uint32Array, at: number): void {
  const lo = id >>> 0;
  const hi = Math.floor(id / 2 ** 32) >>> 0;
  for (let j = 0; j < blockSize; j++) {
    let x = Math.imul(lo ^ Math.imul(j + 1, 0x9e3779b1), 0x85ebca6b) ^ Math.imul(hi + 0x27d4eb2f, 0xc2b2ae35);
    x ^= x >>> 13;
    out[at + j] = (x >>> 0) % 150_000; // a vocabulary's range
  }
}

/** The tokens of a run of blocks. */
export function tokensOf(blocks: Float64Array, blockSize: number): Uint32Array {
  const out = new Uint32Array(blocks.length * blockSize);
  for (let i = 0; i < blocks.length; i++) blockTokens(blocks[i], blockSize, out, i * blockSize);
  return out;
}

/** kvroute's local hashes of a run of blocks (what Dynamo is handed). */
export function localHashesOf(blocks: Float64Array, blockSize: number): BigUint64Array {
  return computeBlockHashes(tokensOf(blocks, blockSize), blockSize);
}
