// The engine configurations both replays run (issue 14: compare like with like). kvroute's replay
// defaults to vLLM's 16-token blocks, Dynamo's mocker to 64-token ones; each is run at both, with
// the same 1M tokens of KV cache per worker.
import { formatCount } from '../../lib/format.js';

export interface ReplaySetting {
  /** Tokens per KV block, for the engines and the router. */
  blockSize: number;
  /** KV cache blocks per worker. */
  kvBlocks: number;
}

/** The traces' own block size (traces/README.md): an engine block must divide it. */
export const TRACE_BLOCK_TOKENS = 512;

export const REPLAY_SETTINGS: readonly ReplaySetting[] = [
  // Dynamo's mocker default (vllm backend: num_gpu_blocks 16384, block_size 64).
  { blockSize: 64, kvBlocks: 16_384 },
  // vLLM's block size (and kvroute replay's default), the same tokens of cache.
  { blockSize: 16, kvBlocks: 65_536 },
];

/** "64-token blocks x 16,384". */
export function settingLabel(s: ReplaySetting): string {
  return `${s.blockSize}-token blocks x ${formatCount(s.kvBlocks)}`;
}

/** Throws TypeError / RangeError unless both simulators can run `s` on the traces. */
export function checkReplaySetting(s: ReplaySetting): ReplaySetting {
  for (const [name, v] of [
    ['blockSize', s.blockSize],
    ['kvBlocks', s.kvBlocks],
  ] as const) {
    if (typeof v !== 'number' || !Number.isInteger(v)) throw new TypeError(`${name} must be an integer, got ${String(v)}`);
    if (v < 1 || v > 2 ** 30) throw new RangeError(`${name} must be between 1 and 2^30, got ${v}`);
  }
  if (TRACE_BLOCK_TOKENS % s.blockSize !== 0) throw new RangeError(`blockSize must divide the traces' ${TRACE_BLOCK_TOKENS}-token blocks, got ${s.blockSize}`);
  return s;
}
