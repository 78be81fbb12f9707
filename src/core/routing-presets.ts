// Named routing presets: a policy of the native core with its weights, under a name of its own,
// so a better-tuned variant never changes what `kv` (Dynamo's default cost) means.
import type { PolicyName, RoutingConfig } from './routing-core.js';

export interface RoutingPreset {
  policy: PolicyName;
  overrides: Partial<RoutingConfig>;
  description: string;
}

export const ROUTING_PRESETS = {
  /**
   * Ranks workers by what delays the first token: the uncached prefill work queued on the worker
   * plus this request's own uncached tokens. Decode occupancy only lengthens each engine step a
   * little, so it weighs 1/16 of a prefill block (Dynamo's kv weighs them equally, which pushes
   * requests away from the busy workers that hold their prefixes). Measured on the Mooncake
   * traces (README, Trace replay): lower TTFT and a higher hit rate than kv at every load.
   */
  kv_ttft: {
    policy: 'kv',
    overrides: { prefillLoadScale: 16 },
    description: 'kv cost with prefill work weighted 16x decode occupancy (TTFT-oriented)',
  },
} as const satisfies Record<string, RoutingPreset>;

export type RoutingPresetName = keyof typeof ROUTING_PRESETS;
