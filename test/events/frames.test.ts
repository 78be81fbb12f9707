import { describe, expect, it } from 'vitest';
import { END_OF_REPLAY_SEQ, FrameError, encodeSeq, parseEventMessage, parseReplayReply, replayRequestFrames } from '../../src/events/frames.js';

const seq = (n: bigint) => Buffer.from(n.toString(16).padStart(16, '0'), 'hex');
const payload = Buffer.from('93cb3ff80000000000009000', 'hex');

describe('parseEventMessage', () => {
  it('reads topic, big-endian u64 sequence and payload', () => {
    const r = parseEventMessage([Buffer.from('kv-events'), seq(0x0102030405060708n), payload]);
    expect(r).toEqual({ ok: true, value: { topic: 'kv-events', seq: 0x0102030405060708n, payload } });
  });

  it('accepts an empty topic and sequence numbers above 2^63', () => {
    const r = parseEventMessage([Buffer.alloc(0), seq(2n ** 64n - 2n), payload]);
    expect(r.ok && r.value).toMatchObject({ topic: '', seq: 2n ** 64n - 2n });
  });

  it('refuses other frame counts and sequence frames that are not 8 bytes', () => {
    for (const frames of [[payload], [seq(1n), payload], [Buffer.from('t'), seq(1n), payload, payload]]) {
      const r = parseEventMessage(frames);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error).toBeInstanceOf(FrameError);
    }
    const short = parseEventMessage([Buffer.from('t'), Buffer.from('0001', 'hex'), payload]);
    expect(!short.ok && short.error.message).toMatch(/8 bytes/);
  });
});

describe('parseReplayReply', () => {
  it('reads [seq, payload] (older vLLM, or through a REQ socket)', () => {
    expect(parseReplayReply([seq(5n), payload])).toEqual({ ok: true, value: { seq: 5n, payload, end: false } });
  });

  it('reads [topic, seq, payload] and the DEALER form ["", seq, payload]', () => {
    expect(parseReplayReply([Buffer.from('kv-events'), seq(6n), payload])).toMatchObject({ ok: true, value: { seq: 6n, end: false } });
    expect(parseReplayReply([Buffer.alloc(0), seq(7n), payload])).toMatchObject({ ok: true, value: { seq: 7n, end: false } });
  });

  it('reads the DEALER form of the newer reply ["", topic, seq, payload]', () => {
    expect(parseReplayReply([Buffer.alloc(0), Buffer.from('kv-events'), seq(8n), payload])).toMatchObject({ ok: true, value: { seq: 8n } });
    expect(parseReplayReply([Buffer.from('x'), Buffer.from('kv-events'), seq(8n), payload]).ok).toBe(false);
  });

  it('recognises the end marker only with an empty payload', () => {
    expect(parseReplayReply([Buffer.alloc(0), seq(END_OF_REPLAY_SEQ), Buffer.alloc(0)])).toMatchObject({ ok: true, value: { end: true } });
    expect(parseReplayReply([seq(END_OF_REPLAY_SEQ), payload])).toMatchObject({ ok: true, value: { end: false } });
  });

  it('refuses 1 or 5 frames and a bad sequence frame', () => {
    expect(parseReplayReply([payload]).ok).toBe(false);
    expect(parseReplayReply([payload, payload, payload, payload, payload]).ok).toBe(false);
    expect(parseReplayReply([Buffer.from('abc'), payload]).ok).toBe(false);
  });
});

describe('replay requests', () => {
  it('are ["", start_seq as 8 bytes big-endian]', () => {
    const [delimiter, start] = replayRequestFrames(258n);
    expect(delimiter.length).toBe(0);
    expect(start.toString('hex')).toBe('0000000000000102');
  });

  it('refuse sequence numbers outside u64', () => {
    expect(() => encodeSeq(-1n)).toThrow(RangeError);
    expect(() => encodeSeq(2n ** 64n)).toThrow(RangeError);
    expect(encodeSeq(END_OF_REPLAY_SEQ).toString('hex')).toBe('ffffffffffffffff');
  });
});
