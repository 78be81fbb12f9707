// The Dynamo indexer peer: the small crate in bench/peers/dynamo-indexer/ (dynamo-kv-router
// 1.6.1 from crates.io, pinned by its committed Cargo.lock), built in release mode on demand into
// bench/.cache/peers/, and driven as a child process over a line protocol (one command per stdin
// line, one JSON line back), so that its rounds alternate with kvroute's in this process.
import { fileURLToPath } from 'node:url';
import { cachePath, runStep } from './cache.js';
import { LinePeer } from './line-peer.js';

export const DYNAMO_CRATE = 'dynamo-kv-router';
export const DYNAMO_VERSION = '1.6.1';
const CRATE_DIR = fileURLToPath(new URL('./dynamo-indexer/', import.meta.url));
const BINARY = 'kvroute-dynamo-indexer';

/** Builds the peer (cargo keeps it up to date; a first build takes a few minutes) and returns its path. */
export async function buildDynamoIndexer(log: (line: string) => void): Promise<string> {
  const targetDir = cachePath('cargo-target');
  log(`building ${DYNAMO_CRATE} ${DYNAMO_VERSION} and its driver (cargo, release; the first build downloads from crates.io and takes minutes)`);
  await runStep('cargo', ['build', '--release', '--locked', '--quiet', '--manifest-path', `${CRATE_DIR}Cargo.toml`, '--target-dir', targetDir], {
    what: `building the Dynamo indexer peer (${DYNAMO_CRATE} ${DYNAMO_VERSION})`,
    registry: 'crates.io',
    missingHint: 'the Dynamo peer needs a Rust toolchain: https://rustup.rs',
    log,
  });
  return `${targetDir}/release/${BINARY}`;
}

export interface DynamoReady {
  type: 'ready';
  crate: string;
  event_threads: number;
  block_size: number;
  stored: number;
  removed: number;
  queries: number;
  hash_check: { blocks: number; mismatches: number };
  clock_overhead_ns: number;
}

export interface DynamoApplied {
  seconds: number;
  rejected: number;
  blocks: number;
}

export interface DynamoBuilt {
  type: 'built';
  events: number;
  radix: DynamoApplied & { heap_bytes: number };
  pool: DynamoApplied & { heap_bytes: number };
  rss_bytes: number;
}

export interface DynamoRemoved {
  type: 'removed';
  events: number;
  radix: DynamoApplied;
  pool: DynamoApplied;
}

export interface DynamoScores {
  type: 'scores';
  /** Per query, [worker, dpRank, blocks] triples flattened. */
  radix: number[][];
  pool: number[][];
}

export interface DynamoLatency {
  type: 'latency';
  radix_ns: number[];
  pool_ns: number[];
}

export interface DynamoHash {
  type: 'hash';
  tokens: number;
  ns: number[];
}

/** The running peer; one command at a time. */
export class DynamoIndexer {
  private constructor(private readonly peer: LinePeer) {}

  /** Starts the peer on a workload file; resolves once it loaded it and checked its hashes. */
  static async start(binary: string, workloadFile: string): Promise<{ peer: DynamoIndexer; ready: DynamoReady }> {
    const line = await LinePeer.start('the Dynamo peer', binary, [workloadFile]);
    return { peer: new DynamoIndexer(line), ready: await line.next<DynamoReady>('ready') };
  }

  build = () => this.peer.command<DynamoBuilt>('build', 'built');
  remove = () => this.peer.command<DynamoRemoved>('remove', 'removed');
  scores = () => this.peer.command<DynamoScores>('scores', 'scores');
  latency = (samples: number, round: number) => this.peer.command<DynamoLatency>(`latency ${samples} ${round}`, 'latency');
  hash = (samples: number) => this.peer.command<DynamoHash>(`hash ${samples}`, 'hash');
  // Dropping the indexers (a million blocks, four threads) takes a moment.
  close = () => this.peer.close(10_000);
}
