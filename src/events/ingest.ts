// EventIngest: KV event ingestion for one index (one routing pool). Each worker gets one ZeroMQ
// subscription per dp rank; what they receive is applied to the index under (worker, dpRank),
// where dpRank is the position of the endpoint in the worker's list (as Dynamo does, the endpoint
// decides the rank; a rank inside the payload is not trusted over it).
import { BatchApplier, type IndexerPort } from './apply.js';
import { addCounters, newCounters, type IngestCounters } from './counters.js';
import { EventSubscriber, type SubscriberState } from './subscriber.js';
import type { IngestIncident } from './incidents.js';
import { describe, expectBlockSize, expectDpRank, expectInteger, expectWorkerId } from '../util/validate.js';

export interface EventIngestOptions {
  /** The index events are applied to (a KvIndexer in 'events' mode). */
  indexer: IndexerPort;
  /** A replay must complete within this (default 5,000 ms); past it the worker's index is cleared. */
  replayTimeoutMs?: number;
  /** Received messages waiting to be applied, per subscription (default 4,096). */
  queueLimit?: number;
  /** Events applied between two yields to the event loop (default 512). */
  eventsPerSlice?: number;
  /** ZeroMQ's receive queue per subscription, in messages (default 100,000). */
  receiveHighWaterMark?: number;
  /** Largest accepted message in bytes (default 64 MiB). */
  maxMessageBytes?: number;
  /** Unexpected failures of the background loops (default: printed to stderr). */
  onError?: (err: unknown, worker: number) => void;
  /** Gaps, replays, engine restarts and cleared indexes as they happen (default: not reported). */
  onIncident?: (incident: IngestIncident) => void;
}

export interface IngestWorkerSpec {
  worker: number;
  /** The KV event PUB endpoint of each dp rank (index = rank). */
  endpoints: string[];
  /**
   * With one endpoint and dpSize > 1: rank r publishes on the endpoint's port + r (vLLM's layout),
   * and so does the replay endpoint.
   */
  dpSize?: number;
  /** The replay ROUTER endpoint of each dp rank; absent: gaps clear the worker's index. */
  replayEndpoints?: string[];
  /** Topic prefix (default '': every message on the endpoint). */
  topic?: string;
  /** The engine's block size, checked against the index's (they must be equal). */
  blockSize?: number;
  /**
   * Per dp rank, the last sequence number the index already holds (a restored snapshot; null:
   * nothing): that rank replays what came after it at once instead of joining from 0.
   */
  resumeAfter?: ReadonlyArray<bigint | null>;
}

export interface WorkerIngestStats extends IngestCounters {
  worker: number;
  ranks: SubscriberState[];
}

const ENDPOINT = /^(tcp|ipc|inproc):\/\/\S+$/;
const MAX_DP_SIZE = 0x10000;

export class EventIngest {
  private readonly applier: BatchApplier;
  private readonly workers = new Map<number, { subscribers: EventSubscriber[]; counters: IngestCounters[] }>();
  private readonly retired: Array<Promise<void>> = [];
  private readonly config: Required<Omit<EventIngestOptions, 'indexer' | 'onError' | 'onIncident'>>;
  private readonly onError: (err: unknown, worker: number) => void;
  private readonly onIncident?: (incident: IngestIncident) => void;
  private closed = false;

  constructor(opts: EventIngestOptions) {
    if (typeof opts !== 'object' || opts === null) throw new TypeError(`options must be an object, got ${describe(opts)}`);
    const { indexer } = opts;
    if (typeof indexer !== 'object' || indexer === null || typeof indexer.applyEventBatch !== 'function') {
      throw new TypeError(`indexer must be a KvIndexer, got ${describe(indexer)}`);
    }
    if (indexer.mode !== undefined && indexer.mode !== 'events') {
      throw new RangeError(`KV events need an indexer in 'events' mode, got '${indexer.mode}'`);
    }
    this.applier = new BatchApplier(indexer);
    this.config = {
      replayTimeoutMs: expectInteger(opts.replayTimeoutMs ?? 5_000, 'replayTimeoutMs', 1, 3_600_000),
      queueLimit: expectInteger(opts.queueLimit ?? 4_096, 'queueLimit', 1, 1 << 24),
      eventsPerSlice: expectInteger(opts.eventsPerSlice ?? 512, 'eventsPerSlice', 1, 1 << 24),
      receiveHighWaterMark: expectInteger(opts.receiveHighWaterMark ?? 100_000, 'receiveHighWaterMark', 1, 1 << 30),
      maxMessageBytes: expectInteger(opts.maxMessageBytes ?? 64 << 20, 'maxMessageBytes', 1024, 2 ** 31 - 1),
    };
    if (opts.onError !== undefined && typeof opts.onError !== 'function') throw new TypeError(`onError must be a function, got ${describe(opts.onError)}`);
    if (opts.onIncident !== undefined && typeof opts.onIncident !== 'function')
      throw new TypeError(`onIncident must be a function, got ${describe(opts.onIncident)}`);
    this.onIncident = opts.onIncident;
    this.onError = opts.onError ?? ((err, worker) => console.error(`kvroute: KV event ingestion for worker ${worker} failed:`, err));
  }

