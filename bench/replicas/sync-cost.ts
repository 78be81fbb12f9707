// What sharing bookings costs a replica's request path: one router with `replicas` on and one
// without, in front of the same two instant engines, loaded in alternating rounds by a closed-loop
// generator on a worker thread (64 in flight, 1k-token token-id prompts, short answers). Only the
// sender's side is measured: no peer replica runs, so nothing is received (a peer's batches cost
// its receivers about what its sends cost it).
import { createRouter, type Router } from '../../src/server/app/router.js';
import { listenUws, type RunningServer } from '../../src/server/http/uws.js';
import { startInstantEngine, type InstantEngine } from '../frontend/instant-engine.js';
import type { LoadOptions, LoadResult } from '../frontend/loadgen.js';
import { inThread } from '../frontend/thread.js';
import { median } from '../lib/stats.js';

export interface SyncCost {
  rpsOn: number;
  rpsOff: number;
  rounds: Array<{ on: number; off: number }>;
}

export async function measureSyncCost(o: { natsUrl: string; rounds: number; requests: number; progress(m: string): void }): Promise<SyncCost> {
  const engines: InstantEngine[] = await Promise.all([startInstantEngine(4), startInstantEngine(4)]);
  const started: Array<{ router: Router; server: RunningServer }> = [];
  try {
    const workers = engines.map((e, i) => ({ id: i, baseUrl: e.url }));
    for (const on of [true, false]) {
      const router = await createRouter({
        blockSize: 16,
        model: 'bench',
        health: { intervalMs: 0 },
        seed: 0,
        workers,
        ...(on ? { replicas: { nats: o.natsUrl, id: 'cost', cluster: 'sync_cost' } } : {}),
      });
      started.push({ router, server: await listenUws(router, { host: '127.0.0.1', port: 0 }) });
    }
    const [withSync, without] = started.map((s) => s.server.url);
    const bodies = Array.from({ length: 64 }, (_, k) => JSON.stringify({ model: 'bench', prompt: Array.from({ length: 1024 }, (_, t) => (t * 31 + k * 977) % 50_000), max_tokens: 4 }));
    const load = async (url: string): Promise<number> => {
      const opts: LoadOptions = { url, path: '/v1/completions', body: bodies[0], bodies, concurrency: 64, requests: o.requests, maxMs: 60_000 };
      const t = inThread<LoadResult>(new URL('../frontend/loadgen-worker.ts', import.meta.url), opts);
      try {
        const r = await t.result;
        if (r.failed > 0) throw new Error(`${r.failed} requests failed: ${r.firstError}`);
        return r.rps;
      } finally {
        await t.worker.terminate();
      }
    };
    await load(withSync);
    await load(without);
    const rounds: SyncCost['rounds'] = [];
    for (let i = 0; i < o.rounds; i++) {
      o.progress(`sync cost: round ${i + 1}/${o.rounds}`);
      // Who goes first alternates.
      const first = i % 2 === 0 ? await load(withSync) : await load(without);
      const second = i % 2 === 0 ? await load(without) : await load(withSync);
      rounds.push(i % 2 === 0 ? { on: first, off: second } : { on: second, off: first });
    }
    return { rpsOn: median(rounds.map((r) => r.on)), rpsOff: median(rounds.map((r) => r.off)), rounds };
  } finally {
    for (const s of started) {
      await s.server.close();
      await s.router.close();
    }
    for (const e of engines) e.close();
  }
}
