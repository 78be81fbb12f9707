import { Unpackr } from 'msgpackr';
import type * as zmq from 'zeromq';
import { afterEach, describe, expect, it } from 'vitest';
import { KvEventPublisher } from '../../../src/sim/worker/kv-publisher.js';
import { connectSubscriber, receiveWithin, seqOf } from './zmq-helpers.js';

const unpackr = new Unpackr({ useRecords: false, int64AsType: 'bigint', mapsAsObjects: true });
const cleared = [{ type: 'AllBlocksCleared' as const }];
const stored = (h: bigint) => [
  { type: 'BlockStored' as const, blockHashes: [h], parentBlockHash: null, tokenIds: [1, 2], blockSize: 2, loraName: null, medium: 'GPU' },
];

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

async function publisher(opts: Partial<Parameters<typeof KvEventPublisher.open>[0]> = {}) {
  const pub = await KvEventPublisher.open({ host: '127.0.0.1', port: 0, topic: 'kv-events', encoding: 'map', replayBufferSteps: 100, ...opts });
  open.push(pub);
  return pub;
}

async function subscriber(pub: KvEventPublisher, topic = 'kv-events'): Promise<zmq.Subscriber> {
  const { sub } = await connectSubscriber(pub.endpoint, topic, () => pub.publish(cleared));
  open.push(sub);
  return sub;
}

describe('KvEventPublisher', () => {
  it('binds an ephemeral port and reports the endpoint', async () => {
    const pub = await publisher();
    expect(pub.endpoint).toMatch(/^tcp:\/\/127\.0\.0\.1:\d+$/);
  });

  it('sends 3 frames [topic, 8-byte BE seq, msgpack batch] with increasing seq', async () => {
    const pub = await publisher();
    const sub = await subscriber(pub);
    const first = pub.seq;
    pub.publish(stored(7n));
    pub.publish(stored(8n));
    const a = await nextAfter(sub, first);
    const b = await receiveWithin(sub);
    expect(a).toHaveLength(3);
    expect(a[0].toString()).toBe('kv-events');
    expect(a[1]).toHaveLength(8);
    expect(seqOf(a[1])).toBe(first);
    expect(seqOf(b[1])).toBe(first + 1);
    const [ts, events, dp] = unpackr.unpack(a[2]) as [number, Record<string, unknown>[], number];
    expect(ts).toBeGreaterThan(1e9);
    expect(dp).toBe(0);
    expect(events[0]).toMatchObject({ type: 'BlockStored', block_hashes: [7], token_ids: [1, 2], block_size: 2 });
  });

  it('publishes nothing for a step without events', async () => {
    const pub = await publisher();
    expect(pub.publish([])).toBe(-1);
    expect(pub.seq).toBe(0);
  });

  it('drops batches on request: a gap on the wire, still in the replay buffer', async () => {
    const pub = await publisher();
    const sub = await subscriber(pub);
    const first = pub.seq;
    pub.dropNext(2);
    pub.publish(stored(1n));
    pub.publish(stored(2n));
    pub.publish(stored(3n));
    const next = await nextAfter(sub, first);
    expect(seqOf(next[1])).toBe(first + 2);
    expect(pub.buffer.since(first).map((b) => b.seq)).toEqual([first, first + 1, first + 2]);
    expect(pub.counters().dropped).toBe(2);
  });

  it('restarts its sequence numbers from 0 and empties the replay buffer', async () => {
    const pub = await publisher();
    pub.publish(stored(1n));
    pub.publish(stored(2n));
    pub.restart();
    expect(pub.buffer.size).toBe(0);
    expect(pub.publish(stored(3n))).toBe(0);
  });

  it('refuses bad options before binding', async () => {
    await expect(KvEventPublisher.open({ host: '127.0.0.1', port: 0, topic: 'x', encoding: 'yaml' as never, replayBufferSteps: 10 })).rejects.toThrow(
      RangeError,
    );
    await expect(KvEventPublisher.open({ host: '127.0.0.1', port: 0, topic: 'x', encoding: 'map', replayBufferSteps: 0 })).rejects.toThrow(/replayBufferSteps/);
    await expect(KvEventPublisher.open({ host: '127.0.0.1', port: 0, topic: 5 as never, encoding: 'map', replayBufferSteps: 1 })).rejects.toThrow(TypeError);
  });

  it('reports a port that is taken as a clear error', async () => {
    const pub = await publisher();
    const port = Number(pub.endpoint.split(':').pop());
    await expect(publisher({ port })).rejects.toThrow(/cannot bind the KV event publisher/);
  });
});

/** The next message whose seq is >= first (probe batches published while connecting come before). */
async function nextAfter(sub: zmq.Subscriber, first: number): Promise<Buffer[]> {
  for (;;) {
    const msg = await receiveWithin(sub);
    if (seqOf(msg[1]) >= first) return msg;
  }
}
