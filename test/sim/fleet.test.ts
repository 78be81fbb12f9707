import { afterAll, describe, expect, it } from 'vitest';
import { type SimFleet, fleetWorkerOptions, startSimFleet } from '../../src/sim/fleet.js';

const fleets: SimFleet[] = [];
afterAll(async () => {
  await Promise.all(fleets.map((f) => f.close()));
});

describe('fleetWorkerOptions', () => {
  it('counts ids, ports and seeds up from the first worker', () => {
    const opts = {
      workers: 3,
      id: 10,
      role: 'decode' as const,
      basePorts: { http: 8000, zmq: 5557, replay: 5600, bootstrap: 8998 },
      engine: { seed: 7, blockSize: 4 },
    };
    expect(fleetWorkerOptions(opts, 2)).toEqual({
      role: 'decode',
      id: 12,
      httpPort: 8002,
      zmqPort: 5559,
      replayPort: 5602,
      bootstrapPort: 9000,
      engine: { seed: 9, blockSize: 4 },
    });
  });

  it('gives every worker an ephemeral port when the base is 0 or absent', () => {
    const o = fleetWorkerOptions({ workers: 2, basePorts: { http: 0 } }, 1);
    expect([o.id, o.httpPort, o.zmqPort, o.replayPort, o.bootstrapPort, o.engine?.seed]).toEqual([1, 0, 0, 0, 0, 1]);
  });

  it('takes each worker id from ids, when given', () => {
    const opts = { workers: 3, ids: [9, 2, 40], basePorts: { http: 8000 } };
    expect([0, 1, 2].map((i) => fleetWorkerOptions(opts, i)).map((o) => [o.id, o.httpPort, o.engine?.seed])).toEqual([
      [9, 8000, 0],
      [2, 8001, 1],
      [40, 8002, 2],
    ]);
    expect(() => fleetWorkerOptions({ workers: 2, ids: [1] }, 0)).toThrow(/every worker: 2 workers, 1 ids/);
    expect(() => fleetWorkerOptions({ workers: 2, ids: [1, 1] }, 0)).toThrow(/distinct/);
    expect(() => fleetWorkerOptions({ workers: 2, ids: [1, -2] }, 0)).toThrow(RangeError);
    expect(() => fleetWorkerOptions({ workers: 1, ids: [1], id: 1 }, 0)).toThrow(/not both/);
    expect(() => fleetWorkerOptions({ workers: 1, ids: '1' as never }, 0)).toThrow(TypeError);
  });

  it('refuses fleets that do not fit', () => {
    expect(() => fleetWorkerOptions({ workers: 0 }, 0)).toThrow(RangeError);
    expect(() => fleetWorkerOptions({ workers: 3, basePorts: { http: 65534 } }, 0)).toThrow(/basePorts.http/);
    expect(() => fleetWorkerOptions({ workers: 2, id: -1 }, 0)).toThrow(RangeError);
    expect(() => fleetWorkerOptions(null as never, 0)).toThrow(TypeError);
  });
});

describe('startSimFleet', () => {
  it('starts distinct workers and stops them all', async () => {
    const fleet = await startSimFleet({ workers: 3, id: 4, engine: { blockSize: 4, kvBlocks: 64, speedup: 1000 } });
    fleets.push(fleet);
    expect(fleet.workers.map((w) => w.id)).toEqual([4, 5, 6]);
    expect(new Set(fleet.workers.map((w) => w.url)).size).toBe(3);
    expect(new Set(fleet.workers.map((w) => w.eventsEndpoint)).size).toBe(3);
    for (const w of fleet.workers) expect((await fetch(`${w.url}/health`)).status).toBe(200);
    await fleet.close();
    await expect(fetch(`${fleet.workers[0].url}/health`)).rejects.toThrow();
    await fleet.close(); // idempotent
  });

  it('refuses bad options before starting anything', async () => {
    await expect(startSimFleet({ workers: 2, role: 'router' as never })).rejects.toThrow(/role/);
    await expect(startSimFleet({ workers: 1.5 })).rejects.toThrow(RangeError);
  });
});