  /** Subscribes to a worker's KV events (one socket per dp rank). */
  addWorker(spec: IngestWorkerSpec): void {
    if (this.closed) throw new Error('EventIngest is closed');
    if (typeof spec !== 'object' || spec === null) throw new TypeError(`spec must be an object, got ${describe(spec)}`);
    const worker = expectWorkerId(spec.worker, 'spec.worker');
    if (this.workers.has(worker)) throw new RangeError(`worker ${worker} is already subscribed`);
    const dpSize = spec.dpSize === undefined ? undefined : expectInteger(spec.dpSize, 'spec.dpSize', 1, MAX_DP_SIZE);
    const endpoints = endpointsPerRank(spec.endpoints, 'spec.endpoints', dpSize);
    if (endpoints.length === 0) throw new RangeError('spec.endpoints must list at least one endpoint');
    expectDpRank(endpoints.length - 1, 'the highest dp rank');
    const replayEndpoints =
      spec.replayEndpoints === undefined || (Array.isArray(spec.replayEndpoints) && spec.replayEndpoints.length === 0)
        ? []
        : endpointsPerRank(spec.replayEndpoints, 'spec.replayEndpoints', endpoints.length);
    const topic = spec.topic ?? '';
    if (typeof topic !== 'string') throw new TypeError(`spec.topic must be a string, got ${describe(topic)}`);
    if (spec.blockSize !== undefined) {
      const blockSize = expectBlockSize(spec.blockSize, 'spec.blockSize');
      if (blockSize !== this.applier.indexer.blockSize) {
        throw new RangeError(`worker ${worker} uses block size ${blockSize} but the index uses ${this.applier.indexer.blockSize}: they must be equal`);
      }
    }

    const resumeAfter = spec.resumeAfter ?? [];
    if (!Array.isArray(resumeAfter)) throw new TypeError(`spec.resumeAfter must be an array, got ${describe(resumeAfter)}`);
    resumeAfter.forEach((seq, i) => {
      if (seq !== null && (typeof seq !== 'bigint' || seq < 0n))
        throw new TypeError(`spec.resumeAfter[${i}] must be a non-negative bigint or null, got ${describe(seq)}`);
    });

    const subscribers: EventSubscriber[] = [];
    const counters: IngestCounters[] = [];
    try {
      endpoints.forEach((endpoint, dpRank) => {
        const c = newCounters();
        subscribers.push(
          new EventSubscriber({
            worker,
            dpRank,
            endpoint,
            replayEndpoint: replayEndpoints[dpRank],
            resumeAfter: resumeAfter[dpRank] ?? undefined,
            topic,
            applier: this.applier,
            counters: c,
            ...this.config,
            onError: (err) => this.onError(err, worker),
            onIncident: this.onIncident,
          }),
        );
        counters.push(c);
      });
    } catch (err) {
      for (const s of subscribers) this.retired.push(s.close());
      throw err;
    }
    this.workers.set(worker, { subscribers, counters });
  }

  /** Closes the worker's subscriptions and drops every block the index holds for it. */
  removeWorker(worker: number): boolean {
    expectWorkerId(worker);
    const entry = this.workers.get(worker);
    if (!entry) return false;
    this.workers.delete(worker);
    // close() stops the loops synchronously (nothing applies after it); the promise only
    // settles their teardown.
    for (const s of entry.subscribers) this.retired.push(s.close());
    this.applier.indexer.removeWorker(worker);
    return true;
  }

