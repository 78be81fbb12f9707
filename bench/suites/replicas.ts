// Router replicas (issue 16): the synthetic trace replayed online against one router, against two
// replicas sharing their bookings over NATS, and against two replicas that share nothing, each
// time in front of a fresh simulated fleet of the same shape and the same seed; requests go to
// the two replicas alternately (as a load balancer's round robin would). TTFT and hit rate of each,
// the sync lag seen meanwhile, in alternating rounds. Then what sync costs a replica's request
// path (with and without a peer receiving), and how long a new replica takes to become ready with
// a ~1M-block index restored from the cluster's snapshot, against a cold start.
import { fileURLToPath } from 'node:url';
import { createRouter, type Router } from '../../src/server/app/router.js';
import { startEmbeddedFleet } from '../../src/server/app/embedded.js';
import type { RouterConfigInput } from '../../src/server/config/config.js';
import { listenUws, type RunningServer } from '../../src/server/http/uws.js';
import { replayOnline } from '../../src/sim/replay/online.js';
import { summarizeRun, type PolicySummary } from '../../src/sim/replay/summary.js';
import { loadTrace, type TraceRequest } from '../../src/sim/replay/trace.js';
import { median } from '../lib/stats.js';
import type { BenchContext, BenchSuite, Figure, SuiteResult } from '../lib/suite.js';
import { startBenchNats, type BenchNats } from '../replicas/nats-server.js';
import { measureSyncCost, SYNC_SETUPS, type SyncCost } from '../replicas/sync-cost.js';
import { measureWarmStart, type WarmStartCost } from '../replicas/warm-start.js';

const TRACE = fileURLToPath(new URL('../../traces/synthetic_trace.jsonl', import.meta.url));
const MODEL = 'kvroute-sim';
const BLOCK_SIZE = 16;
const WORKERS = 4;
/** 1M tokens per worker (Dynamo's mocker default, as the replay suite): part of the working set fits, so where a request goes matters. */
const KV_BLOCKS = 65_536;
/** Arrivals and engines both compressed by this factor: the trace's load, in less wall time. */
const SCALE = 4;
const SEED = 0;

type Setup = 'one router' | 'two synced replicas' | 'two unsynced replicas';
const SETUPS: readonly Setup[] = ['one router', 'two synced replicas', 'two unsynced replicas'];

interface RunResult {
  summary: PolicySummary;
  errors: number;
  /** Sync lag p99 over the replicas (synced setup only), ms. */
  lagP99Ms?: number;
  lagSamples?: number;
}

async function runSetup(setup: Setup, trace: TraceRequest[], nats: BenchNats, round: number): Promise<RunResult> {
  const fleet = await startEmbeddedFleet({
    prefill: 0,
    decode: WORKERS,
    style: 'vllm',
    speedup: SCALE,
    blockSize: BLOCK_SIZE,
    kvBlocks: KV_BLOCKS,
    model: MODEL,
  });
  const routers: Array<{ router: Router; server: RunningServer }> = [];
  try {
    const count = setup === 'one router' ? 1 : 2;
    for (let i = 0; i < count; i++) {
      const config: RouterConfigInput = { blockSize: BLOCK_SIZE, model: MODEL, health: { intervalMs: 0 }, seed: SEED, workers: fleet.workers };
      // A cluster name per round: the rounds never hear each other's replicas.
      if (setup === 'two synced replicas') config.replicas = { nats: nats.url, id: `r${i}`, cluster: `bench${round + 1}` };
      const router = await createRouter(config);
      routers.push({ router, server: await listenUws(router, { host: '127.0.0.1', port: 0 }) });
    }
    if (setup === 'two synced replicas') await waitForPeers(routers.map((r) => r.server.url));
    const run = await replayOnline({ urls: routers.map((r) => r.server.url), trace, arrivalScale: SCALE, seed: SEED, model: MODEL });
    const result: RunResult = {
      summary: summarizeRun({ records: run.records, loadSpread: Number.NaN, simulatedMs: run.wallMs }, run.wallMs),
      errors: run.errors,
    };
    if (setup === 'two synced replicas') {
      const lags = await Promise.all(routers.map(async (r) => (await health(r.server.url)).replicas?.syncLagMs));
      result.lagP99Ms = Math.max(...lags.map((l) => l?.p99 ?? 0));
      result.lagSamples = lags.reduce((n, l) => n + (l?.samples ?? 0), 0);
    }
    return result;
  } finally {
    for (const r of routers) {
      await r.server.close();
      await r.router.close();
    }
    await fleet.close();
  }
}

interface Health {
  replicas?: { peers: unknown[]; syncLagMs: { p99: number; samples: number } | null };
}

async function health(url: string): Promise<Health> {
  return (await (await fetch(`${url}/health`)).json()) as Health;
}

