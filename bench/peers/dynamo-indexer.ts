// The Dynamo indexer peer: the small crate in bench/peers/dynamo-indexer/ (dynamo-kv-router
// 1.6.1 from crates.io, pinned by its committed Cargo.lock), built in release mode on demand into
// bench/.cache/peers/, and driven as a child process over a line protocol (one command per stdin
// line, one JSON line back), so that its rounds alternate with kvroute's in this process.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { stopProcess } from '../lib/stop-process.js';
import { cachePath, runStep } from './cache.js';

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
  private readonly lines: AsyncIterator<string>;
  private stderr = '';
  /** How the process ended (its stdio closed), for the error when it ends unasked. */
  private readonly ended: Promise<string>;

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    this.ended = new Promise((resolve) => child.once('close', (code, signal) => resolve(signal ?? `exit code ${code}`)));
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (s: string) => {
      this.stderr = (this.stderr + s).slice(-4000);
    });
    this.lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  }

  /** Starts the peer on a workload file; resolves once it loaded it and checked its hashes. */
  static async start(binary: string, workloadFile: string): Promise<{ peer: DynamoIndexer; ready: DynamoReady }> {
    const child = spawn(binary, [workloadFile], { stdio: ['pipe', 'pipe', 'pipe'] });
    const peer = new DynamoIndexer(child);
    const started = new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (err) => reject(new Error(`cannot start the Dynamo peer ${binary}: ${err.message}`)));
    });
    await started;
    const ready = await peer.next<DynamoReady>('ready');
    return { peer, ready };
  }

  build = () => this.command<DynamoBuilt>('build', 'built');
  remove = () => this.command<DynamoRemoved>('remove', 'removed');
  scores = () => this.command<DynamoScores>('scores', 'scores');
  latency = (samples: number, round: number) => this.command<DynamoLatency>(`latency ${samples} ${round}`, 'latency');
  hash = (samples: number) => this.command<DynamoHash>(`hash ${samples}`, 'hash');

  close(): Promise<void> {
    // Dropping the indexers (a million blocks, four threads) takes a moment.
    return stopProcess(this.child, () => this.child.stdin.end('quit\n'), 10_000);
  }

  private async command<T>(line: string, type: string): Promise<T> {
    this.child.stdin.write(`${line}\n`);
    return this.next<T>(type);
  }

  private async next<T>(type: string): Promise<T> {
    const r = await this.lines.next();
    if (r.done) throw new Error(`the Dynamo peer ended (${await this.ended}) before answering: ${this.stderr.trim() || 'no output'}`);
    const reply = JSON.parse(r.value) as { type: string; error?: string };
    if (reply.type === 'error') throw new Error(`the Dynamo peer refused a command: ${reply.error}`);
    if (reply.type !== type) throw new Error(`the Dynamo peer answered ${reply.type}, expected ${type}`);
    return reply as T;
  }
}