  hasWorker(worker: number): boolean {
    return this.workers.has(worker);
  }

  /**
   * Every rank's index is known to follow the engine process now publishing (joined and not
   * disconnected since, or proven again by the probe after a reconnect); false for an unknown worker.
   */
  continuous(worker: number): boolean {
    const entry = this.workers.get(worker);
    return entry !== undefined && entry.subscribers.every((s) => s.state().continuous);
  }

  /**
   * The engine may have restarted unseen (it was unreachable, its start time changed): clears the
   * worker's blocks at once and rebuilds each rank from its replay buffer. False for an unknown worker.
   */
  resync(worker: number, reason: string): boolean {
    expectWorkerId(worker);
    const entry = this.workers.get(worker);
    if (!entry) return false;
    for (const s of entry.subscribers) s.resync(reason);
    return true;
  }

  /** Per-worker counters (summed over dp ranks) and the state of each rank's subscription. */
  stats(): WorkerIngestStats[] {
    return [...this.workers].map(([worker, { subscribers, counters }]) => {
      const total = counters.reduce((sum, c) => addCounters(sum, c), newCounters());
      return { worker, ...total, ranks: subscribers.map((s) => s.state()) };
    });
  }

  /**
   * Resolves once every rank of `worker` subscribed with `resumeAfter` has finished catching up
   * from its replay buffer (or failed to, or was removed); at once for an unknown worker.
   */
  async caughtUp(worker: number): Promise<void> {
    await Promise.all(this.workers.get(worker)?.subscribers.map((s) => s.caughtUp) ?? []);
  }

  /**
   * Resolves once every rank of `worker` is subscribed and has probed its engine's replay buffer for
   * what it published before the subscription took effect; at once for an unknown worker. Never
   * settles for an engine that cannot be reached: race it with a timeout.
   */
  async joined(worker: number): Promise<void> {
    await Promise.all(this.workers.get(worker)?.subscribers.map((s) => s.joined) ?? []);
  }

  /** Resolves when every message received so far has been applied (tests, orderly shutdown). */
  async idle(): Promise<void> {
    await Promise.all([...this.workers.values()].flatMap((w) => w.subscribers.map((s) => s.idle())));
  }

  /** Closes every subscription (the index keeps its blocks). */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.workers.values()].flatMap((w) => w.subscribers.map((s) => s.close()));
    this.workers.clear();
    await Promise.all([...all, ...this.retired]);
    this.retired.length = 0;
  }
}

/**
 * An endpoint list with one entry per dp rank. Without `dpSize` the list is taken as it is; with
 * it, a single tcp endpoint expands to port + rank, and any other length must equal it.
 */
export function endpointsPerRank(value: unknown, name: string, dpSize?: number): string[] {
  if (!Array.isArray(value)) throw new TypeError(`${name} must be an array of endpoint strings, got ${describe(value)}`);
  for (const [i, e] of value.entries()) {
    if (typeof e !== 'string') throw new TypeError(`${name}[${i}] must be a string, got ${describe(e)}`);
    if (!ENDPOINT.test(e)) throw new RangeError(`${name}[${i}] must be a ZeroMQ endpoint like tcp://host:port, got '${e}'`);
  }
  if (dpSize === undefined || value.length === dpSize) return [...(value as string[])];
  if (value.length !== 1) throw new RangeError(`${name} lists ${value.length} endpoints for ${dpSize} dp ranks`);
  return Array.from({ length: dpSize }, (_, rank) => endpointForRank(value[0] as string, rank, name));
}

/** vLLM's data-parallel layout: rank r uses the base port + r. */
export function endpointForRank(endpoint: string, rank: number, name = 'endpoint'): string {
  const m = /^tcp:\/\/(.+):(\d+)$/.exec(endpoint);
  if (!m) throw new RangeError(`${name}: only a tcp://host:port endpoint can be expanded per dp rank, got '${endpoint}'`);
  const port = Number(m[2]) + rank;
  if (port > 65535) throw new RangeError(`${name}: port ${m[2]} + dp rank ${rank} exceeds 65535`);
  return `tcp://${m[1]}:${port}`;
}
