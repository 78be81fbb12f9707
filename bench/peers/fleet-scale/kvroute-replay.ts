// The fleet-scale timeline replayed on kvroute's KvIndexer, the way Dynamo's mooncake_bench
// replays it on its own: each op at its time within the benchmark window (compressed from the
// simulated time), events applied as the router's ingest applies them (applyStored / applyRemoved,
// kvroute hashing the tokens itself), a find_matches per request timed alone. Behind schedule,
// ops run back to back (the offered rate is then above what the indexer achieves).
import { KvIndexer } from '../../../src/core/indexer.js';
import { OP_QUERY, OP_STORED, tokensOf, localHashesOf, type FleetWorkload } from './workload.js';

/** An op with its arguments made once, before any round (as an ingest would have them decoded). */
type Prepared =
  | { kind: 0; atMs: number; local: BigUint64Array }
  | { kind: 1; atMs: number; worker: number; parent: bigint | null; hashes: BigUint64Array; tokens: Uint32Array }
  | { kind: 2; atMs: number; worker: number; hashes: BigUint64Array };

export interface ReplayFigures {
  windowMs: number;
  ops: number;
  offeredOpsPerS: number;
  achievedOpsPerS: number;
  /** Process CPU seconds the round used (every thread). */
  cpuS: number;
  opsPerCpuS: number;
  /** find_matches call times, ns. */
  findP50Ns: number;
  findP99Ns: number;
  /** How far the last op ran past its time (0 when the indexer kept up). */
  behindMs: number;
  rejected: number;
  blocksAtEnd: number;
}

export function prepare(w: FleetWorkload): Prepared[] {
  const bs = w.options.blockSize;
  return w.ops.map((op): Prepared => {
    if (op.kind === OP_QUERY) return { kind: 0, atMs: op.atMs, local: localHashesOf(op.blocks, bs) };
    const hashes = BigUint64Array.from(op.blocks, (b) => BigInt(b));
    if (op.kind === OP_STORED)
      return { kind: 1, atMs: op.atMs, worker: op.worker, parent: op.parent >= 0 ? BigInt(op.parent) : null, hashes, tokens: tokensOf(op.blocks, bs) };
    return { kind: 2, atMs: op.atMs, worker: op.worker, hashes };
  });
}

const percentile = (sorted: Float64Array, p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** One round from an empty index: the whole timeline within `windowMs`. */
export function replayKvroute(w: FleetWorkload, ops: readonly Prepared[], windowMs: number): ReplayFigures {
  const indexer = new KvIndexer({ blockSize: w.options.blockSize });
  const out = new Float64Array(3 * w.workers);
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  // The timeline's span (its last op, a decode past the last arrival) fills the window, as in the peer.
  const span = ops.length > 0 ? ops[ops.length - 1].atMs : 0;
  const toWindow = span > 0 ? windowMs / span : 0;
  const finds = new Float64Array(w.counts.queries);
  let k = 0;
  let rejected = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (const op of ops) {
    const due = t0 + op.atMs * toWindow;
    const wait = due - performance.now();
    // Atomics.wait sleeps without spinning, so the round's CPU time is the indexer's work.
    if (wait > 0.02) Atomics.wait(sleeper, 0, 0, wait);
    if (op.kind === 0) {
      const s = performance.now();
      indexer.findMatchesInto(op.local, out);
      finds[k++] = (performance.now() - s) * 1e6;
    } else if (op.kind === 1) {
      if (!indexer.applyStored(op.worker, 0, op.parent, op.hashes, op.tokens)) rejected++;
    } else {
      indexer.applyRemoved(op.worker, 0, op.hashes);
    }
  }
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const lastDue = ops.length > 0 ? ops[ops.length - 1].atMs * toWindow : 0;
  const sorted = finds.subarray(0, k).sort();
  const cpuS = (cpu.user + cpu.system) / 1e6;
  const blocksAtEnd = indexer.stats().blocks;
  return {
    windowMs,
    ops: ops.length,
    offeredOpsPerS: ops.length / (windowMs / 1000),
    achievedOpsPerS: ops.length / (Math.max(wallMs, windowMs) / 1000),
    cpuS,
    opsPerCpuS: ops.length / cpuS,
    findP50Ns: percentile(sorted, 50),
    findP99Ns: percentile(sorted, 99),
    behindMs: Math.max(0, wallMs - lastDue),
    rejected,
    blocksAtEnd,
  };
}
