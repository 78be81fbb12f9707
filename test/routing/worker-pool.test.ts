import { describe, expect, it } from 'vitest';
import type { WorkerInfo } from '../../src/engines/types.js';
import { UnknownPoolWorkerError, WorkerPool, validateWorkerInfo } from '../../src/routing/worker-pool.js';

class RecordingCore {
  readonly workers = new Map<number, { worker: number; dpSize?: number; kvCapacityBlocks?: number }>();
  loads: Array<{ worker: number; requests: number }> = [];
  addWorker(spec: { worker: number; dpSize?: number; kvCapacityBlocks?: number }) {
    this.workers.set(spec.worker, spec);
  }
  removeWorker(worker: number) {
    this.workers.delete(worker);
  }
  load() {
    return this.loads;
  }
}

const w = (id: number, extra: Partial<WorkerInfo> = {}): WorkerInfo => ({
  id,
  role: 'decode',
  kind: 'vllm',
  baseUrl: `http://127.0.0.1:${9000 + id}`,
  dpSize: 1,
  ...extra,
});

describe('WorkerPool', () => {
  it('keeps its RoutingCore worker set in step', () => {
    const core = new RecordingCore();
    const pool = new WorkerPool('decode', core, ['decode', 'aggregated']);
    pool.add(w(1, { dpSize: 4, kvCapacityBlocks: 1000 }));
    pool.add(w(2, { role: 'aggregated' }));
    expect([...core.workers.values()]).toEqual([
      { worker: 1, dpSize: 4, kvCapacityBlocks: 1000 },
      { worker: 2, dpSize: 1, kvCapacityBlocks: undefined },
    ]);
    expect(pool.remove(1)).toBe(true);
    expect(pool.remove(1)).toBe(false);
    expect([...core.workers.keys()]).toEqual([2]);
    expect(pool.size).toBe(1);
    expect(pool.get(2)?.role).toBe('aggregated');
    expect(pool.workers().map((x) => x.id)).toEqual([2]);
  });

  it('leaves unhealthy and draining workers out of selection, and says when that changes', () => {
    const pool = new WorkerPool('decode', new RecordingCore(), ['decode']);
    let changes = 0;
    const off = pool.onChange(() => changes++);
    for (const id of [3, 1, 2]) pool.add(w(id));
    expect(pool.selectable()).toEqual([1, 2, 3]);
    expect(pool.allowedWorkers()).toBeUndefined(); // no filter needed
    pool.setHealthy(2, false);
    pool.setHealthy(2, false); // no change
    pool.setDraining(3, true);
    expect(pool.selectable()).toEqual([1]);
    expect(pool.allowedWorkers()).toEqual([1]);
    expect(pool.isSelectable(2)).toBe(false);
    expect(pool.state(3)).toMatchObject({ healthy: true, draining: true, selectable: false });
    pool.setHealthy(2, true);
    pool.setDraining(3, false);
    expect(pool.allowedWorkers()).toBeUndefined();
    expect(changes).toBe(7);
    off();
    pool.setHealthy(1, false);
    expect(changes).toBe(7);
    expect(pool.selectableCount).toBe(2);
  });

  it('reports the requests booked on a worker', () => {
    const core = new RecordingCore();
    const pool = new WorkerPool('decode', core, ['decode']);
    pool.add(w(1, { dpSize: 2 }));
    core.loads = [
      { worker: 1, requests: 2 },
      { worker: 1, requests: 3 },
      { worker: 2, requests: 9 },
    ];
    expect(pool.activeRequests(1)).toBe(5);
  });

  it('refuses workers of another role, duplicates and unknown ids', () => {
    const pool = new WorkerPool('prefill', new RecordingCore(), ['prefill']);
    expect(() => pool.add(w(1))).toThrow(/takes prefill workers, got a decode worker/);
    pool.add(w(1, { role: 'prefill' }));
    expect(() => pool.add(w(1, { role: 'prefill' }))).toThrow(/already has worker 1/);
    expect(() => pool.setHealthy(7, false)).toThrow(UnknownPoolWorkerError);
    expect(() => new WorkerPool('x', new RecordingCore(), [])).toThrow(TypeError);
    expect(() => new WorkerPool('x', new RecordingCore(), ['boss' as never])).toThrow(TypeError);
  });
});

