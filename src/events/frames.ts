// ZeroMQ framing of KV events (PROTOCOLS.md section 2): live messages are
// [topic (utf-8, may be empty), seq (8 bytes big-endian u64), msgpack payload]; the replay service
// answers [seq, payload] (older vLLM) or [topic, seq, payload] (newer), ending with seq
// 0xFFFFFFFFFFFFFFFF and an empty payload. Parsing returns errors as values, never throws.

export const SEQ_BYTES = 8;
/** The sequence number that ends a replay. */
export const END_OF_REPLAY_SEQ = 0xffff_ffff_ffff_ffffn;

export class FrameError extends Error {
  override name = 'FrameError';
  readonly code = 'kv_event_frame_error';
}

export interface EventMessage {
  topic: string;
  seq: bigint;
  payload: Buffer;
}

export type FrameResult<T> = { ok: true; value: T } | { ok: false; error: FrameError };

const utf8 = new TextDecoder('utf-8');

export function parseEventMessage(frames: readonly Buffer[]): FrameResult<EventMessage> {
  if (frames.length !== 3) return failed(`a KV event message has 3 frames [topic, seq, payload], got ${frames.length}`);
  const [topic, seq, payload] = frames;
  if (seq.length !== SEQ_BYTES) return failed(`the sequence frame must be ${SEQ_BYTES} bytes, got ${seq.length}`);
  return { ok: true, value: { topic: utf8.decode(topic), seq: seq.readBigUInt64BE(0), payload } };
}

export interface ReplayReply {
  seq: bigint;
  payload: Buffer;
  /** The end-of-replay marker (no batch). */
  end: boolean;
}

/**
 * A reply as a DEALER receives it. The ROUTER answers [identity, "", seq, payload] (older vLLM) or
 * [identity, "", topic, seq, payload] (newer); ZeroMQ strips the identity, so the DEALER sees 3 or
 * 4 frames, a REQ socket (which also strips the delimiter) 2 or 3. In every form the last two
 * frames are seq and payload, and what comes before them (empty delimiter, topic) is not needed.
 */
export function parseReplayReply(frames: readonly Buffer[]): FrameResult<ReplayReply> {
  if (frames.length < 2 || frames.length > 4) {
    return failed(`a replay reply has 2 to 4 frames ([delimiter,] [topic,] seq, payload), got ${frames.length}`);
  }
  if (frames.length === 4 && frames[0].length !== 0) return failed('a 4-frame replay reply must start with an empty delimiter');
  const seqFrame = frames[frames.length - 2];
  const payload = frames[frames.length - 1];
  if (seqFrame.length !== SEQ_BYTES) return failed(`the sequence frame must be ${SEQ_BYTES} bytes, got ${seqFrame.length}`);
  const seq = seqFrame.readBigUInt64BE(0);
  return { ok: true, value: { seq, payload, end: seq === END_OF_REPLAY_SEQ && payload.length === 0 } };
}

/** What a DEALER sends to ask for every buffered batch from `startSeq` on: ["", seq BE]. */
export function replayRequestFrames(startSeq: bigint): Buffer[] {
  return [Buffer.alloc(0), encodeSeq(startSeq)];
}

export function encodeSeq(seq: bigint): Buffer {
  if (seq < 0n || seq > END_OF_REPLAY_SEQ) throw new RangeError(`a sequence number must fit in 64 unsigned bits, got ${seq}`);
  const b = Buffer.allocUnsafe(SEQ_BYTES);
  b.writeBigUInt64BE(seq, 0);
  return b;
}

function failed<T>(message: string): FrameResult<T> {
  return { ok: false, error: new FrameError(message) };
}
