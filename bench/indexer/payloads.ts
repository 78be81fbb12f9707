// KV event payloads for the indexer suite: the suite's events encoded as engines publish them
// (msgpack batches, PROTOCOLS.md section 2), and the event loop's worst stall while a batch applies.
import { decodeEventBatch } from '../../src/events/decode.js';
import { KvEventBatchEncoder, type EncodableKvEvent } from '../../src/sim/worker/kv-event-encoding.js';
import { BLOCK_SIZE, type RemovedEvent, type StoredEvent } from './workload.js';

/** Events per KV event batch (payload) of the workload's events. */
export const EVENTS_PER_BATCH = 32;

export interface Payload {
  worker: number;
  bytes: Buffer;
  events: number;
}

/** Consecutive events of one worker, `perBatch` to a payload (array encoding, as older vLLM). */
export function encodeBatches(events: ReadonlyArray<{ worker: number; event: EncodableKvEvent }>, perBatch: number): Payload[] {
  const encoder = new KvEventBatchEncoder('array');
  const out: Payload[] = [];
  let i = 0;
  while (i < events.length) {
    const worker = events[i].worker;
    const batch: EncodableKvEvent[] = [];
    while (i < events.length && events[i].worker === worker && batch.length < perBatch) batch.push(events[i++].event);
    out.push({ worker, bytes: Buffer.from(encoder.encode(1_700_000_000, batch, 0)), events: batch.length });
  }
  return out;
}

/** The workload's BlockStored events as engine payloads, EVENTS_PER_BATCH to a batch. */
export function storedPayloads(stored: readonly StoredEvent[]): Payload[] {
  return encodeBatches(
    stored.map((e) => ({
      worker: e.worker,
      event: {
        type: 'BlockStored' as const,
        blockHashes: [...e.hashes],
        parentBlockHash: e.parent,
        tokenIds: e.tokens,
        blockSize: BLOCK_SIZE,
        loraName: null,
        medium: 'GPU',
      },
    })),
    EVENTS_PER_BATCH,
  );
}

/** The workload's BlockRemoved events as engine payloads. */
export function removedPayloads(removed: readonly RemovedEvent[]): Payload[] {
  return encodeBatches(
    removed.map((e) => ({ worker: e.worker, event: { type: 'BlockRemoved' as const, blockHashes: [...e.hashes], medium: 'GPU' } })),
    EVENTS_PER_BATCH,
  );
}

/** What the reference needs: the decoded batch (the TypeScript path the router had before). */
export function decodeOrThrow(bytes: Uint8Array) {
  const d = decodeEventBatch(bytes);
  if (!d.ok) throw d.error;
  return d.batch;
}

/** One batch of `n` chained stored events of one block each. */
export function chainPayload(n: number, blockSize: number): Buffer {
  const events: EncodableKvEvent[] = Array.from({ length: n }, (_, i) => ({
    type: 'BlockStored',
    blockHashes: [BigInt(i + 1)],
    parentBlockHash: i === 0 ? null : BigInt(i),
    tokenIds: Array.from({ length: blockSize }, (_, t) => (i * 7919 + t * 104_729) % 150_000),
    blockSize,
    loraName: null,
    medium: 'GPU',
  }));
  return Buffer.from(new KvEventBatchEncoder('array').encode(1_700_000_000, events, 0));
}

/**
 * The longest the event loop went without a turn while `run` (sync or async) ran, in ms: a
 * setImmediate ticker records the gaps between its turns.
 */
export async function worstStallMs(run: () => unknown): Promise<number> {
  let worst = 0;
  let last = performance.now();
  let running = true;
  const tick = () => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
    if (running) setImmediate(tick);
  };
  await new Promise((r) => setImmediate(r));
  last = performance.now();
  setImmediate(tick);
  await run();
  await new Promise((r) => setImmediate(r));
  running = false;
  return Math.max(worst, performance.now() - last);
}
