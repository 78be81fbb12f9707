// How long a new router replica takes to become ready with a ~1M-block index: engines (the
// simulated engine's KV event publisher and replay service, fed synthetic prompts) publish the
// index's history; a source ingest indexes it and its snapshot is published to the object store
// by the replicas' own publisher code; more events follow (what the newcomer must catch up on);
// then a real router starts with warm start on and is timed until /health says ready, and checked
// to hold as many blocks as the source. A cold router (warm start off) is timed against it, until
// its index holds as many blocks, in the best case for it: the engines' replay buffers still hold
// the whole history (a real engine keeps its last 10,000 batches, far less than a full cache's).
import { Writable } from 'node:stream';
import { KvIndexer } from '../../src/core/indexer.js';
import { EventIngest } from '../../src/events/ingest.js';
import { createRouter, type Router } from '../../src/server/app/router.js';
import { captureSnapshot } from '../../src/server/app/warm-wiring.js';
import { parseRouterConfig, type RouterConfigInput } from '../../src/server/config/config.js';
import { listenUws, type RunningServer } from '../../src/server/http/uws.js';
import { createLogger } from '../../src/server/observability/logger.js';
import { SnapshotPublisher } from '../../src/server/replicas/snapshot-publisher.js';
import { connect } from '@nats-io/transport-node';
import { KvEventPublisher } from '../../src/sim/worker/kv-publisher.js';
import { ReplayServer } from '../../src/sim/worker/replay.js';
import type { EncodableKvEvent } from '../../src/sim/worker/kv-event-encoding.js';
import { silentLogger } from '../../src/util/logger.js';
import { startInstantEngine } from '../frontend/instant-engine.js';
import { median } from '../lib/stats.js';

const BLOCK_SIZE = 16;
const ENGINES = 4;
/** Blocks per synthetic prompt (a 4k-token prompt) and prompts per event batch. */
const CHAIN_BLOCKS = 256;
const CHAINS_PER_BATCH = 4;
const MODEL = 'bench';

export interface WarmStartRound {
  /** From the router's start to /health 200. */
  warmReadyMs: number;
  fetchMs: number;
  restoreMs: number;
  /** What remained of it: building the router, subscribing, replaying what came after the snapshot. */
  catchUpMs: number;
  /** The warm router's indexed blocks when it reported ready, and the source's. */
  warmBlocks: number;
  sourceBlocks: number;
  /** A cold router: ready at once, but its index is full only once it has replayed the engines' whole buffers. */
  coldReadyMs: number;
  coldFullIndexMs: number;
}

export interface WarmStartCost {
  engines: number;
  blocks: number;
  snapshotBytes: number;
  /** Capture (the dump, on a libuv thread) and encoding, then the object store put. */
  publishCaptureMs: number;
  publishPutMs: number;
  catchUpBatches: number;
  rounds: WarmStartRound[];
  medians: Omit<WarmStartRound, 'warmBlocks' | 'sourceBlocks'>;
}

class BulkEngine {
  private constructor(
    readonly publisher: KvEventPublisher,
    readonly replay: ReplayServer,
  ) {}

  static async start(): Promise<BulkEngine> {
    const publisher = await KvEventPublisher.open({ host: '127.0.0.1', port: 0, topic: '', encoding: 'map', replayBufferSteps: 10_000 });
    return new BulkEngine(publisher, await ReplayServer.open('127.0.0.1', 0, () => publisher.buffer));
  }

  async close(): Promise<void> {
    await this.replay.close();
    await this.publisher.close();
  }
}

/** `chains` synthetic prompts of `blocks` blocks each, from chain id `first` on, in batches. */
function publishChains(engine: BulkEngine, first: number, chains: number, blocks: number, perBatch: number): void {
  for (let c = 0; c < chains; c += perBatch) {
    const events: EncodableKvEvent[] = [];
    for (let k = c; k < Math.min(chains, c + perBatch); k++) {
      const id = first + k;
      const tokens = new Uint32Array(blocks * BLOCK_SIZE);
      for (let t = 0; t < tokens.length; t++) tokens[t] = t === 0 ? id : (t * 31 + id) % 50_000;
      const hashes = Array.from({ length: blocks }, (_, j) => BigInt(id) * 100_000n + BigInt(j) + 1n);
      events.push({ type: 'BlockStored', blockHashes: hashes, parentBlockHash: null, tokenIds: tokens, blockSize: BLOCK_SIZE, loraName: null, medium: 'GPU' });
    }
    engine.publisher.publish(events);
  }
}

