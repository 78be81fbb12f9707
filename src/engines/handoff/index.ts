// The handoff adapter of each engine kind.
import { ENGINE_KINDS, type EngineKind } from '../types.js';
import { sglangHandoff } from './sglang.js';
import { trtllmHandoff } from './trtllm.js';
import type { HandoffAdapter } from './types.js';
import { vllmHandoff } from './vllm.js';

const ADAPTERS: Record<EngineKind, HandoffAdapter> = { vllm: vllmHandoff, sglang: sglangHandoff, trtllm: trtllmHandoff };

export function handoffFor(kind: EngineKind): HandoffAdapter {
  const a = typeof kind === 'string' && Object.hasOwn(ADAPTERS, kind) ? ADAPTERS[kind] : undefined;
  if (!a) throw new TypeError(`engine kind must be one of ${ENGINE_KINDS.join(', ')}, got ${JSON.stringify(kind)}`);
  return a;
}

export { sglangHandoff, trtllmHandoff, vllmHandoff };
export type * from './types.js';
