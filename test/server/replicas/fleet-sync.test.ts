import { describe, expect, it } from 'vitest';
import { FleetSync } from '../../../src/server/replicas/fleet-sync.js';
import type { FleetPort } from '../../../src/server/replicas/ports.js';
import type { SharedBucket } from '../../../src/server/replicas/bucket.js';
import { parseWorkerConfig, workerToInput, type WorkerConfig } from '../../../src/server/config/config.js';
import { silentLogger } from '../../../src/util/logger.js';

function fakeFleet(): FleetPort & { ops: string[]; draining: Set<number>; ids: Set<number> } {
  const ids = new Set<number>();
  const draining = new Set<number>();
  const ops: string[] = [];
  return {
    ids,
    draining,
    ops,
    has: (id) => ids.has(id),
    isDraining: (id) => draining.has(id),
    add: (w: WorkerConfig) => void (ids.add(w.id), ops.push(`add ${w.id}`)),
    drain: (id) => void (draining.add(id), ops.push(`drain ${id}`)),
    activate: (id) => void (draining.delete(id), ops.push(`activate ${id}`)),
    remove: (id) => void (ids.delete(id), ops.push(`remove ${id}`)),
  };
}

const w5 = parseWorkerConfig({ id: 5, baseUrl: 'http://127.0.0.1:9005' });

describe('FleetSync', () => {
  it("shares this replica's admin changes only once attached, never the ones it applies", () => {
    const puts: Array<[string, unknown]> = [];
    const bucket = { put: (k: string, v: unknown) => puts.push([k, v]) } as unknown as SharedBucket;
    const sync = new FleetSync(bucket, silentLogger, () => undefined);
    sync.changed({ op: 'add', worker: w5 });
    expect(puts).toEqual([]);
    const fleet = fakeFleet();
    sync.attach(fleet);
    sync.changed({ op: 'drain', worker: w5 });
    expect(puts).toEqual([['w5', { state: 'draining', worker: workerToInput(w5) }]]);
  });

  it('applies entries received before and after attaching, each once, and refuses malformed ones', () => {
    let invalid = 0;
    const sync = new FleetSync({ put: () => undefined } as unknown as SharedBucket, silentLogger, () => invalid++);
    sync.received('w5', { state: 'active', worker: workerToInput(w5) });
    sync.received('w5', { state: 'draining', worker: workerToInput(w5) });
    const fleet = fakeFleet();
    sync.attach(fleet);
    expect(fleet.ops).toEqual(['add 5', 'drain 5']);
    sync.received('w5', { state: 'draining', worker: workerToInput(w5) });
    sync.received('w5', { state: 'active', worker: workerToInput(w5) });
    sync.received('w5', { state: 'removed', worker: workerToInput(w5) });
    sync.received('w5', { state: 'removed', worker: workerToInput(w5) });
    expect(fleet.ops).toEqual(['add 5', 'drain 5', 'activate 5', 'remove 5']);
    for (const bad of [{ state: 'active' }, { state: 'gone', worker: workerToInput(w5) }, { state: 'active', worker: { id: 5, baseUrl: 'ftp://x' } }])
      sync.received('w5', bad);
    sync.received('w6', { state: 'active', worker: workerToInput(w5) });
    expect(invalid).toBe(4);
    expect(fleet.ops).toHaveLength(4);
  });
});
