// The trace's prefix-reuse upper bound: an infinite cache shared by all workers, counted in
// trace blocks. A block is a hit when it and every block before it were seen before.
import type { TraceRequest } from './trace.js';

export function hitRateBound(trace: readonly TraceRequest[]): number {
  const seen = new Set<number>();
  let hits = 0;
  let total = 0;
  for (const req of trace) {
    total += req.hashIds.length;
    let prefix = true;
    for (const id of req.hashIds) {
      if (prefix && seen.has(id)) hits++;
      else prefix = false;
      seen.add(id);
    }
  }
  return total === 0 ? 0 : hits / total;
}