async function until(cond: () => Promise<boolean>, what: string, timeoutMs = 300_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function indexedBlocks(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('kvroute_indexed_blocks{'))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

export async function measureWarmStart(o: { natsUrl: string; blocks: number; rounds: number; progress(m: string): void }): Promise<WarmStartCost> {
  const engines = await Promise.all(Array.from({ length: ENGINES }, () => BulkEngine.start()));
  const http = await startInstantEngine(4);
  const workers = engines.map((e, i) => ({ id: i, baseUrl: http.url, kvEvents: e.publisher.endpoint, replayEndpoint: e.replay.endpoint }));
  const base: RouterConfigInput = { blockSize: BLOCK_SIZE, model: MODEL, health: { intervalMs: 0 }, seed: 0, workers };
  const cluster = 'warm_bench';
  const indexer = new KvIndexer({ blockSize: BLOCK_SIZE });
  const ingest = new EventIngest({ indexer, onError: () => undefined });
  const started: Array<{ router: Router; server: RunningServer }> = [];
  try {
    o.progress(`warm start: ${o.blocks} blocks of history from ${ENGINES} engines`);
    for (const w of workers) ingest.addWorker({ worker: w.id, endpoints: [w.kvEvents], replayEndpoints: [w.replayEndpoint], blockSize: BLOCK_SIZE });
    const chains = Math.round(o.blocks / CHAIN_BLOCKS / ENGINES);
    engines.forEach((e, i) => publishChains(e, i * chains, chains, CHAIN_BLOCKS, CHAINS_PER_BATCH));
    await until(async () => indexer.stats().blocks >= chains * CHAIN_BLOCKS * ENGINES, 'the source index to hold the history');
    await ingest.idle();

    // The snapshot, through the replicas' own capture, encoding and object store code.
    const nc = await connect({ servers: o.natsUrl });
    const config = parseRouterConfig(Object.assign({ replicas: { nats: o.natsUrl, cluster } }, base));
    const empty = new KvIndexer({ blockSize: BLOCK_SIZE });
    const publisher = new SnapshotPublisher({
      intervalMs: 0,
      cluster,
      connection: () => nc,
      canPublish: () => true,
      capture: () => captureSnapshot(config, 'source', { prefill: { indexer: empty }, decode: { indexer, ingest } }),
      log: silentLogger,
      onPublished: () => undefined,
      onFailed: () => undefined,
    });
    const published = await publisher.publishNow();
    await nc.close();
    if (!published) throw new Error('the snapshot was not published');

    // What came after the snapshot: 50 batches of 4 short prompts per engine.
    const catchUpBatches = 50;
    engines.forEach((e, i) => publishChains(e, 1_000_000 + i * 1000, catchUpBatches * 4, 8, 4));
    await until(async () => {
      await ingest.idle();
      return ingest.stats().every((s) => s.ranks[0].lastSeq === BigInt(engines[s.worker].publisher.seq - 1));
    }, 'the source to apply the catch-up batches');

    const rounds: WarmStartRound[] = [];
    for (let r = 0; r < o.rounds; r++) {
      o.progress(`warm start: round ${r + 1}/${o.rounds}`);
      const warm = await timeRouter(Object.assign({}, base, { replicas: { nats: o.natsUrl, cluster, id: `warm${r}`, snapshotIntervalMs: 0 } }), started);
      const sourceBlocks = indexer.stats().blocks;
      const warmBlocks = await indexedBlocks(warm.url);
      // A live batch per engine: the cold router joins the streams on it (a gap from 0) and replays
      // the buffers; the source and the warm router apply it too.
      const coldStart = performance.now();
      const cold = await timeRouter(
        Object.assign({}, base, { replicas: { nats: o.natsUrl, cluster, id: `cold${r}`, warmStart: false, snapshotIntervalMs: 0 } }),
        started,
      );
      // Every 100 ms until it has joined (a SUB socket misses what is published before it connects).
      let live = 0;
      const nudge = () => engines.forEach((e, i) => publishChains(e, 2_000_000 + r * 10_000 + live++ * ENGINES + i, 1, 1, 1));
      nudge();
      const ticker = setInterval(nudge, 100);
      try {
        await until(async () => (await indexedBlocks(cold.url)) >= sourceBlocks, "the cold router's index to hold the history");
      } finally {
        clearInterval(ticker);
      }
      const coldFullIndexMs = performance.now() - coldStart;
      rounds.push({
        warmReadyMs: warm.readyMs,
        fetchMs: warm.fetchMs,
        restoreMs: warm.restoreMs,
        catchUpMs: warm.readyMs - warm.fetchMs - warm.restoreMs,
        warmBlocks,
        sourceBlocks,
        coldReadyMs: cold.readyMs,
        coldFullIndexMs,
      });
      for (const s of started.splice(0)) {
        await s.server.close();
        await s.router.close();
      }
    }
    const med = (pick: (r: WarmStartRound) => number) => median(rounds.map(pick));
    return {
      engines: ENGINES,
      blocks: indexer.stats().blocks,
      snapshotBytes: published.bytes,
      publishCaptureMs: published.encodeMs,
      publishPutMs: published.putMs,
      catchUpBatches: catchUpBatches * ENGINES,
      rounds,
      medians: {
        warmReadyMs: med((r) => r.warmReadyMs),
        fetchMs: med((r) => r.fetchMs),
        restoreMs: med((r) => r.restoreMs),
        catchUpMs: med((r) => r.catchUpMs),
        coldReadyMs: med((r) => r.coldReadyMs),
        coldFullIndexMs: med((r) => r.coldFullIndexMs),
      },
    };
  } finally {
    for (const s of started) {
      await s.server.close();
      await s.router.close();
    }
    await ingest.close();
    http.close();
    await Promise.all(engines.map((e) => e.close()));
  }
}

/** Starts a router and times it until /health says ready; the fetch and restore times from its log. */
async function timeRouter(
  config: RouterConfigInput,
  started: Array<{ router: Router; server: RunningServer }>,
): Promise<{ url: string; readyMs: number; fetchMs: number; restoreMs: number }> {
  let text = '';
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      done();
    },
  });
  const t0 = performance.now();
  const router = await createRouter(config, { logger: createLogger({ level: 'info', destination, pretty: false }) });
  const server = await listenUws(router, { host: '127.0.0.1', port: 0 });
  started.push({ router, server });
  await until(async () => (await fetch(`${server.url}/health`)).status === 200, 'the router to report ready');
  const readyMs = performance.now() - t0;
  const restored = text
    .split('\n')
    .filter((l) => l.includes('warm start: index restored'))
    .map((l) => JSON.parse(l) as { fetch_ms: number; restore_ms: number })[0];
  return { url: server.url, readyMs, fetchMs: restored?.fetch_ms ?? 0, restoreMs: restored?.restore_ms ?? 0 };
}
