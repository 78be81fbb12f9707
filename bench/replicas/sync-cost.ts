// What sharing bookings costs a replica's request path: one router with `replicas` on and one
// without, in front of the same two instant engines, loaded in alternating rounds by a closed-loop
// generator on a worker thread (64 in flight, 1k-token token-id prompts, short answers). Three
// setups: sync off; sync on with no peer (the sender's side alone: its batches go to NATS and
// nowhere else); sync on with a peer replica that really receives and applies every booking. The
// peer runs in the same Node process as the loaded router, so that process does one replica's
// sending and another's applying: the work each replica of a symmetric, equally loaded pair does.
import { createRouter, type Router } from '../../src/server/app/router.js';
import type { RouterConfigInput } from '../../src/server/config/config.js';
import { listenUws, type RunningServer } from '../../src/server/http/uws.js';
import { startInstantEngine, type InstantEngine } from '../frontend/instant-engine.js';
import type { LoadOptions, LoadResult } from '../frontend/loadgen.js';
import { inThread } from '../frontend/thread.js';
import { median } from '../lib/stats.js';

export type SyncSetup = 'off' | 'on' | 'on, peer';
export const SYNC_SETUPS: readonly SyncSetup[] = ['on', 'on, peer', 'off'];

export interface SyncCost {
  /** Median req/s per setup. */
  rps: Record<SyncSetup, number>;
  rounds: Array<Record<SyncSetup, number>>;
  /** Booking events the peer received and applied, per round (the peer setup). */
  peerEventsIn: number[];
  peerEventsRejected: number;
}

interface Started {
  router: Router;
  server: RunningServer;
}

async function start(config: RouterConfigInput): Promise<Started> {
  const router = await createRouter(config);
  return { router, server: await listenUws(router, { host: '127.0.0.1', port: 0 }) };
}

async function stop(s: Started): Promise<void> {
  await s.server.close();
  await s.router.close();
}

async function metric(url: string, name: string, label: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(label));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

async function peersSeen(url: string): Promise<number> {
  const h = (await (await fetch(`${url}/health`)).json()) as { replicas?: { peers: unknown[] } };
  return h.replicas?.peers.length ?? 0;
}

export async function measureSyncCost(o: { natsUrl: string; rounds: number; requests: number; progress(m: string): void }): Promise<SyncCost> {
  const engines: InstantEngine[] = await Promise.all([startInstantEngine(4), startInstantEngine(4)]);
  const started: Started[] = [];
  const workers = engines.map((e, i) => ({ id: i, baseUrl: e.url }));
  const base: RouterConfigInput = { blockSize: 16, model: 'bench', health: { intervalMs: 0 }, seed: 0, workers };
  const replicas = (id: string) => ({ nats: o.natsUrl, id, cluster: 'sync_cost', warmStart: false, snapshotIntervalMs: 0 });
  try {
    const withSync = await start(Object.assign({ replicas: replicas('cost') }, base));
    const without = await start(base);
    started.push(withSync, without);
    const bodies = Array.from({ length: 64 }, (_, k) =>
      JSON.stringify({ model: 'bench', prompt: Array.from({ length: 1024 }, (_, t) => (t * 31 + k * 977) % 50_000), max_tokens: 4 }),
    );
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
    const peerEventsIn: number[] = [];
    let peerEventsRejected = 0;
    const runSetup = async (setup: SyncSetup): Promise<number> => {
      if (setup === 'off') return load(without.server.url);
      if (setup === 'on') return load(withSync.server.url);
      const peer = await start(Object.assign({ replicas: replicas('peer') }, base));
      try {
        const end = Date.now() + 10_000;
        while ((await peersSeen(peer.server.url)) < 1 || (await peersSeen(withSync.server.url)) < 1) {
          if (Date.now() > end) throw new Error('the peer replica did not hear the loaded one within 10 s');
          await new Promise((r) => setTimeout(r, 20));
        }
        const before = await metric(peer.server.url, 'kvroute_replica_events_total', 'fate="in"');
        const rps = await load(withSync.server.url);
        peerEventsIn.push((await metric(peer.server.url, 'kvroute_replica_events_total', 'fate="in"')) - before);
        peerEventsRejected += await metric(peer.server.url, 'kvroute_replica_events_total', 'fate="rejected"');
        return rps;
      } finally {
        await stop(peer);
      }
    };
    // Warm-up (not counted): the first loads in a process pay for compiling the request path.
    await load(withSync.server.url);
    await load(without.server.url);
    const rounds: SyncCost['rounds'] = [];
    for (let i = 0; i < o.rounds; i++) {
      o.progress(`sync cost: round ${i + 1}/${o.rounds}`);
      const round = {} as Record<SyncSetup, number>;
      // Who goes first rotates.
      for (let k = 0; k < SYNC_SETUPS.length; k++) {
        const setup = SYNC_SETUPS[(k + i) % SYNC_SETUPS.length];
        round[setup] = await runSetup(setup);
      }
      rounds.push(round);
    }
    const rps = Object.fromEntries(SYNC_SETUPS.map((s) => [s, median(rounds.map((r) => r[s]))])) as Record<SyncSetup, number>;
    return { rps, rounds, peerEventsIn, peerEventsRejected };
  } finally {
    for (const s of started) await stop(s);
    for (const e of engines) e.close();
  }
}