describe('WorkerPool ejection (outlier detection)', () => {
  function ejecting(o: { clock: () => number; percent?: number }) {
    const events: string[] = [];
    const pool = new WorkerPool('decode', new RecordingCore(), ['decode'], {
      outlierDetection: { consecutiveConnectFailures: 1, consecutive5xx: 2, baseEjectionTimeMs: 1000, maxEjectionPercent: o.percent ?? 50 },
      clock: o.clock,
      onEjection: (e) => events.push(`out ${e.worker} ${e.reason} until ${e.untilMs}`),
      onReturn: (e) => events.push(`back ${e.worker} ${e.why}`),
      onEjectionCapped: (e) => events.push(`capped ${e.worker}`),
    });
    for (const id of [1, 2, 3, 4]) pool.add(w(id));
    return { pool, events };
  }

  it('takes a worker out of selection at once, and brings it back when its time runs out', () => {
    let now = 0;
    const { pool, events } = ejecting({ clock: () => now });
    let changes = 0;
    pool.onChange(() => changes++);
    pool.recordOutcome(2, 'connect_failure');
    expect(pool.selectable()).toEqual([1, 3, 4]);
    expect(pool.isSelectable(2)).toBe(false);
    expect(pool.allowedWorkers()).toEqual([1, 3, 4]);
    expect(pool.state(2)).toMatchObject({
      healthy: true,
      ejected: true,
      selectable: false,
      outlier: { ejectedUntil: 1000, ejections: 1, lastEjectionReason: 'connect_failure' },
    });
    expect(pool.ejectedCount).toBe(1);
    now = 999;
    expect(pool.selectable()).toEqual([1, 3, 4]);
    now = 1000;
    expect(pool.selectable()).toEqual([1, 2, 3, 4]);
    expect(pool.state(2)).toMatchObject({ ejected: false, selectable: true, outlier: { ejections: 1 } });
    expect(events).toEqual(['out 2 connect_failure until 1000', 'back 2 ejection_expired']);
    expect(changes).toBe(2);
  });

  it('lets a passed health check end an ejection for connect failures only', () => {
    const { pool, events } = ejecting({ clock: () => 0 });
    pool.recordOutcome(1, 'connect_failure');
    pool.recordOutcome(2, 'server_error');
    pool.recordOutcome(2, 'server_error');
    pool.healthCheckPassed(1);
    pool.healthCheckPassed(2);
    pool.healthCheckPassed(3); // not ejected: nothing happens
    expect(pool.selectable()).toEqual([1, 3, 4]);
    expect(events).toEqual(['out 1 connect_failure until 1000', 'out 2 server_error until 1000', 'back 1 health_check']);
  });

  it('never ejects more than the max percentage, and a leg that answers ends a run of failures', () => {
    const { pool, events } = ejecting({ clock: () => 0 });
    pool.recordOutcome(1, 'connect_failure');
    pool.recordOutcome(2, 'connect_failure');
    pool.recordOutcome(3, 'connect_failure');
    expect(pool.selectable()).toEqual([3, 4]);
    expect(events.at(-1)).toBe('capped 3');
    pool.recordOutcome(4, 'server_error');
    pool.recordOutcome(4, 'answered');
    pool.recordOutcome(4, 'server_error');
    expect(pool.isSelectable(4)).toBe(true);
  });

  it('keeps ejection off without its options, whatever the outcomes', () => {
    const pool = new WorkerPool('decode', new RecordingCore(), ['decode']);
    pool.add(w(1));
    for (let i = 0; i < 10; i++) pool.recordOutcome(1, 'connect_failure');
    expect(pool.selectable()).toEqual([1]);
    expect(pool.state(1)).toEqual({ info: expect.anything(), healthy: true, draining: false, ejected: false, selectable: true });
    expect(pool.ejectedCount).toBe(0);
  });

  it('refuses bad options', () => {
    expect(() => new WorkerPool('x', new RecordingCore(), ['decode'], { clock: 5 as never })).toThrow(/options.clock must be a function/);
    expect(() => new WorkerPool('x', new RecordingCore(), ['decode'], { outlierDetection: { maxEjectionPercent: -1 } })).toThrow(RangeError);
  });
});

describe('validateWorkerInfo', () => {
  it('normalises and accepts a full description', () => {
    expect(validateWorkerInfo({ id: 5, role: 'prefill', kind: 'sglang', baseUrl: 'http://h:1', bootstrapHost: 'h', bootstrapPort: 8998 })).toEqual({
      id: 5,
      role: 'prefill',
      kind: 'sglang',
      baseUrl: 'http://h:1',
      dpSize: 1,
      bootstrapHost: 'h',
      bootstrapPort: 8998,
    });
  });

  it('says what is wrong with a bad description', () => {
    const ok = w(1);
    const cases: Array<[unknown, RegExp, ErrorConstructor]> = [
      [null, /worker must be an object/, TypeError],
      [{ ...ok, id: -1 }, /worker.id must be an integer/, RangeError],
      [{ ...ok, id: '1' }, /worker.id must be a number/, TypeError],
      [{ ...ok, role: 'boss' }, /worker 1: role must be one of aggregated, prefill, decode/, TypeError],
      [{ ...ok, kind: 'tgi' }, /kind must be one of vllm, sglang, trtllm/, TypeError],
      [{ ...ok, baseUrl: 'nope' }, /absolute http/, TypeError],
      [{ ...ok, baseUrl: 7 }, /baseUrl must be a string/, TypeError],
      [{ ...ok, dpSize: 0 }, /dpSize must be an integer in \[1, 65536\]/, RangeError],
      [{ ...ok, kvCapacityBlocks: 1.5 }, /kvCapacityBlocks/, RangeError],
      [{ ...ok, bootstrapHost: 'h' }, /go together/, TypeError],
      [{ ...ok, bootstrapHost: '', bootstrapPort: 1 }, /bootstrapHost must be a non-empty string/, TypeError],
      [{ ...ok, bootstrapHost: 'h', bootstrapPort: 70000 }, /bootstrapPort/, RangeError],
    ];
    for (const [value, re, type] of cases) {
      expect(() => validateWorkerInfo(value)).toThrow(re);
      expect(() => validateWorkerInfo(value)).toThrow(type);
    }
  });
});
