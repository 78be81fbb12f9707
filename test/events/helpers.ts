// A scripted engine for ingestion tests: a ZeroMQ PUB socket publishing KV event batches with
// sequence numbers, and a replay ROUTER serving its buffer, both on 127.0.0.1 ephemeral ports.
// Batches can be dropped from the wire (they stay in the buffer, as when a subscriber misses them),
// the buffer can be short (old gaps), and the engine can restart (numbering from 0 again).
import { afterEach } from 'vitest';
import * as zmq from 'zeromq';
import { KvEventBatchEncoder, type EncodableKvEvent, type EventEncoding } from '../../src/sim/worker/kv-event-encoding.js';
import type { EventIngest, WorkerIngestStats } from '../../src/events/ingest.js';

const EMPTY = Buffer.alloc(0);
const END = Buffer.from('ffffffffffffffff', 'hex');

export interface TestEngineOptions {
  topic?: string;
  encoding?: EventEncoding;
  /** Batches kept for replay (default: all). */
  bufferSize?: number;
  /** Serve replays (default true); 'silent' binds a ROUTER that never answers. */
  replay?: boolean | 'silent';
  /** Reply frames: 'older' [seq, payload] or 'newer' [topic, seq, payload] (after the delimiter). */
  replyFormat?: 'older' | 'newer';
  dpRank?: number;
  /** Bind these endpoints instead of ephemeral ports (a process restarted on its address). */
  endpoints?: { pub: string; replay?: string };
}

export class TestEngine {
  readonly endpoint: string;
  readonly replayEndpoint: string | undefined;
  readonly topic: string;
  replayRequests: bigint[] = [];
  /** Subscriber connections that closed on the PUB socket (ZMQ_EVENT_DISCONNECTED). */
  disconnects = 0;
  /** When set, replay requests are read and never answered. */
  silent: boolean;
  /** While set, replay answers wait for this promise. */
  hold: Promise<void> | null = null;
  private seq = 0n;
  private buffer: Array<{ seq: bigint; payload: Buffer }> = [];
  private readonly encoder: KvEventBatchEncoder;
  private sending: Promise<unknown> = Promise.resolve();
  private readonly serving: Promise<void>;

  private constructor(
    private pub: zmq.Publisher,
    private readonly router: zmq.Router | undefined,
    private readonly opts: TestEngineOptions,
  ) {
    this.endpoint = pub.lastEndpoint as string;
    this.replayEndpoint = router?.lastEndpoint ?? undefined;
    this.topic = opts.topic ?? 'kv-events';
    this.encoder = new KvEventBatchEncoder(opts.encoding ?? 'map');
    this.silent = opts.replay === 'silent';
    this.serving = router ? this.serveReplays(router) : Promise.resolve();
    pub.events.on('disconnect', () => this.disconnects++);
  }

  static async start(opts: TestEngineOptions = {}): Promise<TestEngine> {
    const pub = new zmq.Publisher({ linger: 0 });
    await bindRetrying(pub, opts.endpoints?.pub ?? 'tcp://127.0.0.1:*');
    let router: zmq.Router | undefined;
    if (opts.replay !== false) {
      router = new zmq.Router({ linger: 0 });
      await bindRetrying(router, opts.endpoints?.replay ?? 'tcp://127.0.0.1:*');
    }
    return new TestEngine(pub, router, opts);
  }

  /**
   * As the engine process killed and started again on the same address: this one's sockets close
   * (subscribers see the connection drop), a new one binds the same endpoints with numbering from
   * 0 and an empty buffer.
   */
  async relaunch(): Promise<TestEngine> {
    await this.close();
    return TestEngine.start({ ...this.opts, endpoints: { pub: this.endpoint, replay: this.replayEndpoint } });
  }

  /**
   * The same process, its PUB connection dropped and taken again (a network blip): subscribers
   * reconnect; numbering and buffer go on.
   */
  async rebindPublisher(): Promise<void> {
    await this.sending;
    this.pub.close();
    const pub = new zmq.Publisher({ linger: 0 });
    await bindRetrying(pub, this.endpoint);
    this.pub = pub;
  }

  get nextSeq(): bigint {
    return this.seq;
  }

  /** Publishes one batch (or only buffers it with `drop`); returns its sequence number. */
  async publish(events: readonly EncodableKvEvent[], opts: { drop?: boolean } = {}): Promise<bigint> {
    return this.publishPayload(this.encoder.encode(Date.now() / 1000, events, this.opts.dpRank ?? 0), opts);
  }

  /** Publishes arbitrary payload bytes as the next batch. */
  async publishPayload(payload: Buffer, opts: { drop?: boolean } = {}): Promise<bigint> {
    const seq = this.seq++;
    this.buffer.push({ seq, payload });
    const limit = this.opts.bufferSize ?? Infinity;
    while (this.buffer.length > limit) this.buffer.shift();
    if (!opts.drop) await this.sendRaw([Buffer.from(this.topic), seqFrame(seq), payload]);
    return seq;
  }

