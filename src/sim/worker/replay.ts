// The replay service of vLLM's ZmqEventPublisher: a ROUTER socket. A DEALER asks with
// ["", start_seq (8 bytes BE)] (a REQ socket sends the 8 bytes; ZeroMQ adds the delimiter), and
// gets one message [seq, payload] per buffered batch with seq >= start_seq, then the end marker
// [0xFFFFFFFFFFFFFFFF, empty payload]. A REQ socket, by ZeroMQ's rules, reads only the first.
import * as zmq from 'zeromq';
import type { ReplayBuffer } from './replay-buffer.js';

export const END_SEQ = Buffer.from('ffffffffffffffff', 'hex');
const EMPTY = Buffer.alloc(0);
/** A peer that stops reading does not stall the service longer than this per message. */
const SEND_TIMEOUT_MS = 5_000;

export class ReplayServer {
  readonly endpoint: string;
  private closed = false;
  private readonly loop: Promise<void>;
  private stats = { requests: 0, invalid: 0, batchesSent: 0, abandoned: 0 };

  private constructor(
    private readonly socket: zmq.Router,
    private readonly buffer: () => ReplayBuffer,
  ) {
    this.endpoint = socket.lastEndpoint as string;
    this.loop = this.serve();
  }

  /** `buffer` is read per request: a restarted publisher may have swapped or cleared it. */
  static async open(host: string, port: number, buffer: () => ReplayBuffer): Promise<ReplayServer> {
    // mandatory: wait at a full peer queue instead of silently dropping replayed batches.
    const socket = new zmq.Router({ linger: 0, mandatory: true, sendTimeout: SEND_TIMEOUT_MS, sendHighWaterMark: 100_000 });
    try {
      await socket.bind(`tcp://${host}:${port === 0 ? '*' : port}`);
    } catch (err) {
      socket.close();
      throw new Error(`cannot bind the KV event replay socket on ${host}:${port}: ${(err as Error).message}`);
    }
    return new ReplayServer(socket, buffer);
  }

  counters(): { requests: number; invalid: number; batchesSent: number; abandoned: number } {
    return { ...this.stats };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.socket.close();
    await this.loop;
  }

  private async serve(): Promise<void> {
    for (;;) {
      let frames: Buffer[];
      try {
        frames = await this.socket.receive();
      } catch {
        return; // closed
      }
      const request = parseRequest(frames);
      if (!request) {
        this.stats.invalid++;
        continue;
      }
      this.stats.requests++;
      await this.answer(request);
      if (this.closed) return;
    }
  }

  private async answer({ identity, delimited, startSeq }: ReplayRequest): Promise<void> {
    // Reply with the delimiter when the request had one (DEALER/REQ); a bare [id, seq] gets none.
    const head = delimited ? [identity, EMPTY] : [identity];
    const batches = this.buffer().since(startSeq);
    try {
      for (const b of batches) {
        const seqFrame = Buffer.allocUnsafe(8);
        seqFrame.writeBigUInt64BE(BigInt(b.seq));
        await this.socket.send([...head, seqFrame, b.payload]);
        this.stats.batchesSent++;
      }
      await this.socket.send([...head, END_SEQ, EMPTY]);
    } catch {
      // The peer vanished (EHOSTUNREACH) or stopped reading (timeout): give up on this request.
      if (!this.closed) this.stats.abandoned++;
    }
  }
}

interface ReplayRequest {
  identity: Buffer;
  delimited: boolean;
  startSeq: number;
}

function parseRequest(frames: Buffer[]): ReplayRequest | undefined {
  let identity: Buffer;
  let seq: Buffer;
  let delimited: boolean;
  if (frames.length === 3 && frames[1].length === 0) {
    [identity, , seq] = frames;
    delimited = true;
  } else if (frames.length === 2) {
    [identity, seq] = frames;
    delimited = false;
  } else {
    return undefined;
  }
  if (seq.length !== 8) return undefined;
  const startSeq = seq.readBigUInt64BE(0);
  // Beyond 2^53 nothing is buffered anyway; clamp so the comparison stays exact.
  return { identity, delimited, startSeq: startSeq > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(startSeq) };
}
