// The indexer workload: 64 workers holding 8k-token documents that share 16 system prompts, the
// BlockStored events that index them (~1M (worker, block) entries at full size), the
// BlockRemoved events that evict their tails, and 8k-token queries. The indexer suite measures
// kvroute on it; the peers suite hands the very same events and queries to Dynamo's indexer
// (bench/peers/workload-file.ts), so the two are measured on one workload. The decision suite
// indexes the same documents.
import { computeBlockHashes } from '../../src/core/hashing.js';

export const BLOCK_SIZE = 16;
export const WORKERS = 64;
export const DOC_BLOCKS = 512; // a document is an 8k-token prompt
export const SYSTEM_PROMPTS = 16; // documents start with one of these shared 1k-token prefixes
export const SYSTEM_BLOCKS = 64;
export const EVENT_BLOCKS = 32; // blocks per BlockStored / BlockRemoved event
export const QUERIES = 256;
/** 34 documents per worker: 1,040,384 indexed (worker, block) entries from 32,512 events. */
export const FULL_DOCS_PER_WORKER = 34;
export const QUICK_DOCS_PER_WORKER = 8;

export interface StoredEvent {
  worker: number;
  parent: bigint | null;
  hashes: BigUint64Array;
  tokens: Uint32Array;
}

export interface RemovedEvent {
  worker: number;
  hashes: BigUint64Array;
}

/** Deterministic token stream (xorshift32), different per seed, into out[from, to). */
export function fillTokens(out: Uint32Array, seed: number, from = 0, to = out.length): void {
  let x = (seed * 2_654_435_761) >>> 0 || 1;
  for (let i = from; i < to; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = (x >>> 0) % 150_000;
  }
}

const systemOf = (doc: number) => doc % SYSTEM_PROMPTS;

/** Document `doc`'s 8k tokens: its system prompt's, then its own. */
export function documentTokens(doc: number): Uint32Array {
  const t = new Uint32Array(DOC_BLOCKS * BLOCK_SIZE);
  fillTokens(t, 1_000_003 + systemOf(doc), 0, SYSTEM_BLOCKS * BLOCK_SIZE);
  fillTokens(t, 7 + doc, SYSTEM_BLOCKS * BLOCK_SIZE);
  return t;
}

/** Engines name blocks by content: a system prompt's blocks, then each document's own. */
const systemHash = (sys: number, block: number) => BigInt(1 + sys * SYSTEM_BLOCKS + block);
const docHash = (doc: number, block: number) => BigInt(1_000_000 + doc * DOC_BLOCKS + block);

/** Worker w holds its own documents and its neighbour's: every document lives on two workers. */
function docsOf(worker: number, perWorker: number): number[] {
  const half = perWorker / 2;
  const own = (w: number) => Array.from({ length: half }, (_, j) => w * half + j);
  return [...own(worker), ...own((worker + WORKERS - 1) % WORKERS)];
}

/** Distinct documents when each worker holds `perWorker` of them. */
export const documentCount = (perWorker: number) => (WORKERS * perWorker) / 2;

/** The BlockStored events that index every worker's documents (a shared prefix only once). */
export function storedEvents(perWorker: number): StoredEvent[] {
  const events: StoredEvent[] = [];
  for (let w = 0; w < WORKERS; w++) {
    const systems = new Set<number>();
    for (const doc of docsOf(w, perWorker)) {
      const tokens = documentTokens(doc);
      const from = systems.has(systemOf(doc)) ? SYSTEM_BLOCKS : 0;
      systems.add(systemOf(doc));
      const nameOf = (b: number) => (b < SYSTEM_BLOCKS ? systemHash(systemOf(doc), b) : docHash(doc, b));
      for (let b = from; b < DOC_BLOCKS; b += EVENT_BLOCKS) {
        const hashes = new BigUint64Array(EVENT_BLOCKS);
        for (let i = 0; i < EVENT_BLOCKS; i++) hashes[i] = nameOf(b + i);
        events.push({ worker: w, parent: b === 0 ? null : nameOf(b - 1), hashes, tokens: tokens.subarray(b * BLOCK_SIZE, (b + EVENT_BLOCKS) * BLOCK_SIZE) });
      }
    }
  }
  return events;
}

/** BlockRemoved events evicting the last 64 blocks of every document copy (LRU tails). */
export function removedEvents(perWorker: number): RemovedEvent[] {
  const out: RemovedEvent[] = [];
  for (let w = 0; w < WORKERS; w++) {
    for (const doc of docsOf(w, perWorker)) {
      for (let b = DOC_BLOCKS - EVENT_BLOCKS; b >= DOC_BLOCKS - 2 * EVENT_BLOCKS; b -= EVENT_BLOCKS) {
        out.push({ worker: w, hashes: BigUint64Array.from({ length: EVENT_BLOCKS }, (_, i) => docHash(doc, b + EVENT_BLOCKS - 1 - i)) });
      }
    }
  }
  return out;
}

/** 8k-token prompts: half a cached document, a quarter diverging at half way, a quarter new after the system prompt. */
export function queryTokens(docs: number): Uint32Array[] {
  return Array.from({ length: QUERIES }, (_, q) => {
    const doc = (q * 7919) % docs;
    const t = documentTokens(doc);
    if (q % 4 === 2) fillTokens(t, 90_000_000 + q, (DOC_BLOCKS / 2) * BLOCK_SIZE);
    if (q % 4 === 3) fillTokens(t, 90_000_000 + q, SYSTEM_BLOCKS * BLOCK_SIZE);
    return t;
  });
}

/** The queries' local block hashes (what findMatches takes). */
export function queryHashes(tokens: readonly Uint32Array[]): BigUint64Array[] {
  return tokens.map((t) => computeBlockHashes(t, BLOCK_SIZE));
}
