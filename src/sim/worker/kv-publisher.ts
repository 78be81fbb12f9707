// Publishes engine steps' KV events as vLLM's ZmqEventPublisher does: a PUB socket, one message per
// batch of 3 frames [topic, seq (8 bytes big-endian, from 0), msgpack payload], and every batch kept
// in the replay buffer. Fault injection can drop batches from the wire (they still consume a
// sequence number and stay in the replay buffer, so a subscriber sees a gap it can repair).
import * as zmq from 'zeromq';
import { KvEventBatchEncoder, type EncodableKvEvent, type EventEncoding } from './kv-event-encoding.js';
import { ReplayBuffer } from './replay-buffer.js';

export interface KvPublisherOptions {
  host: string;
  port: number;
  topic: string;
  encoding: EventEncoding;
  replayBufferSteps: number;
  dpRank?: number;
  /** Wall clock in ms, for the batch timestamp. */
  clock?: () => number;
}

export class KvEventPublisher {
  readonly endpoint: string;
  readonly buffer: ReplayBuffer;
  private readonly topicFrame: Buffer;
  private readonly encoder: KvEventBatchEncoder;
  private readonly dpRank: number;
  private readonly clock: () => number;
  private nextSeq = 0;
  private dropRemaining = 0;
  private readonly queue: Buffer[][] = [];
  private pumping = false;
  private closed = false;
  private stats = { published: 0, dropped: 0, sendErrors: 0 };

  private constructor(
    private readonly socket: zmq.Publisher,
    opts: KvPublisherOptions,
  ) {
    this.endpoint = socket.lastEndpoint as string;
    this.topicFrame = Buffer.from(opts.topic, 'utf8');
    this.encoder = new KvEventBatchEncoder(opts.encoding);
    this.buffer = new ReplayBuffer(opts.replayBufferSteps);
    this.dpRank = opts.dpRank ?? 0;
    this.clock = opts.clock ?? Date.now;
  }

  static async open(opts: KvPublisherOptions): Promise<KvEventPublisher> {
    if (typeof opts.topic !== 'string') throw new TypeError(`topic must be a string, got ${typeof opts.topic}`);
    // Construct the encoder and buffer first: bad options fail before a port is taken.
    new KvEventBatchEncoder(opts.encoding);
    new ReplayBuffer(opts.replayBufferSteps);
    // A high water mark well above a burst of steps: a slow subscriber loses batches (and sees a
    // gap) only when it is really far behind.
    const socket = new zmq.Publisher({ linger: 0, sendHighWaterMark: 100_000 });
    try {
      await socket.bind(`tcp://${opts.host}:${opts.port === 0 ? '*' : opts.port}`);
    } catch (err) {
      socket.close();
      throw new Error(`cannot bind the KV event publisher on ${opts.host}:${opts.port}: ${(err as Error).message}`);
    }
    return new KvEventPublisher(socket, opts);
  }

  /** The sequence number the next batch will carry. */
  get seq(): number {
    return this.nextSeq;
  }

  /** Publishes one batch (nothing for an empty list); returns its sequence number or -1. */
  publish(events: readonly EncodableKvEvent[]): number {
    if (this.closed || events.length === 0) return -1;
    const payload = this.encoder.encode(this.clock() / 1000, events, this.dpRank);
    const seq = this.nextSeq++;
    this.buffer.push(seq, payload);
    if (this.dropRemaining > 0) {
      this.dropRemaining--;
      this.stats.dropped++;
      return seq;
    }
    const seqFrame = Buffer.allocUnsafe(8);
    seqFrame.writeBigUInt64BE(BigInt(seq));
    this.enqueue([this.topicFrame, seqFrame, payload]);
    this.stats.published++;
    return seq;
  }

  /** Fault: the next n batches never reach subscribers (a sequence gap). */
  dropNext(n: number): void {
    this.dropRemaining += n;
  }

  /** As after an engine restart: sequence numbers start again from 0, the replay buffer is empty. */
  restart(): void {
    this.nextSeq = 0;
    this.dropRemaining = 0;
    this.buffer.clear();
  }

  counters(): { published: number; dropped: number; sendErrors: number } {
    return { ...this.stats };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.queue.length = 0;
    this.socket.close();
  }

  // zeromq allows one pending send per socket: batches wait their turn here.
  private enqueue(frames: Buffer[]): void {
    this.queue.push(frames);
    if (!this.pumping) void this.pump();
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      while (this.queue.length > 0 && !this.closed) {
        const frames = this.queue.shift() as Buffer[];
        try {
          await this.socket.send(frames);
        } catch {
          if (!this.closed) this.stats.sendErrors++;
        }
      }
    } finally {
      this.pumping = false;
    }
  }
}
