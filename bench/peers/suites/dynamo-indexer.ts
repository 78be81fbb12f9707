// Peer: Dynamo's KV indexer (dynamo-kv-router 1.6.1 from crates.io, built on demand) next to
// kvroute's, on the indexer suite's workload, in alternating rounds (bench/peers/indexer-compare.ts).
import { writeFileSync } from 'node:fs';
import { FULL_DOCS_PER_WORKER, QUICK_DOCS_PER_WORKER } from '../../indexer/workload.js';
import type { BenchContext, BenchSuite, SuiteResult } from '../../lib/suite.js';
import { cachePath } from '../cache.js';
import { buildDynamoIndexer, DynamoIndexer } from '../dynamo-indexer.js';
import { compareIndexers, kvrouteWorkload, peerWorkload, type IndexerSizes } from '../indexer-compare.js';
import { indexerReport } from '../indexer-report.js';
import { encodeWorkload } from '../workload-file.js';

const FULL: IndexerSizes = { docsPerWorker: FULL_DOCS_PER_WORKER, rounds: 3, latencyRounds: 5, latencySamples: 6_000, hashSamples: 5_000 };
const QUICK: IndexerSizes = { docsPerWorker: QUICK_DOCS_PER_WORKER, rounds: 2, latencyRounds: 2, latencySamples: 1_000, hashSamples: 500 };

async function run(ctx: BenchContext, binary: unknown): Promise<SuiteResult> {
  const sizes = ctx.quick ? QUICK : FULL;
  ctx.progress(`generating the workload (${sizes.docsPerWorker} documents per worker) and writing it for the peer`);
  const w = kvrouteWorkload(sizes.docsPerWorker);
  const file = cachePath(`indexer-workload-${sizes.docsPerWorker}.bin`);
  writeFileSync(file, encodeWorkload(peerWorkload(w)));
  const { peer, ready } = await DynamoIndexer.start(binary as string, file);
  try {
    ctx.progress(
      `${ready.crate} loaded ${ready.stored} stored events, ${ready.removed} removed, ${ready.queries} queries; ${ready.hash_check.mismatches} of ${ready.hash_check.blocks} blocks hashed differently from kvroute`,
    );
    return indexerReport(await compareIndexers(w, peer, ready, sizes, ctx.progress));
  } finally {
    await peer.close();
  }
}

export const suite: BenchSuite = {
  name: 'dynamo-indexer',
  title: "Peer: Dynamo's KV indexer (dynamo-kv-router 1.6.1) on kvroute's indexer workload",
  order: 10,
  prepare: (ctx) => buildDynamoIndexer(ctx.progress),
  run,
};
