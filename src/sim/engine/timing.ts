// Step durations from the configured fit. Pure functions of the step's work; the model passes the
// numbers in, so tests can check the formulas exactly.
import type { ResolvedEngineConfig } from './config.js';

/** Prefill cost of computing `tokens` prompt tokens in one step (0 when none). */
export function prefillMs(cfg: ResolvedEngineConfig, tokens: number): number {
  if (tokens <= 0) return 0;
  const { a, b, c } = cfg.timing.prefill;
  return (a * tokens * tokens + b * tokens + c) / cfg.speedup;
}

/** Decode cost of one step at KV usage `usage` (fraction of blocks in use). */
export function decodeMs(cfg: ResolvedEngineConfig, usage: number): number {
  const { a, b, c, minMs } = cfg.timing.decode;
  return Math.max(minMs, a * usage * usage + b * usage + c) / cfg.speedup;
}

/**
 * A step runs its prefill chunks and its decode tokens in one forward pass; the model charges the
 * sum of both costs (a mixed batch costs at least as much as either part alone, and the fit for
 * each part already contains its fixed per-pass overhead).
 */
export function stepMs(cfg: ResolvedEngineConfig, prefillTokens: number, decodeTokens: number, usage: number): number {
  return prefillMs(cfg, prefillTokens) + (decodeTokens > 0 ? decodeMs(cfg, usage) : 0);
}

/** Time to receive `tokens` tokens of KV from a prefill worker. */
export function transferMs(cfg: ResolvedEngineConfig, tokens: number): number {
  if (tokens <= 0) return 0;
  const { bytesPerToken, bandwidthBytesPerS } = cfg.kvTransfer;
  return (((tokens * bytesPerToken) / bandwidthBytesPerS) * 1000) / cfg.speedup;
}

/** How long an engine with nothing runnable waits before looking again (transfers, held blocks). */
export function idlePollMs(cfg: ResolvedEngineConfig): number {
  return Math.max(cfg.timing.decode.minMs, 1) / cfg.speedup;
}

/** Time to reload `tokens` tokens of KV from the CPU offload tier to the GPU. */
export function reloadMs(cfg: ResolvedEngineConfig, tokens: number): number {
  if (tokens <= 0) return 0;
  return (((tokens * cfg.kvTransfer.bytesPerToken) / cfg.offloadBandwidthBytesPerS) * 1000) / cfg.speedup;
}
