import * as zmq from 'zeromq';
import { afterEach, describe, expect, it } from 'vitest';
import { KvEventPublisher } from '../../../src/sim/worker/kv-publisher.js';
import { ReplayServer } from '../../../src/sim/worker/replay.js';
import { replayFrom, seqOf } from './zmq-helpers.js';

const stored = (h: bigint) => [
  { type: 'BlockStored' as const, blockHashes: [h], parentBlockHash: null, tokenIds: [1, 2], blockSize: 2, loraName: null, medium: 'GPU' },
];

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function publisher(replayBufferSteps: number) {
  const pub = await KvEventPublisher.open({ host: '127.0.0.1', port: 0, topic: 'kv-events', encoding: 'map', replayBufferSteps });
  open.push(pub);
  return pub;
}

describe('ReplayServer', () => {
  async function setup(capacity = 100) {
    const pub = await publisher(capacity);
    const replay = await ReplayServer.open('127.0.0.1', 0, () => pub.buffer);
    open.push(replay);
    return { pub, replay };
  }

  it('answers a DEALER with [seq, payload] per buffered batch from start_seq, then the end marker', async () => {
    const { pub, replay } = await setup();
    const payloads = [1n, 2n, 3n, 4n].map((h) => (pub.publish(stored(h)), pub.buffer.since(pub.seq - 1)[0].payload));
    const replies = await replayFrom(replay.endpoint, 1);
    expect(replies.map((m) => m.length)).toEqual([3, 3, 3, 3]);
    expect(replies.every((m) => m[0].length === 0)).toBe(true); // the delimiter frame
    expect(replies.slice(0, 3).map((m) => seqOf(m[1]))).toEqual([1, 2, 3]);
    expect(replies.slice(0, 3).map((m) => m[2])).toEqual(payloads.slice(1));
    const end = replies[3];
    expect(end[1].toString('hex')).toBe('ffffffffffffffff');
    expect(end[2]).toHaveLength(0);
  });

  it('keeps only the last replayBufferSteps batches', async () => {
    const { pub, replay } = await setup(3);
    for (let h = 0n; h < 10n; h++) pub.publish(stored(h));
    const replies = await replayFrom(replay.endpoint, 0);
    expect(replies.slice(0, -1).map((m) => seqOf(m[1]))).toEqual([7, 8, 9]);
  });

  it('answers with only the end marker when nothing is at or after start_seq', async () => {
    const { pub, replay } = await setup();
    pub.publish(stored(1n));
    const replies = await replayFrom(replay.endpoint, 5);
    expect(replies).toHaveLength(1);
    expect(replies[0][1].toString('hex')).toBe('ffffffffffffffff');
  });

  it('ignores malformed requests and keeps serving', async () => {
    const { pub, replay } = await setup();
    pub.publish(stored(1n));
    const bad = new zmq.Dealer({ linger: 0 });
    open.push(bad);
    bad.connect(replay.endpoint);
    await bad.send(['', Buffer.from('short')]);
    await bad.send(['a', 'b', 'c']);
    const replies = await replayFrom(replay.endpoint, 0);
    expect(replies).toHaveLength(2);
    expect(seqOf(replies[0][1])).toBe(0);
    expect(replies[1][1].toString('hex')).toBe('ffffffffffffffff');
    // The bad requests came over another connection: wait for both to be counted.
    const deadline = Date.now() + 10_000;
    while (replay.counters().invalid < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(replay.counters().invalid).toBe(2);
    expect(replay.counters().requests).toBe(1);
  });

  it('answers a REQ socket too (which, by ZeroMQ rules, reads the first reply)', async () => {
    const { pub, replay } = await setup();
    pub.publish(stored(1n));
    pub.publish(stored(2n));
    const req = new zmq.Request({ linger: 0 });
    open.push(req);
    req.connect(replay.endpoint);
    const start = Buffer.alloc(8);
    start.writeBigUInt64BE(1n);
    await req.send(start);
    req.receiveTimeout = 10_000;
    const [seq, payload] = await req.receive();
    expect(seqOf(seq)).toBe(1);
    expect(payload).toEqual(pub.buffer.since(1)[0].payload);
  });

  it('serves the current buffer of a restarted publisher', async () => {
    const { pub, replay } = await setup();
    pub.publish(stored(1n));
    pub.publish(stored(2n));
    pub.restart();
    pub.publish(stored(3n));
    const replies = await replayFrom(replay.endpoint, 0);
    expect(replies).toHaveLength(2);
    expect(seqOf(replies[0][1])).toBe(0);
    expect(replies[0][2]).toEqual(pub.buffer.since(0)[0].payload);
  });
});
