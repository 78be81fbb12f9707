// Upper bounds on a trace's prefix hit rate, for replays to compare their hit rates to.
//
// - The infinite-cache bound: one cache of unlimited size shared by all workers. A block is a hit
//   when it and every block before it were seen before. Counted in trace blocks (as the traces
//   README states it) or in tokens (a partial last block weighs what it holds), which is the unit
//   of the engines' own hit rate (cached prompt tokens / prompt tokens).
// - The pooled-LRU bound: one LRU prefix cache with the fleet's total capacity that sees every
//   request, in engine blocks. It is what the fleet's caches could hit together if routing never
//   duplicated a block nor split a prefix; a router can hardly beat it, while the infinite-cache
//   bound ignores capacity altogether.
import { expectBlockSize } from '../../util/validate.js';
import { TRACE_BLOCK_TOKENS, type TraceRequest } from './trace.js';

export type BoundUnit = 'tokens' | 'blocks';

export function hitRateBound(trace: readonly TraceRequest[], unit: BoundUnit = 'tokens', blockTokens = TRACE_BLOCK_TOKENS): number {
  const seen = new Set<number>();
  let hits = 0;
  let total = 0;
  for (const req of trace) {
    let prefix = true;
    req.hashIds.forEach((id, i) => {
      const weight = unit === 'blocks' ? 1 : Math.min(blockTokens, req.inputLength - i * blockTokens);
      total += weight;
      if (prefix && seen.has(id)) hits += weight;
      else prefix = false;
      seen.add(id);
    });
  }
  return total === 0 ? 0 : hits / total;
}

/**
 * Hit rate (cached prompt tokens / prompt tokens) of a single LRU prefix cache of `capacityBlocks`
 * blocks of `blockSize` tokens that sees every request in arrival order, as the simulated engines
 * count it: a prompt's leading complete blocks that are cached, never its last token. After a
 * request its complete blocks are the most recently used, its head the most recent of them (an
 * engine frees a sequence tail first, so a prefix outlives its suffixes). Generated tokens and
 * the blocks of running requests are not modelled: they only take room from prompts.
 */
export function pooledLruHitRate(trace: readonly TraceRequest[], capacityBlocks: number, blockSize: number, blockTokens = TRACE_BLOCK_TOKENS): number {
  if (blockTokens % expectBlockSize(blockSize) !== 0) {
    throw new RangeError(`blockSize must divide the trace's block of ${blockTokens} tokens, got ${blockSize}`);
  }
  if (!Number.isInteger(capacityBlocks) || capacityBlocks < 0) throw new RangeError(`capacityBlocks must be an integer >= 0, got ${capacityBlocks}`);
  const perId = blockTokens / blockSize;
  // Key -> stamp of its last use, and every use in order: the least recently used key is the
  // first queued use whose stamp is still current (stale uses are skipped, each once).
  const lastUse = new Map<number, number>();
  let queueKeys = new Float64Array(1 << 16);
  let queueStamps = new Float64Array(1 << 16);
  let head = 0;
  let tail = 0;
  let stamp = 0;
  const touch = (key: number): void => {
    if (tail === queueKeys.length) {
      const live = tail - head;
      const size = live * 2 > queueKeys.length ? queueKeys.length * 2 : queueKeys.length;
      const keys = new Float64Array(size);
      const stamps = new Float64Array(size);
      keys.set(queueKeys.subarray(head, tail));
      stamps.set(queueStamps.subarray(head, tail));
      queueKeys = keys;
      queueStamps = stamps;
      head = 0;
      tail = live;
    }
    stamp++;
    lastUse.set(key, stamp);
    queueKeys[tail] = key;
    queueStamps[tail++] = stamp;
  };
  let hits = 0;
  let total = 0;
  const keys: number[] = [];
  for (const req of trace) {
    keys.length = 0;
    const complete = Math.min(Math.floor(req.inputLength / blockSize), req.hashIds.length * perId);
    for (let j = 0; j < complete; j++) keys.push(req.hashIds[Math.floor(j / perId)] * perId + (j % perId));
    let cached = 0;
    while (cached < keys.length && lastUse.has(keys[cached])) cached++;
    hits += Math.min(cached * blockSize, Math.max(req.inputLength - 1, 0));
    total += req.inputLength;
    for (let j = keys.length - 1; j >= 0; j--) touch(keys[j]);
    while (lastUse.size > capacityBlocks) {
      const key = queueKeys[head];
      if (lastUse.get(key) === queueStamps[head]) lastUse.delete(key);
      head++;
    }
  }
  return total === 0 ? 0 : hits / total;
}