  /** Sends frames as they are (malformed messages). */
  async sendRaw(frames: Buffer[]): Promise<void> {
    const send = this.sending.then(() => this.pub.send(frames));
    this.sending = send.catch(() => undefined);
    await send;
  }

  /** Forgets the replay buffer (as if every batch had aged out of it). */
  forgetBuffer(): void {
    this.buffer = [];
  }

  /** As a restarted engine process: numbering from 0, empty replay buffer. */
  restart(): void {
    this.seq = 0n;
    this.buffer = [];
  }

  async close(): Promise<void> {
    this.pub.close();
    this.router?.close();
    await this.serving;
  }

  private async serveReplays(router: zmq.Router): Promise<void> {
    for (;;) {
      let frames: Buffer[];
      try {
        frames = await router.receive();
      } catch {
        return; // closed
      }
      const [identity, , start] = frames;
      const startSeq = start.readBigUInt64BE(0);
      this.replayRequests.push(startSeq);
      if (this.silent) continue;
      if (this.hold) await this.hold;
      const head = this.opts.replyFormat === 'newer' ? [identity, EMPTY, Buffer.from(this.topic)] : [identity, EMPTY];
      try {
        for (const b of this.buffer.filter((x) => x.seq >= startSeq)) await router.send([...head, seqFrame(b.seq), b.payload]);
        await router.send([...head, END, EMPTY]);
      } catch {
        return;
      }
    }
  }
}

/** Binds, retrying while a socket just closed still holds the address. */
async function bindRetrying(socket: zmq.Socket, endpoint: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await socket.bind(endpoint);
    } catch (err) {
      if (attempt >= 100) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

export function seqFrame(seq: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(seq);
  return b;
}

/** Polls `cond` until it holds (generous deadline: the machine is shared). */
export async function waitFor(cond: () => boolean, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export function workerStats(ingest: EventIngest, worker: number): WorkerIngestStats {
  const s = ingest.stats().find((w) => w.worker === worker);
  if (!s) throw new Error(`no stats for worker ${worker}`);
  return s;
}

/**
 * Waits out ZeroMQ's slow joiner: publishes empty batches until the subscriber has applied one,
 * then until it has caught up with all of them. Returns the worker's counters at that point, so
 * tests can assert on what happens next (the first batches seen may have been a join gap).
 */
export async function warmUp(engine: TestEngine, ingest: EventIngest, worker: number): Promise<WorkerIngestStats> {
  const deadline = Date.now() + 15_000;
  // The join probe first: a probe running later would repair the gaps a test makes on purpose.
  await withDeadline(ingest.joined(worker), deadline, `worker ${worker} to join ${engine.endpoint}`);
  while (workerStats(ingest, worker).batches === 0) {
    if (Date.now() > deadline) throw new Error(`worker ${worker} never received a batch from ${engine.endpoint}`);
    await engine.publish([]);
    await new Promise((r) => setTimeout(r, 20));
  }
  await caughtUp(engine, ingest, worker);
  return workerStats(ingest, worker);
}

/** `promise`, or an error naming `what` once `deadline` (ms since the epoch) has passed. */
export async function withDeadline<T>(promise: Promise<T>, deadline: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), Math.max(0, deadline - Date.now()))),
  );
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits until the worker's subscription for `dpRank` has applied everything the engine sent. */
export async function caughtUp(engine: TestEngine, ingest: EventIngest, worker: number, dpRank = 0): Promise<void> {
  const last = engine.nextSeq - 1n;
  await waitFor(() => {
    const rank = workerStats(ingest, worker).ranks[dpRank];
    return rank.lastSeq === last && rank.queued === 0 && !rank.replaying;
  }, `worker ${worker} to apply up to seq ${last}`);
  await ingest.idle();
}

export const range = (from: number, to: number): Uint32Array => Uint32Array.from({ length: to - from }, (_, i) => from + i);

/** A BlockStored event for `tokens` (complete blocks), with engine hashes base, base+1, ... */
export function storedEvent(
  tokens: Uint32Array,
  blockSize: number,
  base: bigint,
  parent: bigint | null,
  extra: Partial<EncodableKvEvent & { type: 'BlockStored' }> = {},
): EncodableKvEvent {
  const blocks = tokens.length / blockSize;
  return {
    type: 'BlockStored',
    blockHashes: Array.from({ length: blocks }, (_, i) => base + BigInt(i)),
    parentBlockHash: parent,
    tokenIds: tokens,
    blockSize,
    loraName: null,
    medium: 'GPU',
    ...extra,
  } as EncodableKvEvent;
}

/**
 * The engines and ingests a test file's tests open, all closed after each test (ingests first:
 * they hold sockets to the engines). Push what a test opens onto the arrays returned.
 */
export function closedAfterEach(): { engines: TestEngine[]; ingests: EventIngest[] } {
  const opened = { engines: [] as TestEngine[], ingests: [] as EventIngest[] };
  afterEach(async () => {
    await Promise.all(opened.ingests.splice(0).map((i) => i.close()));
    await Promise.all(opened.engines.splice(0).map((e) => e.close()));
  });
  return opened;
}
