// End to end: a simulated worker's KV events, received by EventIngest over ZeroMQ, rebuild in a
// KvIndexer exactly the blocks the worker's engine holds, through evictions, lost batches
// (replayed) and a restart (cleared).
import { afterEach, describe, expect, it } from 'vitest';
import { computeBlockHashes } from '../../src/core/hashing.js';
import { KvIndexer } from '../../src/core/indexer.js';
import { EventIngest } from '../../src/events/ingest.js';
import { ROOT_HI, ROOT_LO, hashBlock, toU64 } from '../../src/sim/engine/block-hash.js';
import { startSimWorker, type SimWorker } from '../../src/sim/worker/worker.js';
import { waitFor, workerStats } from './helpers.js';

const BS = 16;
const ID = 3;

let workers: SimWorker[] = [];
let ingests: EventIngest[] = [];
afterEach(async () => {
  await Promise.all(ingests.map((i) => i.close()));
  await Promise.all(workers.map((w) => w.close()));
  workers = [];
  ingests = [];
});

/** Deterministic prompts sharing prefixes: 4 "system prompts" x 6 continuations. */
function knownPrompts(seed: number): Uint32Array[] {
  let s = seed >>> 0;
  const next = () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0);
  const tokens = (n: number) => Uint32Array.from({ length: n }, () => next() % 50_000);
  const prompts: Uint32Array[] = [];
  for (let p = 0; p < 4; p++) {
    const prefix = tokens(32 + (next() % 64));
    for (let c = 0; c < 6; c++) {
      const suffix = tokens(20 + (next() % 120));
      const prompt = new Uint32Array(prefix.length + suffix.length);
      prompt.set(prefix);
      prompt.set(suffix, prefix.length);
      prompts.push(prompt);
    }
  }
  return prompts;
}

/** Leading blocks of `prompt` the engine holds, by its own hash chain. */
function engineHeldPrefix(worker: SimWorker, prompt: Uint32Array): number {
  const cached = worker.model.cachedBlockHashes();
  const out = new Uint32Array(2);
  let [hi, lo] = [ROOT_HI, ROOT_LO];
  let n = 0;
  for (let b = 0; (b + 1) * BS <= prompt.length; b++) {
    hashBlock(prompt, b * BS, BS, hi, lo, 0, out);
    [hi, lo] = [out[0], out[1]];
    if (!cached.has(toU64(hi, lo))) break;
    n++;
  }
  return n;
}

function indexedPrefix(indexer: KvIndexer, prompt: Uint32Array): number {
  return indexer.findMatches(computeBlockHashes(prompt, BS)).find((m) => m.worker === ID)?.blocks ?? 0;
}

async function complete(worker: SimWorker, prompt: Uint32Array): Promise<void> {
  const res = await fetch(`${worker.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'kvroute-sim', prompt: Array.from(prompt), max_tokens: 3, stream: false }),
  });
  expect(res.status).toBe(200);
  await res.json();
}

async function runWorkload(worker: SimWorker, prompts: Uint32Array[], rounds: number, seed: number): Promise<void> {
  let s = seed;
  for (let r = 0; r < rounds; r++) {
    const batch = Array.from({ length: 4 }, () => prompts[(s = (s * 7 + 3) % 9973) % prompts.length]);
    await Promise.all(batch.map((p) => complete(worker, p)));
  }
}

async function nextEventSeq(worker: SimWorker): Promise<number> {
  const res = await fetch(`${worker.url}/admin/faults`);
  return ((await res.json()) as { next_event_seq: number }).next_event_seq;
}

/** Waits until the subscriber has applied every batch the worker has published. */
async function settled(worker: SimWorker, ingest: EventIngest): Promise<void> {
  const last = BigInt((await nextEventSeq(worker)) - 1);
  await waitFor(() => {
    const rank = workerStats(ingest, ID).ranks[0];
    return rank.lastSeq === last && rank.queued === 0 && !rank.replaying;
  }, `the subscriber to apply up to seq ${last}`);
  await ingest.idle();
}

function expectSameBlocks(worker: SimWorker, indexer: KvIndexer, prompts: Uint32Array[]): void {
  const engine = prompts.map((p) => engineHeldPrefix(worker, p));
  const index = prompts.map((p) => indexedPrefix(indexer, p));
  expect(index).toEqual(engine);
  // Every cached block, including those filled by generated tokens, is indexed: same count.
  expect(indexer.stats().blocks).toBe(worker.model.cachedBlockHashes().size);
}

async function setup(encoding: 'map' | 'array') {
  // 48 blocks of 16 tokens: the workload needs several times that, so the engine evicts.
  const worker = await startSimWorker({
    id: ID,
    host: '127.0.0.1',
    engine: { blockSize: BS, kvBlocks: 48, speedup: 1000 },
    eventEncoding: encoding,
    topic: 'kv-events',
  });
  workers.push(worker);
  const indexer = new KvIndexer({ blockSize: BS });
  const ingest = new EventIngest({ indexer });
  ingests.push(ingest);
  ingest.addWorker({ worker: ID, endpoints: [worker.eventsEndpoint], replayEndpoints: [worker.replayEndpoint], topic: 'kv-events', blockSize: BS });
  // The join probe over first: one running later would repair the gaps the test makes on purpose.
  await ingest.joined(ID);
  return { worker, indexer, ingest };
}

describe('EventIngest with a simulated worker', () => {
  it.each(['map', 'array'] as const)('reproduces the engine cache exactly (%s encoding), through evictions, gaps and a restart', async (encoding) => {
    const { worker, indexer, ingest } = await setup(encoding);
    const prompts = knownPrompts(encoding === 'map' ? 1 : 2);

    // Whatever the subscriber missed while joining came back through the join probe.
    await runWorkload(worker, prompts, 12, 1);
    await settled(worker, ingest);
    expectSameBlocks(worker, indexer, prompts);
    expect(prompts.some((p) => indexedPrefix(indexer, p) > 0)).toBe(true);
    // The cache is too small for the workload: some prompts were evicted, wholly or in part.
    expect(prompts.some((p) => engineHeldPrefix(worker, p) < Math.floor(p.length / BS))).toBe(true);
    expect(indexer.stats().evictions).toBe(0);

    // Batches lost on the wire: the next batch reveals the gap, the replay repairs it.
    const before = workerStats(ingest, ID);
    worker.faults.dropEvents(3);
    await runWorkload(worker, prompts, 8, 2);
    await settled(worker, ingest);
    expectSameBlocks(worker, indexer, prompts);
    const afterGap = workerStats(ingest, ID);
    expect(afterGap.gaps - before.gaps).toBeGreaterThanOrEqual(1);
    expect(afterGap.replays - before.replays).toBeGreaterThanOrEqual(1);
    expect(afterGap.replayFailures).toBe(before.replayFailures);
    expect(afterGap.rejected).toEqual(before.rejected);
    expect(afterGap.decodeErrors).toBe(0);

    // The engine restarts: its cache is empty and numbering starts over.
    await worker.faults.restart();
    await runWorkload(worker, prompts.slice(0, 6), 3, 3);
    await settled(worker, ingest);
    expectSameBlocks(worker, indexer, prompts);
    expect(workerStats(ingest, ID).restarts - afterGap.restarts).toBe(1);
  });
});
