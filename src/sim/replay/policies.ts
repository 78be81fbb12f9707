// The routing policies a replay compares. Each is the live router's own RoutingCore and
// KvIndexer, configured by name: the simulator never re-implements a policy.
import { KvIndexer } from '../../core/indexer.js';
import { RoutingCore, type PolicyName, type RoutingConfig } from '../../core/routing-core.js';
import { ROUTING_PRESETS } from '../../core/routing-presets.js';

export const REPLAY_POLICIES = ['round_robin', 'random', 'least_loaded', 'kv', 'kv_approx', 'kv_ttft', 'ttft'] as const;
export type ReplayPolicy = (typeof REPLAY_POLICIES)[number];

export interface PolicySetup {
  name: ReplayPolicy;
  indexer: KvIndexer;
  core: RoutingCore;
  /** Whether the engines' KV events feed the indexer (false: approximate, or unused). */
  consumesEvents: boolean;
}

export function isReplayPolicy(name: string): name is ReplayPolicy {
  return (REPLAY_POLICIES as readonly string[]).includes(name);
}

/** Builds the indexer and routing core of a named policy over a virtual clock. */
export function setupPolicy(
  name: ReplayPolicy,
  opts: { blockSize: number; seed: number; clock: () => number; overrides?: Partial<RoutingConfig>; lowerTiers?: boolean },
): PolicySetup {
  const approximate = name === 'kv_approx';
  const preset = name === 'kv_ttft' ? ROUTING_PRESETS.kv_ttft : undefined;
  const policy: PolicyName = name === 'kv_approx' ? 'kv' : (preset?.policy ?? (name as PolicyName));
  // lowerTiers false: the engines' CPU-tier events are counted, never indexed (the server's --no-lower-tiers).
  const indexer = new KvIndexer({
    blockSize: opts.blockSize,
    mode: approximate ? 'approximate' : 'events',
    clock: opts.clock,
    ...(opts.lowerTiers === false ? { lowerTiers: false } : {}),
  });
  const core = new RoutingCore(indexer, {
    blockSize: opts.blockSize,
    policy,
    seed: opts.seed,
    clock: opts.clock,
    approximate,
    ...preset?.overrides,
    ...opts.overrides,
  });
  // Round robin, random and least-loaded never read the index: skip feeding it events.
  return { name, indexer, core, consumesEvents: !approximate && (policy === 'kv' || policy === 'ttft') };
}
