// Several simulated workers in this process: ids (unless given one by one) and ports count up from
// the first worker's, each engine gets its own seed (base seed + index) so workers do not generate
// identical streams.
import { expectInteger, expectWorkerId } from '../util/validate.js';
import { type SimWorker, type SimWorkerOptions, startSimWorker } from './worker/worker.js';

export interface SimFleetOptions extends Omit<SimWorkerOptions, 'id' | 'httpPort' | 'zmqPort' | 'replayPort' | 'bootstrapPort'> {
  workers: number;
  /** The first worker's id (default 0); the others count up. */
  id?: number;
  /** Every worker's id, one per worker, all distinct (instead of `id`). */
  ids?: readonly number[];
  /** The first worker's ports; the others count up. 0 (the default) gives every worker an ephemeral port. */
  basePorts?: { http?: number; zmq?: number; replay?: number; bootstrap?: number };
}

export interface SimFleet {
  workers: SimWorker[];
  /** Drains every worker at once (see SimWorker.drain); sums what was in flight and what was cut. */
  drain(timeoutMs: number): Promise<{ inFlight: number; cut: number }>;
  close(): Promise<void>;
}

/** The options of worker `i` of a fleet (ids, ports and seeds counted up); validates the fleet options. */
export function fleetWorkerOptions(opts: SimFleetOptions, i: number): SimWorkerOptions {
  if (opts === null || typeof opts !== 'object') throw new TypeError('startSimFleet needs an options object');
  const { workers: count, id: firstId = 0, ids, basePorts = {}, ...shared } = opts;
  expectInteger(count, 'workers', 1, 4096);
  expectInteger(firstId, 'id', 0, Number.MAX_SAFE_INTEGER - count);
  expectInteger(i, 'worker index', 0, count - 1);
  if (ids !== undefined) expectIds(ids, count, opts.id);
  const portAt = (base: number | undefined, name: string) => {
    if (base === undefined || base === 0) return 0;
    expectInteger(base, name, 1, 65535 - (count - 1));
    return base + i;
  };
  const baseSeed = shared.engine?.seed ?? 0;
  expectInteger(baseSeed, 'engine.seed', 0, Number.MAX_SAFE_INTEGER - count);
  return {
    ...shared,
    id: ids ? ids[i] : firstId + i,
    httpPort: portAt(basePorts.http, 'basePorts.http'),
    zmqPort: portAt(basePorts.zmq, 'basePorts.zmq'),
    replayPort: portAt(basePorts.replay, 'basePorts.replay'),
    bootstrapPort: portAt(basePorts.bootstrap, 'basePorts.bootstrap'),
    engine: { ...shared.engine, seed: baseSeed + i },
  };
}

export async function startSimFleet(opts: SimFleetOptions): Promise<SimFleet> {
  // Validate every worker's options before the first port is taken.
  const perWorker = Array.from({ length: fleetSize(opts) }, (_, i) => fleetWorkerOptions(opts, i));
  const started: SimWorker[] = [];
  try {
    for (const o of perWorker) started.push(await startSimWorker(o));
  } catch (err) {
    await Promise.all(started.map((w) => w.close()));
    throw err;
  }
  let closed = false;
  return {
    workers: started,
    async drain(timeoutMs) {
      const results = await Promise.all(started.map((w) => w.drain(timeoutMs)));
      return { inFlight: results.reduce((n, r) => n + r.inFlight, 0), cut: results.reduce((n, r) => n + r.cut, 0) };
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.all(started.map((w) => w.close()));
    },
  };
}

function expectIds(ids: readonly number[], count: number, firstId: number | undefined): void {
  if (!Array.isArray(ids)) throw new TypeError('ids must be an array of worker ids');
  if (firstId !== undefined) throw new TypeError('give either id (the first of counted ids) or ids, not both');
  if (ids.length !== count) throw new RangeError(`ids must name every worker: ${count} workers, ${ids.length} ids`);
  ids.forEach((id, k) => expectWorkerId(id, `ids[${k}]`));
  if (new Set(ids).size !== ids.length) throw new RangeError(`ids must be distinct, got ${ids.join(', ')}`);
}

function fleetSize(opts: SimFleetOptions): number {
  if (opts === null || typeof opts !== 'object') throw new TypeError('startSimFleet needs an options object');
  return expectInteger(opts.workers, 'workers', 1, 4096);
}
