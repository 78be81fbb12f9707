import { describe, expect, it } from 'vitest';
import { readPod, workerIdOf, type PodLike } from '../../../src/server/discovery/pod-worker.js';
import { enginePod, type PodSpec } from './fake-kube.js';

const models = ['m'];
const pod = (p: Partial<PodSpec> = {}): PodLike => enginePod({ name: 'p', ip: '10.0.0.5', httpPort: 8000, ...p });
const read = (p: PodLike) => readPod(p, { models });

describe('readPod', () => {
  it('makes a Ready pod with an IP and an http port a worker, in approximate mode without event ports', () => {
    const v = read(pod());
    expect(v).toMatchObject({ kind: 'worker', ready: true });
    if (v.kind !== 'worker') return;
    expect(v.config).toEqual({
      id: workerIdOf('uid-p'),
      role: 'aggregated',
      kind: 'vllm',
      baseUrl: 'http://10.0.0.5:8000',
      dpSize: 1,
      kvEvents: [],
      replayEndpoints: [],
    });
  });

  it('reads event and replay ports (rank r on port + r), role, engine, dp size, capacity and model', () => {
    const v = read(
      pod({
        eventsPort: 5557,
        replayPort: 5600,
        labels: { 'kvroute.io/role': 'prefill', 'kvroute.io/engine': 'sglang' },
        annotations: { 'kvroute.io/dp-size': '2', 'kvroute.io/kv-blocks': '16384', 'kvroute.io/model': 'm' },
      }),
    );
    if (v.kind !== 'worker') throw new Error(JSON.stringify(v));
    expect(v.config).toMatchObject({
      role: 'prefill',
      kind: 'sglang',
      dpSize: 2,
      kvCapacityBlocks: 16384,
      kvEvents: ['tcp://10.0.0.5:5557', 'tcp://10.0.0.5:5558'],
      replayEndpoints: ['tcp://10.0.0.5:5600', 'tcp://10.0.0.5:5601'],
    });
  });

  it("takes llm-d's role label (both = aggregated), kvroute's own first", () => {
    const role = (labels: Record<string, string>) => {
      const v = read(pod({ labels }));
      return v.kind === 'worker' ? v.config.role : v;
    };
    expect(role({ 'llm-d.ai/role': 'both' })).toBe('aggregated');
    expect(role({ 'llm-d.ai/role': 'decode' })).toBe('decode');
    expect(role({ 'llm-d.ai/role': 'decode', 'kvroute.io/role': 'prefill' })).toBe('prefill');
    expect(role({ 'llm-d.ai/role': 'encode' })).toMatchObject({ kind: 'skipped', key: 'llm-d.ai/role' });
  });

  it('brackets an IPv6 pod IP in URLs and endpoints', () => {
    const v = read(pod({ ip: 'fd00::5', eventsPort: 5557 }));
    if (v.kind !== 'worker') throw new Error(JSON.stringify(v));
    expect(v.config.baseUrl).toBe('http://[fd00::5]:8000');
    expect(v.config.kvEvents).toEqual(['tcp://[fd00::5]:5557']);
  });

  it('is not Ready while the Ready condition is not True or the pod is terminating; waits without an IP', () => {
    expect(read(pod({ ready: false }))).toMatchObject({ kind: 'worker', ready: false });
    expect(read(pod({ terminating: true }))).toMatchObject({ kind: 'worker', ready: false });
    expect(read(pod({ ip: undefined }))).toMatchObject({ kind: 'waiting' });
  });

  it('skips a pod naming something impossible, with the key', () => {
    const skip = (p: Partial<PodSpec>) => {
      const v = read(pod(p));
      return v.kind === 'skipped' ? v.key : v.kind;
    };
    expect(skip({ annotations: { 'kvroute.io/dp-size': 'two' } })).toBe('kvroute.io/dp-size');
    expect(skip({ annotations: { 'kvroute.io/dp-size': '0' } })).toBe('kvroute.io/dp-size');
    expect(skip({ annotations: { 'kvroute.io/kv-blocks': '-1' } })).toBe('kvroute.io/kv-blocks');
    expect(skip({ annotations: { 'kvroute.io/model': 'other' } })).toBe('kvroute.io/model');
    expect(skip({ labels: { 'kvroute.io/role': 'boss' } })).toBe('kvroute.io/role');
    expect(skip({ labels: { 'kvroute.io/engine': 'tgi' } })).toBe('kvroute.io/engine');
    expect(skip({ httpPort: undefined })).toBe('port http');
    expect(skip({ replayPort: 5600 })).toBe('port kv-replay');
    expect(skip({ eventsPort: 65535, annotations: { 'kvroute.io/dp-size': '2' } })).toBe('port kv-events');
    expect(read({ metadata: { name: 'x' } })).toMatchObject({ kind: 'skipped', key: 'metadata.uid' });
  });

  it('changes the incarnation when the pod IP or the engine container restarts', () => {
    const inc = (p: Partial<PodSpec>) => {
      const v = read(pod(p));
      return v.kind === 'worker' ? v.incarnation : '';
    };
    expect(inc({})).toBe(inc({}));
    expect(inc({ ip: '10.0.0.6' })).not.toBe(inc({}));
    expect(inc({ restartCount: 1 })).not.toBe(inc({}));
    expect(inc({ containerId: 'containerd://other' })).not.toBe(inc({}));
  });
});

describe('workerIdOf', () => {
  it('gives every replica the same id for a pod, a safe integer, and different pods different ids', () => {
    expect(workerIdOf('3f1c2a4e-0000-4000-8000-000000000001')).toBe(workerIdOf('3f1c2a4e-0000-4000-8000-000000000001'));
    const ids = new Set(Array.from({ length: 2000 }, (_, i) => workerIdOf(`uid-${i}`)));
    expect(ids.size).toBe(2000);
    for (const id of ids) expect(Number.isSafeInteger(id) && id >= 0).toBe(true);
  });
});
