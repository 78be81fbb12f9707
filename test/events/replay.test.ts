import * as zmq from 'zeromq';
import { afterEach, describe, expect, it } from 'vitest';
import { ReplayError, replayBatches, type ReplayedBatch } from '../../src/events/replay.js';
import { seqFrame } from './helpers.js';

const EMPTY = Buffer.alloc(0);
const END = Buffer.from('ffffffffffffffff', 'hex');

let routers: zmq.Router[] = [];
afterEach(() => {
  for (const r of routers) r.close();
  routers = [];
});

/** A ROUTER answering each request with `answer(startSeq)` (frames after the identity). */
async function replayServer(answer: (startSeq: bigint) => Buffer[][]): Promise<{ endpoint: string; requests: Buffer[][] }> {
  const router = new zmq.Router({ linger: 0 });
  routers.push(router);
  await router.bind('tcp://127.0.0.1:*');
  const requests: Buffer[][] = [];
  void (async () => {
    for (;;) {
      let frames: Buffer[];
      try {
        frames = await router.receive();
      } catch {
        return;
      }
      requests.push(frames.slice(1));
      try {
        for (const reply of answer(frames[2].readBigUInt64BE(0))) await router.send([frames[0], ...reply]);
      } catch {
        return;
      }
    }
  })();
  return { endpoint: router.lastEndpoint as string, requests };
}

async function collect(endpoint: string, start: bigint, timeoutMs = 10_000, signal?: AbortSignal): Promise<ReplayedBatch[]> {
  const out: ReplayedBatch[] = [];
  for await (const b of replayBatches(endpoint, start, { timeoutMs, signal })) out.push(b);
  return out;
}

const payload = (n: number) => Buffer.from([0x93, 0x01, 0x90, n]);

describe('replayBatches', () => {
  it('sends ["", start_seq BE] and reads [seq, payload] replies (older vLLM) until the end marker', async () => {
    const server = await replayServer((start) => [
      [EMPTY, seqFrame(start), payload(1)],
      [EMPTY, seqFrame(start + 1n), payload(2)],
      [EMPTY, END, EMPTY],
    ]);
    const got = await collect(server.endpoint, 2n ** 63n + 5n);
    expect(server.requests).toEqual([[EMPTY, seqFrame(2n ** 63n + 5n)]]);
    expect(got).toEqual([
      { seq: 2n ** 63n + 5n, payload: payload(1) },
      { seq: 2n ** 63n + 6n, payload: payload(2) },
    ]);
  });

  it('reads [topic, seq, payload] replies (newer vLLM)', async () => {
    const server = await replayServer((start) => [
      [EMPTY, Buffer.from('kv-events'), seqFrame(start), payload(3)],
      [EMPTY, Buffer.from('kv-events'), END, EMPTY],
    ]);
    expect(await collect(server.endpoint, 9n)).toEqual([{ seq: 9n, payload: payload(3) }]);
  });

  it('yields nothing when the engine has nothing from start_seq on', async () => {
    const server = await replayServer(() => [[EMPTY, END, EMPTY]]);
    expect(await collect(server.endpoint, 0n)).toEqual([]);
  });

  it('fails with a ReplayError when no answer comes in time', async () => {
    const server = await replayServer(() => []);
    await expect(collect(server.endpoint, 0n, 200)).rejects.toThrow(ReplayError);
    await expect(collect(server.endpoint, 0n, 200)).rejects.toThrow(/timed out/);
  });

  it('fails with a ReplayError on a malformed reply', async () => {
    const server = await replayServer(() => [[EMPTY, Buffer.from('xyz'), payload(1)]]);
    await expect(collect(server.endpoint, 0n)).rejects.toThrow(/bad reply/);
  });

  it('fails when the reply goes on without end', async () => {
    const server = await replayServer((start) => [0n, 1n, 2n, 3n].map((i) => [EMPTY, seqFrame(start + i), payload(0)]));
    const out: ReplayedBatch[] = [];
    const run = (async () => {
      for await (const b of replayBatches(server.endpoint, 0n, { timeoutMs: 10_000, maxBatches: 2 })) out.push(b);
    })();
    await expect(run).rejects.toThrow(/exceeds 2 batches/);
    expect(out).toHaveLength(2);
  });

  it('can be aborted while it waits', async () => {
    const server = await replayServer(() => []);
    const abort = new AbortController();
    const run = collect(server.endpoint, 0n, 60_000, abort.signal);
    setTimeout(() => abort.abort(), 50);
    await expect(run).rejects.toThrow(/aborted/);
    await expect(collect(server.endpoint, 0n, 60_000, abort.signal)).rejects.toThrow(/aborted/);
  });

  it('refuses an endpoint ZeroMQ cannot parse', async () => {
    await expect(collect('nonsense', 0n)).rejects.toThrow(ReplayError);
  });
});
