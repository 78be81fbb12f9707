// Pins replay reports byte for byte: the same trace, config and seed must give exactly the report
// committed in fixtures/ (wall-clock fields aside). The fixtures were produced before the
// simulator's speed work; any change of figures (scheduling, eviction order, KV events, routing
// ties) shows here. Regenerate only for an intended change of behaviour, with
// KVROUTE_WRITE_REPLAY_FIXTURES=1 npx vitest run test/sim/replay/report-fixtures.test.ts
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import type { EngineKind } from '../../../src/engines/types.js';
import { REPLAY_POLICIES } from '../../../src/sim/replay/policies.js';
import { runReplay, type ReplayConfig, type ReplayReport } from '../../../src/sim/replay/replay.js';
import { loadTrace, type TraceRequest } from '../../../src/sim/replay/trace.js';

const traces = new Map<string, TraceRequest[]>();
const traceFile = (name: string) => fileURLToPath(new URL(`../../../traces/${name}`, import.meta.url));
const fixtureFile = (name: string, ext = 'json') => fileURLToPath(new URL(`./fixtures/${name}.${ext}`, import.meta.url));

beforeAll(async () => {
  for (const name of ['synthetic_trace.jsonl', 'conversation_trace.first-half.jsonl']) traces.set(name, await loadTrace(traceFile(name)));
});

/** The report as JSON text without its wall-clock fields. */
function reportText(r: ReplayReport): string {
  return `${JSON.stringify(r, (k, v) => (k === 'wall_s' || k === 'simulated_to_wall' ? undefined : v), 2)}\n`;
}

interface Case {
  name: string;
  trace: string;
  limit: number;
  config: Omit<ReplayConfig, 'trace' | 'traceName'>;
}

// KV caches of a dozen prompts or fewer, so that blocks are evicted (and, in the smallest, requests
// preempted or refused); compressed arrivals, so that queues build up and the routers' load terms
// matter.
const CASES: Case[] = [
  {
    name: 'aggregated-synthetic',
    trace: 'synthetic_trace.jsonl',
    limit: 200,
    config: { workers: 3, policies: REPLAY_POLICIES, blockSize: 16, kvBlocks: 6144, arrivalScale: 4, seed: 7 },
  },
  {
    name: 'aggregated-small-cache',
    trace: 'synthetic_trace.jsonl',
    limit: 80,
    config: { workers: 2, policies: ['kv', 'round_robin'], blockSize: 16, kvBlocks: 1536, arrivalScale: 4, seed: 5 },
  },
  {
    name: 'aggregated-conversation-sweep',
    trace: 'conversation_trace.first-half.jsonl',
    limit: 150,
    config: { workers: 2, policies: ['kv', 'round_robin'], blockSize: 32, kvBlocks: 4096, arrivalScale: 1, seed: 3, sweepScales: [1, 4, 16] },
  },
  ...(['vllm', 'sglang', 'trtllm'] as EngineKind[]).map((handoff) => ({
    name: `disaggregated-${handoff}`,
    trace: 'synthetic_trace.jsonl',
    limit: 100,
    config: {
      workers: 0,
      disaggregated: { prefill: 2, decode: 2 },
      handoff,
      policies: ['kv', 'round_robin', 'kv_approx'] as const,
      blockSize: 16,
      kvBlocks: 4096,
      arrivalScale: 3,
      seed: 11,
    },
  })),
];

/**
 * The record fields the digests pin, in the order the fixtures were written with: fields added to
 * records later (priority, mode reason) leave them unchanged, the behaviour they pin included.
 */
const PINNED_FIELDS = ['arrivalMs', 'worker', 'promptTokens', 'cachedTokens', 'outputTokens', 'firstTokenMs', 'finishMs', 'refused'];

describe('replay reports', () => {
  for (const c of CASES) {
    it(`are byte-identical to the committed fixture: ${c.name}`, async () => {
      const trace = traces.get(c.trace)!.slice(0, c.limit);
      // Beside the report, a digest of every run's per-request records (worker, cached tokens,
      // first token and finish times): finer than the report's percentiles.
      const runs: string[] = [];
      const onRun: ReplayConfig['onRun'] = (policy, scale, run) => {
        runs.push(`${policy} x${scale} ${createHash('sha256').update(JSON.stringify(run.records, PINNED_FIELDS)).digest('hex')}`);
      };
      const text = reportText(await runReplay({ ...c.config, trace, traceName: c.trace, onRun }));
      const digests = `${runs.join('\n')}\n`;
      if (process.env.KVROUTE_WRITE_REPLAY_FIXTURES === '1') {
        writeFileSync(fixtureFile(c.name), text);
        writeFileSync(fixtureFile(c.name, 'records.txt'), digests);
      }
      expect(text).toBe(readFileSync(fixtureFile(c.name), 'utf8'));
      expect(digests).toBe(readFileSync(fixtureFile(c.name, 'records.txt'), 'utf8'));
    });
  }
});
