import { describe, expect, it } from 'vitest';
import { parseWorkerConfig, type WorkerConfig } from '../../../src/server/config/config.js';
import { WorkerRegistry, type Ejection, type FleetChange, type PoolName, type PoolPort } from '../../../src/server/fleet/registry.js';

class RecordingPool implements PoolPort {
  readonly selected = new Set<number>();
  readonly dropped: number[] = [];
  readonly removed: number[] = [];
  enable(w: WorkerConfig): void {
    this.selected.add(w.id);
  }
  disable(id: number): void {
    this.selected.delete(id);
  }
  remove(id: number): void {
    this.removed.push(id);
  }
  dropBlocks(id: number): void {
    this.dropped.push(id);
  }
  activeRequests(): number {
    return 0;
  }
  readonly passed: number[] = [];
  readonly ejections = new Map<number, Ejection>();
  healthCheckPassed(id: number): void {
    this.passed.push(id);
  }
  ejection(id: number): Ejection | undefined {
    return this.ejections.get(id);
  }
}

function setup(graceMs = 1000, onChange?: (c: FleetChange) => void) {
  let now = 0;
  const pools: Record<PoolName, RecordingPool> = { prefill: new RecordingPool(), decode: new RecordingPool() };
  const subscribed = new Map<number, PoolName>();
  // Workers whose event streams prove continuity (all, unless a test says otherwise), and resyncs asked.
  const continuous = new Set<number>();
  const resyncs: Array<{ id: number; reason: string }> = [];
  const registry = new WorkerRegistry({
    pools,
    ingest: {
      subscribe: (w, pool) => (subscribed.set(w.id, pool), continuous.add(w.id)),
      unsubscribe: (id) => subscribed.delete(id),
      continuous: (id) => continuous.has(id),
      resync: (id, reason) => void resyncs.push({ id, reason }),
    },
    healthGraceMs: graceMs,
    clock: () => now,
    onChange,
  });
  return { registry, pools, subscribed, continuous, resyncs, advance: (ms: number) => (now += ms) };
}

const worker = (id: number, role: string) =>
  parseWorkerConfig({ id, role, baseUrl: `http://127.0.0.1:${9000 + id}`, kvEvents: `tcp://127.0.0.1:${5000 + id}` });