async function waitForPeers(urls: string[]): Promise<void> {
  const end = Date.now() + 10_000;
  for (;;) {
    const seen = await Promise.all(urls.map(async (u) => (await health(u)).replicas?.peers.length ?? 0));
    if (seen.every((n) => n >= urls.length - 1)) return;
    if (Date.now() > end) throw new Error('the replicas did not hear each other within 10 s');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function run(ctx: BenchContext): Promise<SuiteResult> {
  const limit = ctx.quick ? 30 : 300;
  const rounds = ctx.quick ? 1 : 3;
  const trace = (await loadTrace(TRACE)).slice(0, limit);
  const nats = await startBenchNats();
  const results = new Map<Setup, RunResult[]>(SETUPS.map((s) => [s, []]));
  let cost: SyncCost;
  let warm: WarmStartCost;
  try {
    // Warm-up (not counted): the first run in a process pays for compiling the request path.
    ctx.progress('warm-up');
    await runSetup('two synced replicas', trace.slice(0, ctx.quick ? 10 : 20), nats, -1);
    for (let round = 0; round < rounds; round++) {
      // Who goes first rotates from round to round.
      for (let k = 0; k < SETUPS.length; k++) {
        const setup = SETUPS[(k + round) % SETUPS.length];
        ctx.progress(`round ${round + 1}/${rounds}: ${setup}, ${trace.length} requests`);
        results.get(setup)!.push(await runSetup(setup, trace, nats, round));
      }
    }
    cost = await measureSyncCost({ natsUrl: nats.url, rounds: ctx.quick ? 2 : 6, requests: ctx.quick ? 500 : 10_000, progress: (m) => ctx.progress(m) });
    warm = await measureWarmStart({ natsUrl: nats.url, blocks: ctx.quick ? 100_000 : 1_000_000, rounds: ctx.quick ? 1 : 3, progress: (m) => ctx.progress(m) });
  } finally {
    await nats.close();
  }
  const med = (s: Setup, pick: (r: RunResult) => number) => median(results.get(s)!.map(pick));
  const one = (pick: (r: RunResult) => number) => med('one router', pick);
  const figures: Figure[] = [];
  for (const setup of ['two synced replicas', 'two unsynced replicas'] as const) {
    const synced = setup === 'two synced replicas';
    figures.push(
      {
        name: `TTFT p90, ${setup}`,
        value: med(setup, (r) => r.summary.ttft_ms.p90),
        unit: 'ms',
        reference: { name: 'one router', value: one((r) => r.summary.ttft_ms.p90) },
        ...(synced ? { target: { op: '<=' as const, value: one((r) => r.summary.ttft_ms.p90) * 1.05 } } : {}),
        headline: true,
      },
      {
        name: `TTFT p50, ${setup}`,
        value: med(setup, (r) => r.summary.ttft_ms.p50),
        unit: 'ms',
        reference: { name: 'one router', value: one((r) => r.summary.ttft_ms.p50) },
      },
      {
        name: `hit rate, ${setup}`,
        value: med(setup, (r) => r.summary.hit_rate * 100),
        unit: '%',
        better: 'higher',
        reference: { name: 'one router', value: one((r) => r.summary.hit_rate * 100) },
        headline: true,
      },
    );
  }
  figures.push({
    name: 'sync lag p99 under the replay, loopback NATS',
    value: med('two synced replicas', (r) => r.lagP99Ms ?? Number.NaN),
    unit: 'ms',
    headline: true,
  });
  figures.push(
    {
      name: 'frontend req/s of one replica with booking sync on, no peer (1k-token prompts, closed loop, 64 in flight)',
      value: cost.rps.on,
      unit: 'req/s',
      better: 'higher',
      reference: { name: 'sync off', value: cost.rps.off },
      target: { op: '>=', value: cost.rps.off * 0.9 },
      headline: true,
    },
    {
      name: 'frontend req/s of one replica with booking sync on, a peer replica applying every booking in the same process',
      value: cost.rps['on, peer'],
      unit: 'req/s',
      better: 'higher',
      reference: { name: 'sync off', value: cost.rps.off },
      target: { op: '>=', value: cost.rps.off * 0.9 },
      headline: true,
    },
    {
      name: `time to ready of a new replica, warm start from a ${(warm.blocks / 1e6).toFixed(2)}M-block snapshot`,
      value: warm.medians.warmReadyMs,
      unit: 'ms',
      reference: {
        name: "cold start, until its index holds as many blocks (whole history still in the engines' buffers)",
        value: warm.medians.coldFullIndexMs,
      },
      headline: true,
    },
    { name: 'warm start: snapshot fetch from the object store', value: warm.medians.fetchMs, unit: 'ms' },
    { name: 'warm start: index restore', value: warm.medians.restoreMs, unit: 'ms' },
    { name: `warm start: router start and catch-up (${warm.catchUpBatches} batches)`, value: warm.medians.catchUpMs, unit: 'ms' },
    { name: 'warm start: snapshot size', value: warm.snapshotBytes / 2 ** 20, unit: 'MiB' },
  );
  const rows = SETUPS.map((s) => {
    const f = (pick: (r: RunResult) => number, d = 1) => med(s, pick).toFixed(d);
    return `| ${s} | ${f((r) => r.summary.ttft_ms.p50)} | ${f((r) => r.summary.ttft_ms.p90)} | ${f((r) => r.summary.hit_rate * 100)} % | ${f((r) => r.summary.completed, 0)} / ${trace.length} | ${f((r) => r.errors, 0)} |`;
  });
  const markdown = [
    `The first ${trace.length} requests of traces/synthetic_trace.jsonl, sent online (streamed, token-id prompts) with arrivals compressed ${SCALE}x, to`,
    `${WORKERS} simulated aggregated workers (vLLM style, ${KV_BLOCKS} KV blocks of ${BLOCK_SIZE} tokens each, engine time compressed ${SCALE}x too), fresh for every run;`,
    `two replicas get the requests alternately. Policy kv, seed ${SEED}. Medians of ${rounds} round(s), the order of the setups rotating. Routers, fleet and client`,
    'share one Node process (so the figures are wall-clock milliseconds of the compressed run, and the process is loaded alike in the three setups).',
    '',
    '| setup | TTFT p50 (ms) | TTFT p90 (ms) | hit rate | completed | errors |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    `Sync lag (publish to apply, the receiving replica's last 4096 batches): p99 ${med('two synced replicas', (r) => r.lagP99Ms ?? Number.NaN).toFixed(3)} ms.`,
    '',
    'What sync costs the request path (bench/replicas/sync-cost.ts): one router with `replicas` on and one without, in front of the same two instant engines,',
    `closed loop of 64 in flight, 1k-token token-id prompts, medians of ${cost.rounds.length} rounds, the order of the setups rotating. With a peer, a second replica`,
    "in the same Node process receives and applies every booking (that process does one replica's sending and another's applying, as each replica of",
    `an equally loaded pair does; the peer applied ${median(cost.peerEventsIn).toFixed(0)} booking events per round (median), ${cost.peerEventsRejected} refused):`,
    '',
    '| setup | req/s | against sync off |',
    '|---|---|---|',
    ...SYNC_SETUPS.map((s) => `| sync ${s} | ${cost.rps[s].toFixed(0)} | ${((cost.rps[s] / cost.rps.off - 1) * 100).toFixed(1)} % |`),
    '',
    `Rounds (req/s): ${cost.rounds.map((r) => SYNC_SETUPS.map((s) => `${s} ${r[s].toFixed(0)}`).join(', ')).join('; ')}.`,
  ].join('\n');
  const m = warm.medians;
  const warmMarkdown = [
    `${warm.engines} engines (the simulated engine's KV event publisher and replay service) publish the history of a ${(warm.blocks / 1e6).toFixed(2)}M-block index`,
    `(prompts of 256 blocks of ${BLOCK_SIZE} tokens, 4 per batch); a source ingest indexes it and the replicas' publisher code captures it and puts it in the`,
    `object store (${(warm.snapshotBytes / 2 ** 20).toFixed(1)} MiB; capture and encoding ${warm.publishCaptureMs.toFixed(0)} ms, put ${warm.publishPutMs.toFixed(0)} ms). Then ${warm.catchUpBatches} more`,
    'batches follow (what a newcomer must catch up on), and a router starts with warm start on; it is timed until /health answers 200, then checked to',
    `hold as many blocks as the source (it did in every round: ${warm.rounds.map((r) => `${r.warmBlocks} of ${r.sourceBlocks}`).join(', ')}). A cold router (warm start off)`,
    'is timed until its index holds as many blocks, in the best case for it: the engines still buffer the whole history (a real engine keeps its',
    "last batches only, far less than a full cache's history: a cold replica then never learns the older blocks until they are stored again).",
    `Medians of ${warm.rounds.length} round(s); everything in one Node process on a shared 2-core machine.`,
    '',
    '| | ms |',
    '|---|---|',
    `| warm: snapshot fetch (connect, object store get, SHA-256 check) | ${m.fetchMs.toFixed(0)} |`,
    `| warm: restore (both pools, libuv thread) | ${m.restoreMs.toFixed(0)} |`,
    `| warm: router start, subscriptions, catch-up of ${warm.catchUpBatches} batches | ${m.catchUpMs.toFixed(0)} |`,
    `| **warm: time to ready** | **${m.warmReadyMs.toFixed(0)}** |`,
    `| cold: time to ready (an empty index) | ${m.coldReadyMs.toFixed(0)} |`,
    `| cold: until its index holds the history (replaying the engines' whole buffers) | ${m.coldFullIndexMs.toFixed(0)} |`,
  ].join('\n');
  return {
    figures,
    sections: [
      { title: 'Synced and unsynced replicas against one router', markdown },
      { title: 'Warm start of a new replica', markdown: warmMarkdown },
    ],
    data: { replay: Object.fromEntries(results), syncCost: cost, warmStart: warm },
  };
}

export const suite: BenchSuite = { name: 'replicas', title: 'Router replicas over NATS', order: 75, run };
