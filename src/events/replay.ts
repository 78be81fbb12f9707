// Client of an engine's replay service (PROTOCOLS.md section 2): a DEALER sends
// ["", start_seq (8 bytes BE)] to the engine's ROUTER and reads one reply per buffered batch with
// seq >= start_seq, then the end marker. Replies stream to the caller as they arrive (a replay can
// be thousands of batches). Each replay uses a fresh socket, so a late reply to an abandoned replay
// can never be mistaken for an answer to the next one.
import * as zmq from 'zeromq';
import { parseReplayReply, replayRequestFrames } from './frames.js';

export class ReplayError extends Error {
  override name = 'ReplayError';
}

export interface ReplayOptions {
  /** The whole replay, from request to end marker, must finish within this. */
  timeoutMs: number;
  /** Refuse replies beyond this many batches (an engine keeps 10,000 by default). */
  maxBatches?: number;
  /** Aborts the replay (the socket is closed and the iteration ends with a ReplayError). */
  signal?: AbortSignal;
}

export interface ReplayedBatch {
  seq: bigint;
  payload: Buffer;
}

const DEFAULT_MAX_BATCHES = 1_000_000;

/**
 * Yields every replayed batch in the order the engine sends them; returns after the end marker.
 * Throws ReplayError on timeout, abort or a malformed reply.
 */
export async function* replayBatches(endpoint: string, startSeq: bigint, opts: ReplayOptions): AsyncGenerator<ReplayedBatch, void, void> {
  const deadline = Date.now() + opts.timeoutMs;
  const maxBatches = opts.maxBatches ?? DEFAULT_MAX_BATCHES;
  const dealer = new zmq.Dealer({ linger: 0 });
  const onAbort = () => dealer.close();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    if (opts.signal?.aborted) throw new ReplayError('replay aborted');
    try {
      dealer.connect(endpoint);
    } catch (err) {
      throw new ReplayError(`cannot connect to the replay endpoint ${endpoint}: ${(err as Error).message}`);
    }
    dealer.sendTimeout = remaining(deadline);
    await io(() => dealer.send(replayRequestFrames(startSeq)), endpoint, opts.signal);
    for (let count = 0; ; count++) {
      dealer.receiveTimeout = remaining(deadline);
      const frames = await io(() => dealer.receive(), endpoint, opts.signal);
      const reply = parseReplayReply(frames);
      if (!reply.ok) throw new ReplayError(`bad reply from ${endpoint}: ${reply.error.message}`);
      if (reply.value.end) return;
      if (count >= maxBatches) throw new ReplayError(`replay from ${endpoint} exceeds ${maxBatches} batches`);
      yield { seq: reply.value.seq, payload: reply.value.payload };
    }
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
    dealer.close();
  }
}

/** At least 1 ms: zeromq reads 0 as "do not wait at all" and -1 as "forever". */
function remaining(deadline: number): number {
  return Math.max(1, deadline - Date.now());
}

async function io<T>(op: () => Promise<T>, endpoint: string, signal?: AbortSignal): Promise<T> {
  try {
    return await op();
  } catch (err) {
    if (signal?.aborted) throw new ReplayError('replay aborted');
    const code = (err as { code?: string }).code;
    if (code === 'EAGAIN') throw new ReplayError(`replay from ${endpoint} timed out`);
    throw new ReplayError(`replay from ${endpoint} failed: ${(err as Error).message}`);
  }
}