describe('WorkerRegistry', () => {
  it('reports every admin change once done (the port router replicas share the fleet through), never a refused one or a health verdict', () => {
    const changes: FleetChange[] = [];
    const { registry } = setup(1000, (c) => changes.push(c));
    const w = worker(1, 'decode');
    registry.add(w);
    expect(() => registry.add(w)).toThrow(/already registered/);
    registry.drain(1);
    registry.recordHealth(1, false, 'down');
    registry.activate(1);
    expect(() => registry.drain(9)).toThrow(/no worker/);
    registry.remove(1);
    expect(changes).toEqual([
      { op: 'add', worker: w },
      { op: 'drain', worker: w },
      { op: 'activate', worker: w },
      { op: 'remove', worker: w },
    ]);
  });

  it('tells the pool of every passed health check, and shows an ejected worker out of selection with its ejections', () => {
    const { registry, pools } = setup();
    registry.add(worker(1, 'decode'));
    registry.add(worker(2, 'prefill'));
    registry.recordHealth(1, true);
    registry.recordHealth(2, false, 'refused');
    registry.recordHealth(2, true);
    expect(pools.decode.passed).toEqual([1]);
    expect(pools.prefill.passed).toEqual([2]);
    expect(registry.list()[0]).toMatchObject({ state: 'healthy', inSelection: true, ejected: false });
    expect(registry.list()[0]).not.toHaveProperty('ejection');
    pools.decode.ejections.set(1, { ejected: true, ejections: 2, ejectedUntil: 60_000, lastReason: 'connect_failure' });
    expect(registry.list()[0]).toMatchObject({
      state: 'healthy',
      inSelection: false,
      ejected: true,
      ejection: { ejections: 2, ejectedUntil: 60_000, lastReason: 'connect_failure' },
    });
    pools.decode.ejections.set(1, { ejected: false, ejections: 2, lastReason: 'connect_failure' });
    expect(registry.list()[0]).toMatchObject({ inSelection: true, ejected: false, ejection: { ejections: 2 } });
    expect(registry.list()[0].ejection).not.toHaveProperty('ejectedUntil');
  });

  it('puts prefill workers in the prefill pool and the others in the decode pool, subscribed to events', () => {
    const { registry, pools, subscribed } = setup();
    registry.add(worker(1, 'prefill'));
    registry.add(worker(2, 'decode'));
    registry.add(worker(3, 'aggregated'));
    expect([...pools.prefill.selected]).toEqual([1]);
    expect([...pools.decode.selected]).toEqual([2, 3]);
    expect(Object.fromEntries(subscribed)).toEqual({ 1: 'prefill', 2: 'decode', 3: 'decode' });
    expect(registry.canServe()).toBe(true);
    expect(() => registry.add(worker(2, 'decode'))).toThrow(/already registered/);
  });

  it('takes an unhealthy worker out of selection at once, drops its blocks after the grace period, and brings it back', () => {
    const { registry, pools, advance } = setup(1000);
    registry.add(worker(1, 'decode'));
    registry.recordHealth(1, false, 'connection refused');
    expect(pools.decode.selected.has(1)).toBe(false);
    expect(registry.list()[0]).toMatchObject({ state: 'unhealthy', inSelection: false, lastHealthError: 'connection refused' });
    expect(registry.canServe()).toBe(false);
    advance(999);
    registry.recordHealth(1, false);
    expect(pools.decode.dropped).toEqual([]);
    advance(1);
    expect(registry.expireGrace()).toEqual([1]);
    expect(pools.decode.dropped).toEqual([1]);
    registry.recordHealth(1, true);
    expect(pools.decode.selected.has(1)).toBe(true);
    expect(registry.list()[0].state).toBe('healthy');
  });

  it('clears a worker back from unreachable unless its event streams prove the engine kept running', () => {
    const { registry, continuous, resyncs, pools, advance } = setup(1000);
    registry.add(worker(1, 'decode'));
    registry.add(worker(2, 'decode'));
    // 1: its streams stayed continuous (the HTTP side hung, the engine lived): its blocks are kept.
    registry.recordHealth(1, false, 'timed out');
    registry.recordHealth(1, true);
    expect(resyncs).toEqual([]);
    // 2: its stream dropped and is not proven again: cleared before it is back in selection.
    registry.recordHealth(2, false, 'refused');
    continuous.delete(2);
    registry.recordHealth(2, true);
    expect(resyncs.map((r) => r.id)).toEqual([2]);
    expect(resyncs[0].reason).toMatch(/unreachable/);
    expect(pools.decode.selected.has(2)).toBe(true);
    // 1 again, past the grace period: its blocks left the index, so its streams must rebuild them.
    registry.recordHealth(1, false, 'refused');
    advance(1500);
    registry.expireGrace();
    registry.recordHealth(1, true);
    expect(resyncs.map((r) => r.id)).toEqual([2, 1]);
  });

  it('clears a worker whose engine start time changed, even when every health check passed', () => {
    const { registry, resyncs } = setup();
    registry.add(worker(1, 'decode'));
    registry.recordHealth(1, true, undefined, 1_700_000_000.5);
    registry.recordHealth(1, true, undefined, 1_700_000_000.5);
    registry.recordHealth(1, true); // /metrics said nothing this time: no verdict
    expect(resyncs).toEqual([]);
    registry.recordHealth(1, true, undefined, 1_700_000_100.25);
    expect(resyncs.map((r) => r.id)).toEqual([1]);
    expect(resyncs[0].reason).toMatch(/process_start_time_seconds changed from 1700000000.5 to 1700000100.25/);
    registry.recordHealth(1, true, undefined, 1_700_000_100.25);
    expect(resyncs).toHaveLength(1);
  });

  it('drains (no new requests, even when healthy) and activates again', () => {
    const { registry, pools } = setup();
    registry.add(worker(1, 'prefill'));
    expect(registry.drain(1).state).toBe('draining');
    expect(pools.prefill.selected.size).toBe(0);
    registry.recordHealth(1, true);
    expect(pools.prefill.selected.size).toBe(0);
    expect(registry.activate(1).state).toBe('healthy');
    expect(pools.prefill.selected.has(1)).toBe(true);
  });

  it('removes a worker everywhere', () => {
    const { registry, pools, subscribed } = setup();
    registry.add(worker(4, 'decode'));
    registry.remove(4);
    expect(pools.decode.selected.size).toBe(0);
    expect(pools.decode.dropped).toEqual([4]);
    expect(pools.decode.removed).toEqual([4]);
    expect(subscribed.size).toBe(0);
    expect(registry.list()).toEqual([]);
    expect(() => registry.remove(4)).toThrow(/no worker with id 4/);
    registry.add(worker(4, 'decode')); // the id is free again
  });

  it('adds all or nothing: a part that refuses the worker leaves no trace of it', () => {
    const { registry, pools, subscribed } = setup();
    const refusing = pools.decode;
    const enable = refusing.enable.bind(refusing);
    refusing.enable = () => {
      throw new TypeError('the pool refuses it');
    };
    expect(() => registry.add(worker(6, 'decode'))).toThrow('the pool refuses it');
    expect(registry.list()).toEqual([]);
    expect(registry.has(6)).toBe(false);
    expect(subscribed.has(6)).toBe(false); // subscribed, then unsubscribed again
    expect(refusing.removed).toContain(6);
    // The id is free: a later add of a good worker with it works.
    refusing.enable = enable;
    registry.add(worker(6, 'decode'));
    expect(registry.list().map((w) => w.id)).toEqual([6]);
  });

  it('adds nothing when the event subscription refuses the worker', () => {
    const pools = { prefill: new RecordingPool(), decode: new RecordingPool() };
    const registry = new WorkerRegistry({
      pools,
      ingest: {
        subscribe: () => {
          throw new RangeError('cannot subscribe');
        },
        unsubscribe: () => undefined,
        continuous: () => true,
        resync: () => undefined,
      },
      healthGraceMs: 0,
    });
    expect(() => registry.add(worker(2, 'prefill'))).toThrow('cannot subscribe');
    expect(registry.list()).toEqual([]);
    expect(pools.prefill.selected.size).toBe(0);
  });

  it('shows a URL with credentials as ***, and finds a worker by its URL', () => {
    const { registry } = setup();
    registry.add(worker(3, 'decode'));
    expect(registry.workerWithUrl('http://127.0.0.1:9003')).toBe(3);
    // The config check refuses credentials; a registry given one anyway never shows it.
    registry.add(Object.assign(worker(8, 'decode'), { baseUrl: 'http://user:secret@127.0.0.1:9008' }));
    expect(registry.list().find((w) => w.id === 8)?.baseUrl).toBe('http://***@127.0.0.1:9008');
    expect(registry.workerWithUrl('http://127.0.0.1:1')).toBeUndefined();
  });

  it('keeps discovered workers apart: out of selection while not ready, removed only by discovery, never shared with replicas', () => {
    const changes: FleetChange[] = [];
    const { registry, pools, subscribed } = setup(1000, (c) => changes.push(c));
    const pod = { source: 'kubernetes' as const, pod: 'llm/vllm-0' };
    registry.add(worker(7, 'decode'), pod);
    expect(registry.list()[0]).toMatchObject({ id: 7, state: 'healthy', inSelection: true, discovered: pod });
    registry.setReady(7, false);
    expect(registry.list()[0]).toMatchObject({ state: 'not_ready', inSelection: false });
    expect(pools.decode.selected.has(7)).toBe(false);
    expect(pools.decode.dropped).toEqual([]);
    registry.setReady(7, true);
    expect(pools.decode.selected.has(7)).toBe(true);
    // An admin drain holds while the pod comes and goes.
    registry.drain(7);
    registry.setReady(7, false);
    registry.setReady(7, true);
    expect(registry.list()[0].state).toBe('draining');
    expect(() => registry.remove(7)).toThrow(/discovered from the pod llm\/vllm-0/);
    expect(registry.has(7)).toBe(true);
    registry.add(worker(8, 'decode'));
    expect(() => registry.removeDiscovered(8)).toThrow(TypeError);
    registry.removeDiscovered(7);
    expect(registry.has(7)).toBe(false);
    expect(subscribed.has(7)).toBe(false);
    expect(pools.decode.dropped).toEqual([7]);
    expect(changes.map((c) => [c.op, c.worker.id])).toEqual([['add', 8]]);
  });
});
