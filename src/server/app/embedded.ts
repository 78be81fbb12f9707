// `npm start`'s default fleet: simulated workers in this process (two prefill and two decode in
// the vLLM handoff style unless told otherwise), started on ephemeral loopback ports, described to
// the router exactly as a real fleet would be: base URL, KV event and replay endpoints, capacity.
import { startSimFleet, type SimFleet } from '../../sim/fleet.js';
import type { SimWorker } from '../../sim/worker/worker.js';
import type { WorkerInput } from '../config/config.js';
import type { Resolved } from '../config/declare.js';
import type { EmbeddedFleetSchema } from '../config/schema.js';
import { withFields } from '../../util/objects.js';

/** The fleet's shape (prefill and decode workers, handoff style, speedup, CPU tier: see EmbeddedFleetSchema) and its engines. */
export interface EmbeddedFleetOptions extends Resolved<typeof EmbeddedFleetSchema.properties> {
  /** Must equal the router's block size. */
  blockSize: number;
  kvBlocks?: number;
  model: string;
  seed?: number;
}

export interface EmbeddedFleet {
  readonly workers: WorkerInput[];
  readonly sim: SimWorker[];
  describe(): string;
  close(): Promise<void>;
}

export const EMBEDDED_KV_BLOCKS = 16_384;

export async function startEmbeddedFleet(o: EmbeddedFleetOptions): Promise<EmbeddedFleet> {
  const engine = {
    blockSize: o.blockSize,
    kvBlocks: o.kvBlocks ?? EMBEDDED_KV_BLOCKS,
    speedup: o.speedup,
    seed: o.seed ?? 0,
    offloadBlocks: o.offloadBlocks ?? 0,
  };
  const shared = { host: '127.0.0.1', pdStyle: o.style, model: o.model, engine };
  const fleets: SimFleet[] = [];
  try {
    if (o.prefill > 0) fleets.push(await startSimFleet(withFields(shared, { workers: o.prefill, id: 0, role: 'prefill' as const })));
    fleets.push(
      await startSimFleet({
        ...shared,
        workers: o.decode,
        id: o.prefill,
        role: o.prefill > 0 ? 'decode' : 'aggregated',
        engine: withFields(engine, { seed: engine.seed + o.prefill }),
      }),
    );
  } catch (err) {
    await Promise.all(fleets.map((f) => f.close()));
    throw err;
  }
  const sim = fleets.flatMap((f) => f.workers);
  const workers: WorkerInput[] = sim.map((w) => ({
    id: w.id,
    role: w.role,
    kind: o.style,
    baseUrl: w.url,
    dpSize: 1,
    kvEvents: w.eventsEndpoint,
    replayEndpoint: w.replayEndpoint,
    kvCapacityBlocks: engine.kvBlocks,
    ...(w.bootstrap ? { bootstrap: w.bootstrap } : {}),
  }));
  return {
    workers,
    sim,
    describe() {
      const shape = o.prefill > 0 ? `${o.prefill} prefill + ${o.decode} decode` : `${o.decode} aggregated`;
      const tier = engine.offloadBlocks > 0 ? `, CPU tier of ${engine.offloadBlocks} blocks` : '';
      return `${shape} simulated workers (${o.style} handoff, block size ${o.blockSize}${tier}, speedup ${o.speedup}x)`;
    },
    async close() {
      await Promise.all(fleets.map((f) => f.close()));
    },
  };
}
