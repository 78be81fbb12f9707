// Router replicas in this process, sharing state through one real nats-server, in front of one
// simulated fleet, for the replica tests.
import { expect } from 'vitest';
import { createRouter, type Router } from '../../../src/server/app/router.js';
import { startEmbeddedFleet, type EmbeddedFleet } from '../../../src/server/app/embedded.js';
import { listenUws, type RunningServer } from '../../../src/server/http/uws.js';
import type { RouterConfigInput } from '../../../src/server/config/config.js';
import type { Logger } from '../../../src/util/logger.js';
import { startNatsServer, type NatsServer } from '../../helpers/nats.js';
import { BLOCK_SIZE, MODEL, prompt } from '../helpers/router.js';

/** Heartbeats every 100 ms, gone after 600 ms: the tests see releases quickly. */
export const FAST = { heartbeatMs: 100, ttlMs: 600 };

export interface Replica {
  url: string;
  router: Router;
  close(): Promise<void>;
}

export interface Candidate {
  worker: number;
  prefill_blocks: number;
  decode_blocks: number;
}

export interface ReplicaCluster {
  nats: NatsServer;
  fleet: EmbeddedFleet;
  /** The config a replica with this id gets (the fleet's first `workers` workers). */
  config(id: string, extra?: RouterConfigInput): RouterConfigInput;
  start(id: string, extra?: RouterConfigInput, logger?: Logger): Promise<Replica>;
  /** Closes the replicas started so far (between tests). */
  closeReplicas(): Promise<void>;
  close(): Promise<void>;
}

/** `decode` simulated workers at speedup 1 (a long generation stays in flight while a test looks elsewhere). */
export async function startReplicaCluster(o: { decode: number; workers?: number; speedup?: number }): Promise<ReplicaCluster> {
  const nats = await startNatsServer();
  const fleet = await startEmbeddedFleet({
    prefill: 0,
    decode: o.decode,
    style: 'vllm',
    speedup: o.speedup ?? 1,
    blockSize: BLOCK_SIZE,
    kvBlocks: 4096,
    model: MODEL,
  });
  const replicas: Replica[] = [];
  const closeReplicas = async () => {
    await Promise.all(replicas.splice(0).map((r) => r.close()));
  };
  const config = (id: string, extra: RouterConfigInput = {}): RouterConfigInput =>
    Object.assign(
      {
        blockSize: BLOCK_SIZE,
        model: MODEL,
        health: { intervalMs: 0 },
        seed: 7,
        workers: fleet.workers.slice(0, o.workers ?? o.decode),
        replicas: Object.assign({ nats: nats.url, id }, FAST),
      },
      extra,
    );
  return {
    nats,
    fleet,
    config,
    async start(id, extra, logger) {
      const router = await createRouter(config(id, extra), { logger });
      let server: RunningServer;
      try {
        server = await listenUws(router, { host: '127.0.0.1', port: 0 });
      } catch (err) {
        await router.close();
        throw err;
      }
      const r = {
        url: server.url,
        router,
        async close() {
          await server.close();
          await router.close();
        },
      };
      replicas.push(r);
      return r;
    },
    closeReplicas,
    async close() {
      await closeReplicas();
      await fleet.close();
      await nats.close();
    },
  };
}

export async function peersOf(url: string): Promise<string[]> {
  const health = (await (await fetch(`${url}/health`)).json()) as { replicas: { peers: Array<{ replica: string }> } };
  return health.replicas.peers.map((p) => p.replica);
}

/** A replica's view of each decode worker's booked load, for a short probe prompt. */
export async function candidates(url: string): Promise<Map<number, Candidate>> {
  const res = await fetch(`${url}/v1/route`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, prompt: 'probe' }),
  });
  expect(res.status).toBe(200);
  const q = (await res.json()) as { decode: { candidates: Candidate[] } };
  return new Map(q.decode.candidates.map((c) => [c.worker, c]));
}

/** Starts a long streamed generation on `url` and waits for its first chunk (booked, prefill done). */
export async function holdStream(url: string, seed: number): Promise<{ worker: number; stop(): void }> {
  const ctl = new AbortController();
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    signal: ctl.signal,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, prompt: prompt(320, seed), max_tokens: 4000, stream: true }),
  });
  expect(res.status).toBe(200);
  const worker = Number(res.headers.get('x-kvroute-decode-worker'));
  await res.body!.getReader().read();
  return { worker, stop: () => ctl.abort() };
}

/** One short completion; its status and the decode worker that served it. */
export async function complete(url: string, text: string, headers: Record<string, string> = {}): Promise<{ status: number; worker: number }> {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: Object.assign({ 'content-type': 'application/json' }, headers),
    body: JSON.stringify({ model: MODEL, prompt: text, max_tokens: 1 }),
  });
  await res.arrayBuffer();
  return { status: res.status, worker: Number(res.headers.get('x-kvroute-decode-worker')) };
}
