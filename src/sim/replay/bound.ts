// The trace's prefix-reuse upper bound: an infinite cache shared by all workers. A block is a
// hit when it and every block before it were seen before. Counted in trace blocks (as the traces
// README states it) or in tokens (a partial last block weighs what it holds), which is the unit
// of the engines' own hit rate (cached prompt tokens / prompt tokens) that replays compare to it.
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
