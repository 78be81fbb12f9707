import { describe, expect, it } from 'vitest';
import { parsePrometheus, sampleSum } from '../../../bench/engines/prometheus.js';
import { vllmArgs, vllmEnv } from '../../../bench/engines/vllm-engine.js';

// Lines as vLLM 0.32's /metrics writes them (engine-labelled counters, HELP/TYPE comments).
const TEXT = `# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="tiny"} 1376.0
vllm:prefix_cache_hits_total{engine="1",model_name="tiny"} 24.0
vllm:prefix_cache_queries_total{engine="0",model_name="tiny"} 4203.0
process_start_time_seconds 1.79668574007e+09
vllm:weird{engine="0"} NaN
`;

describe('parsePrometheus', () => {
  it('reads samples per label set and sums them by label match', () => {
    const m = parsePrometheus(TEXT);
    expect(sampleSum(m, 'vllm:prefix_cache_hits_total')).toBe(1400);
    expect(sampleSum(m, 'vllm:prefix_cache_hits_total', 'engine="1"')).toBe(24);
    expect(sampleSum(m, 'vllm:prefix_cache_queries_total')).toBe(4203);
    expect(sampleSum(m, 'process_start_time_seconds')).toBe(1796685740.07);
  });
  it('leaves out comments, non-numbers and absent metrics', () => {
    const m = parsePrometheus(TEXT);
    expect(m.has('vllm:weird')).toBe(false);
    expect(sampleSum(m, 'vllm:absent_total')).toBe(0);
    expect(parsePrometheus('').size).toBe(0);
  });
});

describe('the vLLM engine command line', () => {
  const o = { python: 'python', model: '/m', servedName: 'tiny', port: 1, eventsPort: 2, replayPort: 3, blockSize: 32, name: 'e' };
  it('binds the event sockets on * (vLLM connects for any other host) and runs on the CPU platform', () => {
    const args = vllmArgs(o);
    const events = JSON.parse(args[args.indexOf('--kv-events-config') + 1]) as { endpoint: string; replay_endpoint: string };
    expect(events.endpoint).toBe('tcp://*:2');
    expect(events.replay_endpoint).toBe('tcp://*:3');
    expect(args.slice(args.indexOf('--block-size'), args.indexOf('--block-size') + 2)).toEqual(['--block-size', '32']);
    expect(args).toContain('--enable-prefix-caching');
    expect(vllmEnv({}).VLLM_TARGET_DEVICE).toBe('cpu');
  });
});
