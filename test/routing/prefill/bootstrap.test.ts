import { afterEach, describe, expect, it } from 'vitest';
import { MAX_BOOTSTRAP_ROOM } from '../../../src/engines/bootstrap-room.js';
import { isAbortError } from '../../../src/engines/errors.js';
import { type Fleet, type FleetOptions, collect, rawField, request, startFleet, until, zeroTotals } from '../harness.js';

let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

async function start(o: Omit<FleetOptions, 'kind'>): Promise<Fleet> {
  fleet = await startFleet({ kind: 'sglang', ...o });
  return fleet;
}

const body = (extra: Record<string, unknown> = {}) => ({
  model: 'fake',
  prompt: Array.from({ length: 16 }, (_, i) => i),
  max_tokens: 3,
  stream: true,
  stream_options: { include_usage: true },
  ...extra,
});

async function drained(f: Fleet) {
  await f.router.idle();
  await until(() => zeroTotals(f.prefillCore) && zeroTotals(f.decodeCore), 'bookings to return to zero');
}

describe('SGLang bootstrap handoff', () => {
  it('runs both legs concurrently with the same bootstrap address and room', async () => {
    // The fake prefill answers only once the decode leg has arrived, and the fake decode only
    // once the prefill has: a router that sent the legs one after the other would deadlock.
    const f = await start({ prefill: 1, decode: 1, prefillBehaviour: { waitForDecode: true, cachedTokens: 8 } });
    const res = await f.router.handle(request({ body: body(), requestId: 'sg-1' }));
    expect(res.headers).toMatchObject({ 'x-kvroute-mode': 'disaggregated', 'x-kvroute-prefill-worker': '100', 'x-kvroute-decode-worker': '200' });
    const events = await collect(res.stream);
    const [pre] = f.prefillEngines[0].received;
    const [dec] = f.decodeEngines[0].received;
    const room = rawField(dec.text, 'bootstrap_room');
    expect(room).toBeDefined();
    expect(rawField(pre.text, 'bootstrap_room')).toBe(room);
    expect(BigInt(room!) <= MAX_BOOTSTRAP_ROOM).toBe(true);
    expect(dec.body).toMatchObject({ bootstrap_host: '127.0.0.1', bootstrap_port: f.prefillEngines[0].bootstrapPort, stream: true, max_tokens: 3 });
    expect(pre.body).toMatchObject({ bootstrap_host: '127.0.0.1', bootstrap_port: f.prefillEngines[0].bootstrapPort, stream: false });
    expect(pre.body).not.toHaveProperty('stream_options');
    // Both legs were in flight together: the prefill answered only after the decode arrived
    // (waitForDecode), and the decode waited for the prefill, so neither could go first alone.
    expect(f.world.rooms.get(room!)).toMatchObject({ prefillSeen: true, decodeSeen: true });
    const usage = events.map((e) => (e.json as { usage?: { prompt_tokens_details?: unknown } })?.usage).find(Boolean);
    expect(usage?.prompt_tokens_details).toEqual({ cached_tokens: 8 });
    expect(pre.headers['x-request-id']).toBe('sg-1');
    expect(dec.headers['x-request-id']).toBe('sg-1');
    await drained(f);
  });

  it('encodes the prefill dp rank in the room, exactly, even at the largest random value', async () => {
    const f = await start({ prefill: 1, decode: 1, prefillDpSize: 49, router: { randomRoom: () => MAX_BOOTSTRAP_ROOM } });
    for (const rank of [0, 48, 17]) {
      const res = await f.router.handle(request({ body: body({ stream: false }), hints: { prefillDpRank: rank } }));
      expect(res.headers['x-kvroute-prefill-dp-rank']).toBe(String(rank));
    }
    for (const [i, rec] of f.decodeEngines[0].received.entries()) {
      const room = BigInt(rawField(rec.text, 'bootstrap_room')!);
      expect(room % 49n).toBe(BigInt([0, 48, 17][i]));
      expect(room <= MAX_BOOTSTRAP_ROOM).toBe(true);
    }
    await drained(f);
  });

  it('gives a batched prompt one room per item', async () => {
    const f = await start({ prefill: 1, decode: 1 });
    const res = await f.router.handle(request({ body: { model: 'fake', prompt: [[1, 2], [3, 4], [5]], max_tokens: 1 } }));
    expect(res.body).toBeDefined();
    const rooms = rawField(f.decodeEngines[0].received[0].text, 'bootstrap_room')!;
    expect(rooms).toMatch(/^\[\d+,\d+,\d+\]$/);
    expect(rawField(f.prefillEngines[0].received[0].text, 'bootstrap_room')).toBe(rooms);
    await drained(f);
  });

  it('cancels the prefill leg when the decode leg fails', async () => {
    const f = await start({ prefill: 1, decode: 1, prefillBehaviour: { hang: true }, decodeBehaviour: { failStatus: 500 } });
    await expect(f.router.handle(request({ body: body() }))).rejects.toMatchObject({ status: 500 });
    await until(() => f.prefillEngines[0].aborted.length === 1, 'the prefill leg to be cancelled');
    await drained(f);
  });

  it('cancels the decode leg when the prefill leg fails, then falls back (or fails when not allowed)', async () => {
    const f = await start({ prefill: 1, decode: 1, prefillBehaviour: { failStatus: 503, failCount: 1 } });
    const res = await f.router.handle(request({ body: body() }));
    expect(res.headers['x-kvroute-mode']).toBe('fallback');
    await collect(res.stream);
    // The bootstrap decode leg (waiting for a prefill that failed) was cancelled, then the
    // fallback went to the decode pool as a plain request.
    expect(f.decodeEngines[0].aborted).toHaveLength(1);
    expect(f.decodeEngines[0].received).toHaveLength(2);
    expect(f.decodeEngines[0].received[1].body).not.toHaveProperty('bootstrap_room');
    expect(f.router.stats().fallbacks).toBe(1);
    await drained(f);

    const g = await startFleet({ kind: 'sglang', prefill: 1, decode: 1, prefillBehaviour: { failStatus: 500 }, router: { fallbackToAggregated: false } });
    try {
      await expect(g.router.handle(request({ body: body() }))).rejects.toMatchObject({ status: 500 });
      await until(() => g.decodeEngines[0].aborted.length === 1, 'the decode leg to be cancelled');
      await drained(g);
    } finally {
      await g.close();
    }
  });

  it('a prefill failing after the decode stream was handed out ends that stream with the prefill error', async () => {
    // The prefill lets the decode start, then fails while the decode is streaming to the client.
    const f = await start({ prefill: 1, decode: 1, prefillBehaviour: { failAfterHandoff: true, failDelayMs: 150 }, decodeBehaviour: { tokenDelayMs: 20 } });
    const res = await f.router.handle(request({ body: body({ max_tokens: 50 }) }));
    await expect(collect(res.stream)).rejects.toMatchObject({ status: 500 });
    await until(() => f.decodeEngines[0].aborted.length === 1, 'the decode leg to be cancelled');
    await drained(f);
  });

  it('a client that leaves cancels both legs', async () => {
    const f = await start({ prefill: 1, decode: 1, decodeBehaviour: { tokenDelayMs: 50 } });
    const ac = new AbortController();
    const res = await f.router.handle(request({ body: body({ max_tokens: 100 }), signal: ac.signal }));
    const it = res.stream![Symbol.asyncIterator]();
    await it.next();
    ac.abort();
    await expect(it.next()).rejects.toSatisfy(isAbortError);
    await until(() => f.decodeEngines[0].aborted.length === 1, 'the decode leg to close');
    await drained(f);
  });

  it('an SGLang prefill worker without a bootstrap address is not used', async () => {
    const f = await start({ prefill: 1, decode: 1 });
    f.prefillPool.remove(100);
    f.prefillPool.add({ id: 100, role: 'prefill', kind: 'sglang', baseUrl: f.prefillEngines[0].url, dpSize: 1 });
    const res = await f.router.handle(request({ body: body({ stream: false }) }));
    expect(res.headers['x-kvroute-mode']).toBe('fallback');
    expect(f.prefillEngines[0].received).toHaveLength(0);
    await drained(f);
  });
});
